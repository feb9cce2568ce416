// The graph page's levels and boxes on small graphs (tools/onnxmap/viewer/graph_units.hpp,
// graph_level.hpp, graph_repeats.hpp): convexity, series gathered into ranges, repeated blocks,
// passing through a level of one group, what box ids name; and the box id's one spelling and
// one parse (box_id.hpp), malformed ids included.

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "fold_test_graph.hpp"
#include "viewer/box_id.hpp"
#include "viewer/graph_level.hpp"
#include "viewer/graph_repeats.hpp"
#include "viewer/stats_jobs.hpp"

namespace onnxmap::cli::viewer {
namespace {

// `count` blocks y = x + Mul(Relu(x), w), named SCOPE{b}.relu (.mul, .add): node 3b + k is
// the k-th of block b.
TestGraph& residual_blocks(TestGraph& t, const std::string& scope, int count) {
  t.input("x").initializer("w").output("y");
  std::string in = "x";
  for (int b = 0; b < count; ++b) {
    const std::string at = scope + std::to_string(b) + ".", out = b == count - 1 ? "y" : at + "out";
    t.node({"Relu", at + "relu", {in}, {at + "r"}});
    t.node({"Mul", at + "mul", {at + "r", "w"}, {at + "m"}});
    t.node({"Add", at + "add", {in, at + "m"}, {out}});
    in = out;
  }
  return t;
}

unsigned status_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const ApiError& e) {
    return e.status;
  }
  return 0;
}

TEST(FoldUnits, AGroupThatIsNotConvexIsOpened) {
  TestGraph t;
  t.input("x").output("y");
  t.node({"Relu", "a.x", {"x"}, {"p"}});
  t.node({"Neg", "b.y", {"p"}, {"q"}});  // leaves a. and comes back
  t.node({"Add", "a.z", {"q"}, {"y"}});
  const UnitList list = units_at(t.finish(), "");
  ASSERT_EQ(list.units.size(), 3U);
  for (std::uint32_t u = 0; u < 3; ++u) EXPECT_EQ(list.units[u].node, u);  // graph order
  EXPECT_EQ(list.units[0].name, "x");  // a node's unit is called by its label
}

TEST(FoldUnits, AConvexGroupIsOneUnit) {
  TestGraph t;
  t.input("x").output("y");
  t.node({"Relu", "a.x", {"x"}, {"p"}});
  t.node({"Add", "a.z", {"p"}, {"q"}});
  t.node({"Neg", "b.y", {"q"}, {"y"}});
  const UnitList list = units_at(t.finish(), "");
  ASSERT_EQ(list.units.size(), 2U);
  EXPECT_EQ(list.units[0].prefix, "a.");
  EXPECT_EQ(list.units[0].nodes, 2U);
  EXPECT_FALSE(list.units[0].node);
}

TEST(FoldUnits, ALevelOfOneGroupIsPassedThrough) {
  TestGraph t;
  const FoldGraph& g = residual_blocks(t, "model.layers.", 4).finish();
  const UnitList list = units_at(g, "");
  EXPECT_EQ(list.prefix, "model.layers.");  // past model. and model.layers.
  ASSERT_EQ(list.units.size(), 4U);
  EXPECT_EQ(list.units[2].prefix, "model.layers.2.");
  EXPECT_EQ(only_group(list.units, 2, 3, list.prefix), &list.units[2]);
  EXPECT_EQ(only_group(list.units, 2, 4, list.prefix), nullptr);
  // A range or a block of one group unfolds to that group's level, as a prefix does.
  const Folding folding(g);
  const Level range = unfold(folding, BoxId::range("model.layers.", 1, 2));
  EXPECT_EQ(range.prefix(), "model.layers.1.");
  EXPECT_EQ(range.end - range.begin, 3U);
  const Level block = unfold(folding, BoxId::repeat("model.layers.", 0, 1, 4, 2));
  EXPECT_EQ(block.prefix(), "model.layers.2.");
  const Level as_named = resolve(folding, BoxId::range("model.layers.", 1, 2));
  EXPECT_EQ(as_named.prefix(), "model.layers.");
  EXPECT_EQ(as_named.begin, 1U);
}

