// The boxes of a level and their ids (graph_level.hpp); repeats in graph_repeats.cpp.

#include "graph_level.hpp"

#include <algorithm>
#include <charconv>
#include <span>

#include "graph_repeats.hpp"
#include "stats_jobs.hpp"

namespace onnxmap::cli::viewer {

namespace {

constexpr int kMaxDepth = 256;  // unfolds on the way to a node: names nest less deep than this

// The units of `prefix`, computed once (a 300,000-node level takes a few hundred ms).
std::shared_ptr<const UnitList> cached_units(const NodeGraph& graph, const std::string& prefix) {
  return graph.memo<UnitList>("u:" + prefix, [&] { return units_at(graph, prefix); });
}

std::shared_ptr<const UnitList> units_or_404(const NodeGraph& graph, const std::string& prefix) {
  std::shared_ptr<const UnitList> list = cached_units(graph, prefix);
  if (list->units.empty() && !prefix.empty()) {
    throw ApiError{404, "no node under '" + prefix + "'"};
  }
  return list;
}

std::string repeat_id(const std::string& prefix, std::size_t begin, std::size_t period,
                      std::size_t count, std::size_t shown) {
  return "r:" + std::to_string(begin) + ":" + std::to_string(period) + ":" + std::to_string(count) +
         ":" + std::to_string(shown) + ":" + prefix;
}

void add_ops(std::vector<std::pair<std::uint32_t, std::uint32_t>>& into, const NodeGraph& graph,
             const Unit& unit) {
  const std::pair<std::uint32_t, std::uint32_t> one{unit.node ? graph.op(*unit.node) : 0, 1};
  for (const auto& [op, count] : unit.node ? std::span(&one, 1) : std::span(unit.ops)) {
    const auto found =
        std::find_if(into.begin(), into.end(), [op = op](const auto& e) { return e.first == op; });
    if (found == into.end()) {
      into.emplace_back(op, count);
    } else {
      found->second += count;
    }
  }
}

// An item's names, node count and op counts, from its units.
void describe(const NodeGraph& graph, const Level& level, Item& item) {
  const auto& units = level.units();
  item.first = units[item.begin].name;
  item.last = units[item.kind == ItemKind::repeat ? item.end - item.period : item.end - 1].name;
  for (std::size_t u = item.begin; u < item.end; ++u) {
    item.nodes += units[u].nodes;
    add_ops(item.ops, graph, units[u]);
  }
  graph.order_summary(item.ops);
}

void name_item(const Level& level, Item& item) {
  const std::string& prefix = level.prefix();
  const Unit& unit = level.units()[item.begin];
  item.title = item.kind == ItemKind::range ? item.first + " … " + item.last : unit.name;
  switch (item.kind) {
    case ItemKind::node: item.id = "n:" + std::to_string(*unit.node); break;
    case ItemKind::group: item.id = "g:" + unit.prefix; break;
    case ItemKind::repeat:
      item.id = repeat_id(prefix, item.begin, item.period, item.count, 0);
      break;
    case ItemKind::range:
      item.id = "k:" + std::to_string(item.begin) + ":" + std::to_string(item.end) + ":" + prefix;
      break;
  }
}

// A group whose level is a single run of repeated blocks covering it: that run, named in the
// group's units (so that one click shows a block, not a box with the run in it).
void present_group(const NodeGraph& graph, Item& item) {
  Level inner;
  inner.list = cached_units(graph, item.id.substr(2));
  inner.end = inner.units().size();
  const std::vector<Item> inside =
      fold_repeats(inner, unit_edges(graph, *inner.list, inner.begin, inner.end));
  if (inside.size() != 1 || inside.front().kind != ItemKind::repeat) return;
  Item run = inside.front();
  describe(graph, inner, run);
  run.id = repeat_id(inner.prefix(), run.begin, run.period, run.count, 0);
  run.title = item.title + inner.prefix().substr(item.id.size() - 2);  // past one-group levels
  run.begin = item.begin;
  run.end = item.end;
  item = std::move(run);
}

std::size_t number(std::string_view& rest, const std::string& id) {
  std::size_t value = 0;
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
  if (error != std::errc() || end == rest.data() + rest.size() || *end != ':') {
    throw ApiError{400, "malformed box id '" + id + "'"};
  }
  rest.remove_prefix(static_cast<std::size_t>(end - rest.data()) + 1);
  return value;
}

// The unit of [begin, end) of `list` that holds drawn node `id`; `end` where none does.
std::size_t unit_holding(const NodeGraph& graph, const UnitList& list, std::size_t begin,
                         std::size_t end, std::uint32_t id) {
  const std::string_view path = graph.path(id);
  for (std::size_t u = begin; u < end; ++u) {
    const Unit& unit = list.units[u];
    if (unit.node ? *unit.node == id : path.starts_with(unit.prefix)) return u;
  }
  return end;
}

}  // namespace

std::shared_ptr<const std::vector<Item>> items_of(const NodeGraph& graph, const Level& level) {
  const std::string key =
      "i:" + std::to_string(level.begin) + ":" + std::to_string(level.end) + ":" + level.prefix();
  return graph.memo<std::vector<Item>>(key, [&] {
    const UnitEdges edges = unit_edges(graph, *level.list, level.begin, level.end);
    std::vector<Item> items =
        cut_into_ranges(level, edges, gather_single_runs(fold_repeats(level, edges)));
    for (Item& item : items) {
      describe(graph, level, item);
      name_item(level, item);
      if (item.kind == ItemKind::group) present_group(graph, item);
    }
    return items;
  });
}

Run parse_run(const NodeGraph& graph, const std::string& id) {
  if (!id.starts_with("r:")) throw ApiError{400, "box id '" + id + "' is not a run of blocks"};
  const Level block = parse(graph, id);  // checks the fields
  std::string_view rest = std::string_view(id).substr(2);
  Run run;
  run.list = block.list;
  run.begin = number(rest, id);
  run.period = number(rest, id);
  run.count = number(rest, id);
  run.shown = number(rest, id);
  return run;
}

std::vector<std::string> block_names(const Run& run) {
  if (run.count > kMaxBoxes) return {};
  std::vector<std::string> names;
  for (std::size_t b = 0; b < run.count; ++b) {
    names.push_back(run.list->units[run.begin + b * run.period].name);
  }
  return names;
}

std::size_t memo_bytes(const std::vector<Item>& items) {
  std::size_t bytes = items.capacity() * sizeof(Item);
  for (const Item& item : items) {
    bytes += item.id.capacity() + item.title.capacity() + item.first.capacity() +
             item.last.capacity() + item.ops.capacity() * sizeof(item.ops[0]);
  }
  return bytes;
}

void check_id(const std::string& id) {
  std::string_view rest(id);
  if (rest.starts_with("g:")) return;
  if (rest.starts_with("n:")) {
    std::uint32_t node = 0;
    const auto [end, error] = std::from_chars(rest.data() + 2, rest.data() + rest.size(), node);
    if (error == std::errc() && end == rest.data() + rest.size() && rest.size() > 2) return;
    throw ApiError{400, "malformed box id '" + id + "'"};
  }
  const int fields = rest.starts_with("r:") ? 4 : rest.starts_with("k:") ? 2 : 0;
  if (fields == 0) throw ApiError{400, "box id '" + id + "': expected g:, n:, r: or k:"};
  rest.remove_prefix(2);
  for (int f = 0; f < fields; ++f) (void)number(rest, id);
}

bool unfolds(const std::string& id) {
  return !id.starts_with("n:");
}

Level parse(const NodeGraph& graph, const std::string& id) {
  Level level;
  std::string_view rest(id);
  if (rest.starts_with("g:")) {
    level.list = units_or_404(graph, id.substr(2));
    level.end = level.units().size();
    return level;
  }
  if (!rest.starts_with("r:") && !rest.starts_with("k:")) {
    throw ApiError{400, "box id '" + id + "': expected g:, r: or k: (a node does not unfold)"};
  }
  const bool repeat = rest.starts_with("r:");
  rest.remove_prefix(2);
  const std::size_t begin = number(rest, id);
  const std::size_t second = number(rest, id);
  const std::size_t count = repeat ? number(rest, id) : 1;
  const std::size_t shown = repeat ? number(rest, id) : 0;
  level.list = units_or_404(graph, std::string(rest));
  const std::size_t units = level.units().size();
  const bool fits = repeat ? second > 0 && count > 0 && count <= units && second <= units / count &&
                                 begin <= units - second * count && shown < count
                           : begin < second && second <= units;
  if (!fits) {
    throw ApiError{400, "box id '" + id + "' is outside the " + std::to_string(units) +
                            " units of '" + level.prefix() + "'"};
  }
  level.begin = repeat ? begin + shown * second : begin;
  level.end = repeat ? level.begin + second : second;
  return level;
}

Level unfold(const NodeGraph& graph, const std::string& id) {
  const Level level = parse(graph, id);
  const bool one_group = level.end - level.begin == 1 && !level.units()[level.begin].node;
  if (one_group && !id.starts_with("g:")) {
    return unfold(graph, "g:" + level.units()[level.begin].prefix);
  }
  return level;
}

std::vector<std::string> path_to_node(const NodeGraph& graph, const std::string& root,
                                      std::uint32_t id) {
  id = graph.host(id);
  std::vector<std::string> path;
  std::string at = root;
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    const Level level = unfold(graph, at);
    const std::size_t u = unit_holding(graph, *level.list, level.begin, level.end, id);
    if (u == level.end) break;
    const std::vector<Item>& items = *items_of(graph, level);
    const auto item = std::find_if(items.begin(), items.end(),
                                   [u](const Item& i) { return u >= i.begin && u < i.end; });
    if (item->kind == ItemKind::node) {
      path.push_back(item->id);
      return path;
    }
    at = item->id;
    if (item->kind == ItemKind::repeat) {  // the block that holds the node
      const Level run = parse(graph, item->id);
      const std::size_t end = run.begin + item->period * item->count;
      const std::size_t v = unit_holding(graph, *run.list, run.begin, end, id);
      if (v == end) break;
      at = repeat_id(run.prefix(), run.begin, item->period, item->count,
                     (v - run.begin) / item->period);
    }
    path.push_back(at);
  }
  throw ApiError{404, "node " + std::to_string(id) + " is not under box '" + root + "'"};
}

}  // namespace onnxmap::cli::viewer
