// The indexing pass steps over a message as soon as it is added when nothing in it needs the
// scan (wire::Cursor::step_plain): most nodes of a graph. That early step must
// refuse whatever the scan would act on or report, and a graph indexed with it must read as one
// indexed without it.

#include <gtest/gtest.h>

#include "index/field_roles.hpp"
#include "index/model_index.hpp"
#include "index/walker.hpp"
#include "model_builder.hpp"
#include "onnxmap/onnxmap.hpp"
#include "view/view_access.hpp"
#include "wire/cursor.hpp"

namespace onnxmap::test {
namespace {

using GP = schema::GraphProto;
using MP = schema::ModelProto;
using NP = schema::NodeProto;
using AP = schema::AttributeProto;

// The node fields the pass acts on: attribute (indexed) and the leaf messages.
std::uint64_t node_mask() {
  return detail::FieldActions::get().message_fields(schema::MessageKind::NodeProto, false);
}

// How many times the scan's walk calls back for `bytes`; -1 when it throws.
int callbacks(const std::vector<std::byte>& bytes) {
  int calls = 0;
  try {
    wire::Cursor cursor(bytes);
    while (cursor.next_wanted(detail::WantedFields{node_mask(), false})) ++calls;
  } catch (const Error&) {
    return -1;
  }
  return calls;
}

bool steps(const std::vector<std::byte>& bytes) {
  wire::Cursor cursor(bytes);
  return cursor.step_plain(node_mask());
}

std::vector<std::byte> raw_bytes(std::initializer_list<std::uint8_t> values) {
  std::vector<std::byte> out;
  for (const std::uint8_t v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

TEST(PlainStep, StepsOnlyOverWhatTheScanWouldIgnore) {
  const auto plain = message([](wire::Writer& n) {
    n.field_string(NP::kInput, "x");
    n.field_string(NP::kInput, "w");
    n.field_string(NP::kOutput, "y");
    n.field_string(NP::kName, std::string(200, 'n'));  // a two-byte length
    n.field_string(NP::kOpType, "MatMul");
    n.field_string(NP::kDomain, "");
    n.field_varint(1000, 7);  // an unknown varint field: stepped over by both
  });
  EXPECT_EQ(callbacks(plain), 0);
  EXPECT_TRUE(steps(plain));
  EXPECT_TRUE(steps({}));

  // Each of these needs the scan: it calls back, or throws, or its form is not the common one.
  const std::vector<std::pair<std::string, std::vector<std::byte>>> refused = {
      {"attribute", message([](wire::Writer& n) {
         n.field_string(NP::kOpType, "Transpose");
         sub(n, NP::kAttribute, [](wire::Writer& a) { a.field_string(AP::kName, "perm"); });
       })},
      {"metadata_props", message([](wire::Writer& n) {
         sub(n, NP::kMetadataProps, [](wire::Writer& e) { e.field_string(1, "k"); });
       })},
      {"unknown LEN field past 63",
       message([](wire::Writer& n) { n.field_string(64, "payload"); })},
      {"string of 16384 bytes (a three-byte length)",
       message([](wire::Writer& n) { n.field_string(NP::kName, std::string(16384, 'n')); })},
      {"fixed64 field", message([](wire::Writer& n) { n.field_fixed64(20, 1); })},
      {"length past the end", raw_bytes({0x1A, 0x05, 'a'})},
      {"cut tag", raw_bytes({0x80})},
      {"wire type 7", raw_bytes({0x0F, 0x00})},
      {"field number 0", raw_bytes({0x02, 0x00})},
      {"cut varint", raw_bytes({0x08, 0x80})},
  };
  for (const auto& [what, bytes] : refused) {
    EXPECT_FALSE(steps(bytes)) << what;
  }
  // The walk the refusals leave it to: it calls back for an attribute, throws on bad bytes, and
  // steps over a long string itself (refusing an uncommon form only costs a second look).
  EXPECT_EQ(callbacks(refused[0].second), 1);
  EXPECT_EQ(callbacks(refused[5].second), -1);
  EXPECT_EQ(callbacks(refused[3].second), 0);
}

// Node i has an attribute named "a<i>" when has_attribute(i); every node is named "n<i>".
std::vector<std::byte> graph_of_nodes(int count, const std::function<bool(int)>& has_attribute,
                                      int bad_node = -1) {
  return message([&](wire::Writer& m) {
    sub(m, MP::kGraph, [&](wire::Writer& g) {
      for (int i = 0; i < count; ++i) {
        sub(g, GP::kNode, [&](wire::Writer& n) {
          n.field_string(NP::kInput, "x" + std::to_string(i));
          n.field_string(NP::kName, "n" + std::to_string(i));
          if (has_attribute(i)) {
            sub(n, NP::kAttribute, [&](wire::Writer& a) {
              a.field_string(AP::kName, "a" + std::to_string(i));
              a.field_int64(AP::kI, i);
            });
          }
          if (i == bad_node) n.raw(raw_bytes({0x0F, 0x00}));  // wire type 7
        });
      }
    });
  });
}

void expect_nodes(const Model& model, int count, const std::function<bool(int)>& has_attribute) {
  int i = 0;
  for (const Node node : model.graph()->nodes()) {
    SCOPED_TRACE("node " + std::to_string(i));
    EXPECT_EQ(node.name(), "n" + std::to_string(i));
    const bool expected = has_attribute(i);
    ASSERT_EQ(node.attributes().size(), expected ? 1U : 0U);
    if (expected) {
      const auto attribute = node.attribute("a" + std::to_string(i));
      ASSERT_TRUE(attribute.has_value());
      EXPECT_EQ(attribute->i(), i);
    }
    ++i;
  }
  EXPECT_EQ(i, count);
  // Every record, stepped early or scanned, sits in its parent's children.
  const detail::ModelIndex& index = *detail::ViewAccess::index(*model.graph());
  for (std::uint32_t id = 1; id < index.messages.size(); ++id) {
    const auto [first, last] = index.children(index.parent(id), index.field_number(id));
    EXPECT_GE(id, first);
    EXPECT_LT(id, last);
    EXPECT_EQ(index.messages[id].plain, 0U) << "a pass-time mark left in the index";
  }
}

TEST(PlainStep, MixedGraphsReadTheSame) {
  // Plain nodes, then a long run with attributes (the early step stops being tried), then plain
  // again; and nodes alternating; and attributes only at the start.
  const std::vector<std::pair<std::string, std::function<bool(int)>>> layouts = {
      {"run of attributes", [](int i) { return i >= 10 && i < 60; }},
      {"alternating", [](int i) { return i % 2 == 1; }},
      {"attributes first", [](int i) { return i < 5; }},
      {"no attributes", [](int) { return false; }},
  };
  for (const auto& [what, has_attribute] : layouts) {
    SCOPED_TRACE(what);
    const Model model = Model::from_bytes(graph_of_nodes(100, has_attribute));
    expect_nodes(model, 100, has_attribute);
  }
}

TEST(PlainStep, ABadNodeAfterPlainOnesIsReportedWithItsPath) {
  for (const int bad : {0, 30, 99}) {
    try {
      (void)Model::from_bytes(graph_of_nodes(
          100, [](int) { return false; }, bad));
      ADD_FAILURE() << "opened with a bad node " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::bad_wire_type) << e.what();
      EXPECT_EQ(e.field_path(), "graph.node[" + std::to_string(bad) + "]") << e.what();
    }
  }
}

}  // namespace
}  // namespace onnxmap::test