TEST(FoldItems, RepeatedBlocksAreOneBox) {
  TestGraph t;
  const Folding folding(residual_blocks(t, "model.layers.", 4).finish());
  const std::vector<Item>& items = *folding.items(unfold(folding, BoxId()));
  ASSERT_EQ(items.size(), 1U);
  EXPECT_EQ(items[0].kind, ItemKind::repeat);
  EXPECT_EQ(items[0].count, 4U);
  EXPECT_EQ(items[0].period, 1U);
  EXPECT_EQ(items[0].nodes, 12U);
  EXPECT_EQ(items[0].id, BoxId::repeat("model.layers.", 0, 1, 4));
  EXPECT_EQ(block_names(folding, items[0].id), (std::vector<std::string>{"0.", "1.", "2.", "3."}));
  EXPECT_EQ(folding.items(unfold(folding, BoxId())), folding.items(unfold(folding, BoxId())));
}

TEST(FoldItems, AGroupHoldingOneRunIsThatRun) {
  TestGraph t;
  residual_blocks(t, "enc.layers.", 3);
  t.output("h").node({"Neg", "head.neg", {"y"}, {"h"}});
  const Folding folding(t.finish());
  const std::vector<Item>& items = *folding.items(unfold(folding, BoxId()));
  ASSERT_EQ(items.size(), 2U);
  EXPECT_EQ(items[0].kind, ItemKind::repeat);
  EXPECT_EQ(items[0].id, BoxId::repeat("enc.layers.", 0, 1, 3));
  EXPECT_EQ(items[0].title, "enc.layers.");  // the group's, and what its level passed through
  EXPECT_EQ(items[1].id, BoxId::of_node(9));
}

TEST(FoldItems, ALongSeriesIsCutIntoRanges) {
  TestGraph t;
  t.input("x").output("v400");
  for (int i = 0; i < 400; ++i) {  // no two alike: nothing repeats
    t.node({"Op" + std::to_string(i),
            "",
            {i == 0 ? "x" : "v" + std::to_string(i)},
            {"v" + std::to_string(i + 1)}});
  }
  const Folding folding(t.finish());
  const std::vector<Item>& items = *folding.items(unfold(folding, BoxId()));
  ASSERT_EQ(items.size(), 3U);
  std::size_t next = 0;
  for (const Item& item : items) {
    EXPECT_EQ(item.kind, ItemKind::range);
    EXPECT_EQ(item.begin, next);
    EXPECT_EQ(item.id, BoxId::range("", item.begin, item.end));
    next = item.end;
  }
  EXPECT_EQ(next, 400U);
}

TEST(FoldItems, RunsOfSingleNodesBesideGroupsAreGathered) {
  std::vector<Item> items;
  const auto add = [&](ItemKind kind) {
    Item item;
    item.kind = kind;
    item.begin = items.size();
    item.end = item.begin + 1;
    items.push_back(item);
  };
  for (std::size_t i = 0; i < kSinglesShown + 2; ++i) add(ItemKind::node);
  add(ItemKind::group);
  for (std::size_t i = 0; i + 1 < kSingleRun; ++i) add(ItemKind::node);
  const std::vector<Item> gathered = gather_single_runs(items);
  ASSERT_EQ(gathered.size(), 2 + kSingleRun - 1);
  EXPECT_EQ(gathered[0].kind, ItemKind::range);
  EXPECT_EQ(gathered[0].end, kSinglesShown + 2);
  EXPECT_EQ(gathered[1].kind, ItemKind::group);
  EXPECT_EQ(gathered.back().kind, ItemKind::node);  // a run too short stays
  items.resize(kSinglesShown + 2);                  // single nodes alone: kept as they are
  EXPECT_EQ(gather_single_runs(items).size(), items.size());
}

