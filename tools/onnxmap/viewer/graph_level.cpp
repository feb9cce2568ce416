// The boxes of a level and what their ids name (graph_level.hpp); repeats in graph_repeats.cpp.

#include "graph_level.hpp"

#include <algorithm>

#include "graph_repeats.hpp"
#include "stats_jobs.hpp"

namespace onnxmap::cli::viewer {

namespace {

constexpr int kMaxDepth = 256;  // unfolds on the way to a node: names nest less deep than this

std::shared_ptr<const UnitList> units_or_404(const Folding& folding, const std::string& prefix) {
  std::shared_ptr<const UnitList> list = folding.units(prefix);
  if (list->units.empty() && !prefix.empty()) {
    throw ApiError{404, "no node under '" + prefix + "'"};
  }
  return list;
}

// An item's names, node count and op counts, from its units.
void describe(const FoldGraph& graph, const Level& level, Item& item) {
  const auto& units = level.units();
  item.first = units[item.begin].name;
  item.last = units[item.kind == ItemKind::repeat ? item.end - item.period : item.end - 1].name;
  for (std::size_t u = item.begin; u < item.end; ++u) {
    const Unit& unit = units[u];
    item.nodes += unit.nodes;
    if (unit.node) count_op(item.ops, graph.op(*unit.node), 1);
    for (const auto& [op, count] : unit.ops) count_op(item.ops, op, count);
  }
  graph.order_summary(item.ops);
}

void name_item(const Level& level, Item& item) {
  const std::string& prefix = level.prefix();
  const Unit& unit = level.units()[item.begin];
  item.title = item.kind == ItemKind::range ? item.first + " … " + item.last : unit.name;
  switch (item.kind) {
    case ItemKind::node: item.id = BoxId::of_node(*unit.node); break;
    case ItemKind::group: item.id = BoxId::group(unit.prefix); break;
    case ItemKind::repeat:
      item.id = BoxId::repeat(prefix, item.begin, item.period, item.count);
      break;
    case ItemKind::range: item.id = BoxId::range(prefix, item.begin, item.end); break;
  }
}

// A group whose level is a single run of repeated blocks covering it: that run, named in the
// group's units (so that one click shows a block, not a box with the run in it).
void present_group(const Folding& folding, Item& item) {
  Level inner;
  inner.list = folding.units(item.id.prefix);
  inner.end = inner.units().size();
  const FoldGraph& graph = folding.graph();
  const std::vector<Item> inside =
      fold_repeats(inner, unit_edges(graph, *inner.list, inner.begin, inner.end));
  if (inside.size() != 1 || inside.front().kind != ItemKind::repeat) return;
  Item run = inside.front();
  describe(graph, inner, run);
  run.id = BoxId::repeat(inner.prefix(), run.begin, run.period, run.count);
  // The group's title, and the prefix its level passed through to (only_group).
  run.title = item.title + inner.prefix().substr(item.id.prefix.size());
  run.begin = item.begin;
  run.end = item.end;
  item = std::move(run);
}

// The unit of [begin, end) of `list` that holds drawn node `id`; `end` where none does.
std::size_t unit_holding(const FoldGraph& graph, const UnitList& list, std::size_t begin,
                         std::size_t end, std::uint32_t id) {
  const std::string_view path = graph.path(id);
  for (std::size_t u = begin; u < end; ++u) {
    const Unit& unit = list.units[u];
    if (unit.node ? *unit.node == id : path.starts_with(unit.prefix)) return u;
  }
  return end;
}

}  // namespace

std::shared_ptr<const UnitList> Folding::units(const std::string& prefix) const {
  return cache_.get<UnitList>(
      BoxId::group(prefix), [&] { return units_at(graph_, prefix); },
      [](const UnitList& list) { return memo_bytes(list); });
}

std::shared_ptr<const std::vector<Item>> Folding::items(const Level& level) const {
  const auto make = [&] {
    const UnitEdges edges = unit_edges(graph_, *level.list, level.begin, level.end);
    std::vector<Item> items =
        cut_into_ranges(level, edges, gather_single_runs(fold_repeats(level, edges)));
    for (Item& item : items) {
      describe(graph_, level, item);
      name_item(level, item);
      if (item.kind == ItemKind::group) present_group(*this, item);
    }
    return items;
  };
  return cache_.get<std::vector<Item>>(BoxId::range(level.prefix(), level.begin, level.end), make,
                                       [](const auto& items) { return memo_bytes(items); });
}

std::size_t memo_bytes(const std::vector<Item>& items) {
  std::size_t bytes = items.capacity() * sizeof(Item);
  for (const Item& item : items) {
    bytes += item.id.prefix.capacity() + item.title.capacity() + item.first.capacity() +
             item.last.capacity() + item.ops.capacity() * sizeof(item.ops[0]);
  }
  return bytes;
}

BoxId box_id_or_400(std::string_view text) {
  std::optional<BoxId> id = BoxId::parse(text);
  if (!id) throw ApiError{400, BoxId::parse_error(text)};
  return std::move(*id);
}

Level resolve(const Folding& folding, const BoxId& id) {
  Level level;
  if (!id.unfolds()) {
    throw ApiError{400, "box id '" + id.to_string() + "': a node does not unfold"};
  }
  level.list = units_or_404(folding, id.prefix);
  const std::size_t units = level.units().size();
  switch (id.kind) {
    case BoxKind::group: level.end = units; return level;
    case BoxKind::range:
      if (id.begin < id.end && id.end <= units) {
        level.begin = id.begin;
        level.end = id.end;
        return level;
      }
      break;
    default:  // a run: its block shown
      if (id.period > 0 && id.count > 0 && id.count <= units && id.period <= units / id.count &&
          id.begin <= units - id.period * id.count && id.shown < id.count) {
        level.begin = id.begin + id.shown * id.period;
        level.end = level.begin + id.period;
        return level;
      }
      break;
  }
  throw ApiError{400, "box id '" + id.to_string() + "' is outside the " + std::to_string(units) +
                          " units of '" + level.prefix() + "'"};
}

Level unfold(const Folding& folding, const BoxId& id) {
  const Level level = resolve(folding, id);
  const Unit* group = only_group(level.units(), level.begin, level.end, level.prefix());
  if (group && id.kind != BoxKind::group) return unfold(folding, BoxId::group(group->prefix));
  return level;
}

std::vector<std::string> block_names(const Folding& folding, const BoxId& id) {
  const Level block = resolve(folding, id);
  if (id.count > kMaxBoxes) return {};
  std::vector<std::string> names;
  for (std::size_t b = 0; b < id.count; ++b) {
    names.push_back(block.units()[id.begin + b * id.period].name);
  }
  return names;
}

std::vector<BoxId> path_to_node(const Folding& folding, const BoxId& root, std::uint32_t id) {
  const FoldGraph& graph = folding.graph();
  id = graph.host(id);
  std::vector<BoxId> path;
  BoxId at = root;
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    const Level level = unfold(folding, at);
    const std::size_t u = unit_holding(graph, *level.list, level.begin, level.end, id);
    if (u == level.end) break;
    const std::shared_ptr<const std::vector<Item>> held = folding.items(level);
    const std::vector<Item>& items = *held;
    const auto item = std::find_if(items.begin(), items.end(),
                                   [u](const Item& i) { return u >= i.begin && u < i.end; });
    at = item->id;
    if (item->kind == ItemKind::repeat) {  // the block that holds the node
      const Level block = resolve(folding, at);
      const std::size_t end = at.begin + at.period * at.count;
      const std::size_t v = unit_holding(graph, *block.list, at.begin, end, id);
      if (v == end) break;
      at.shown = (v - at.begin) / at.period;
    }
    path.push_back(at);
    if (item->kind == ItemKind::node) return path;
  }
  throw ApiError{404,
                 "node " + std::to_string(id) + " is not under box '" + root.to_string() + "'"};
}

}  // namespace onnxmap::cli::viewer