TEST(FoldIds, ResolveRefusesWhatNamesNoBox) {
  TestGraph t;
  const Folding folding(residual_blocks(t, "model.layers.", 4).finish());
  EXPECT_EQ(status_of([&] { (void)resolve(folding, BoxId::of_node(0)); }), 400U);
  EXPECT_EQ(status_of([&] { (void)resolve(folding, BoxId::range("model.layers.", 0, 5)); }), 400U);
  EXPECT_EQ(status_of([&] { (void)resolve(folding, BoxId::range("model.layers.", 2, 2)); }), 400U);
  EXPECT_EQ(status_of([&] { (void)resolve(folding, BoxId::repeat("model.layers.", 0, 1, 4, 4)); }),
            400U);
  EXPECT_EQ(status_of([&] { (void)resolve(folding, BoxId::repeat("model.layers.", 1, 1, 4)); }),
            400U);
  EXPECT_EQ(status_of([&] { (void)resolve(folding, BoxId::repeat("model.layers.", 0, 0, 4)); }),
            400U);
  EXPECT_EQ(status_of([&] { (void)resolve(folding, BoxId::group("nope.")); }), 404U);
  EXPECT_EQ(status_of([&] { (void)box_id_or_400("k:0:1"); }), 400U);
}

TEST(FoldIds, PathToANodeUnfoldsItsBlock) {
  TestGraph t;
  const Folding folding(residual_blocks(t, "model.layers.", 4).finish());
  const std::vector<BoxId> path = path_to_node(folding, BoxId(), 7);  // block 2's mul
  EXPECT_EQ(path,
            (std::vector<BoxId>{BoxId::repeat("model.layers.", 0, 1, 4, 2), BoxId::of_node(7)}));
  EXPECT_EQ(status_of([&] { (void)path_to_node(folding, BoxId::group("model.layers.0."), 7); }),
            404U);
}

TEST(BoxIds, EachSpellingParsesBackToItsId) {
  const std::vector<BoxId> ids = {
      BoxId(),
      BoxId::group("model.layers.0."),
      BoxId::group("a:b:c/"),  // a prefix may hold ':'
      BoxId::of_node(0),
      BoxId::of_node(UINT32_MAX),
      BoxId::repeat("model.layers.", 3, 2, 5, 4),
      BoxId::repeat("", 0, 1, 2),
      BoxId::range("x:1:", 0, 7),
  };
  for (const BoxId& id : ids) {
    const std::string text = id.to_string();
    const std::optional<BoxId> parsed = BoxId::parse(text);
    ASSERT_TRUE(parsed) << text;
    EXPECT_EQ(*parsed, id) << text;
    EXPECT_EQ(parsed->to_string(), text);
    EXPECT_EQ(BoxIdHash{}(*parsed), BoxIdHash{}(id));
  }
  EXPECT_EQ(BoxId::repeat("p.", 3, 2, 5, 4).to_string(), "r:3:2:5:4:p.");
  EXPECT_EQ(BoxId::range("p.", 1, 9).to_string(), "k:1:9:p.");
  EXPECT_EQ(BoxId::of_node(12).to_string(), "n:12");
  EXPECT_EQ(BoxId::repeat("p.", 3, 2, 5, 4).run(), BoxId::repeat("p.", 3, 2, 5, 0));
  EXPECT_FALSE(BoxId::of_node(1).unfolds());
  EXPECT_TRUE(BoxId::range("", 0, 1).unfolds());
}

TEST(BoxIds, MalformedIdsAreRefusedSayingWhy) {
  for (const std::string_view text :
       {"r:",           "r:1:2",      "r:1:2:3:4", "r:0:1:2:0", "r:99999999999999999999999:1:2:0:",
        "r:-1:1:2:0:",  "r:0:1:2:x:", "k:0:1",     "k:0:2",     "k:-1:2:",
        "k:1e3:2:",     "x:1",        "zz",        ":",         "g",
        "G:",           " g:",        "n:",        "n:x",       "n:-1",
        "n:4294967296", "n:1:",       ""}) {
    EXPECT_FALSE(BoxId::parse(text)) << text;
  }
  EXPECT_FALSE(BoxId::parse(std::string_view("\0", 1)));
  EXPECT_TRUE(BoxId::parse_error("k:0:1").starts_with("malformed box id 'k:0:1' (g:PREFIX"));
}

}  // namespace
}  // namespace onnxmap::cli::viewer
