// Repeated blocks and ranges of a level (graph_repeats.hpp).

#include "graph_repeats.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>

namespace onnxmap::cli::viewer {

namespace {

constexpr std::size_t kMaxPeriod = 512;   // units in a block: a transformer layer is far fewer
constexpr std::size_t kMaxRuns = 64;      // runs looked for in one level
constexpr std::size_t kCandidates = 4;    // periodic stretches checked for wiring, best first
constexpr std::uint64_t kMaxSpan = 4000;  // items passed by a level's edges, for dot (below)

struct Stretch {
  std::size_t start = 0, period = 0, count = 0;
  std::size_t span = 0;  // units whose tokens repeat with the period, from start
  [[nodiscard]] std::size_t saved() const { return count < 2 ? 0 : period * (count - 1); }
};

// A level's units relative to its first: their tokens and outgoing edges (those of unit a:
// targets[begin[a] .. begin[a + 1])).
struct Units {
  std::vector<std::uint64_t> tokens;
  std::vector<std::uint32_t> begin, targets;
  std::vector<std::int64_t> crossing;   // crossing[c]: edges from units < c to units >= c
  std::vector<std::string_view> layer;  // each unit's layer number (layer_number())

  [[nodiscard]] std::span<const std::uint32_t> out(std::size_t a) const {
    return {targets.data() + begin[a], begin[a + 1] - begin[a]};
  }

  // The edges inside the block at `base` of `period` units, relative to `base`.
  [[nodiscard]] std::vector<std::pair<std::size_t, std::size_t>> inside(std::size_t base,
                                                                        std::size_t period) const {
    std::vector<std::pair<std::size_t, std::size_t>> edges;
    for (std::size_t a = base; a < base + period; ++a) {
      for (const std::uint32_t b : out(a)) {
        if (b >= base && b < base + period) edges.emplace_back(a - base, b - base);
      }
    }
    return edges;
  }
  // Whether the block at `base` feeds the one after it.
  [[nodiscard]] bool feeds_next(std::size_t base, std::size_t period) const {
    for (std::size_t a = base; a < base + period; ++a) {
      for (const std::uint32_t b : out(a)) {
        if (b >= base + period && b < base + 2 * period) return true;
      }
    }
    return false;
  }
  // How many blocks of `run`, from its first, are wired like the first and feed the next.
  [[nodiscard]] std::size_t wired_alike(const Stretch& run) const {
    const auto first = inside(run.start, run.period);
    std::size_t n = 1;
    while (n < run.count && feeds_next(run.start + (n - 1) * run.period, run.period) &&
           inside(run.start + n * run.period, run.period) == first) {
      ++n;
    }
    return n;
  }
};

// The best stretches of [lo, hi) whose tokens repeat with some period, largest saving first.
// For each period p, each maximal run of positions i with tokens[i] == tokens[i + p] that is at
// least p long: such a run holds one of any p consecutive positions, so probing every p-th
// position finds them all, and a level of 300,000 units costs about 7 probes a unit for the
// 512 periods, not 512 comparisons.
std::array<Stretch, kCandidates> periodic_stretches(const Units& units, std::size_t lo,
                                                    std::size_t hi) {
  std::array<Stretch, kCandidates> best{};
  const auto consider = [&](Stretch run) {
    for (Stretch& slot : best) {
      if (run.saved() > slot.saved()) std::swap(run, slot);
    }
  };
  const std::vector<std::uint64_t>& t = units.tokens;
  const std::size_t max_period = std::min(kMaxPeriod, (hi - lo) / 2);
  for (std::size_t p = 1; p <= max_period; ++p) {
    const std::size_t last = hi - p;  // positions compared: [lo, last)
    for (std::size_t i = lo; i < last;) {
      if (t[i] != t[i + p]) {
        i += p;
        continue;
      }
      std::size_t start = i, end = i + 1;  // the run around i: a mismatch (or lo) before it
      while (start > lo && t[start - 1] == t[start - 1 + p]) --start;
      while (end < last && t[end] == t[end + p]) ++end;
      const std::size_t length = end - start;
      if (length >= p) consider({start, p, (length + p) / p, length + p});
      i = end + 1;  // end is a mismatch (or last)
    }
  }
  return best;
}

// The layer number in a unit's scope: the digits after the last '_' of its last segment
// ("leaky_re_lu_3/" and "tf.math.maximum_3/" -> "3"), "" where there are none ("conv2d/",
// Keras's first layer of a kind) or the unit is named by a node's label ("Conv_12": a node
// counter, not a layer). Keras numbers the layers made together alike (conv2d_3,
// batch_normalization_3, leaky_re_lu_3), and tf2onnx keeps the numbers in scopes.
std::string_view layer_number(std::string_view name) {
  if (name.empty() || (name.back() != '.' && name.back() != '/')) return {};
  name.remove_suffix(1);
  const std::size_t cut = name.find_last_of("./");
  if (cut != std::string_view::npos) name.remove_prefix(cut + 1);
  const std::size_t underscore = name.rfind('_');
  if (underscore == std::string_view::npos || underscore + 1 == name.size()) return {};
  const std::string_view digits = name.substr(underscore + 1);
  return std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })
             ? digits
             : std::string_view{};
}

// `run` started where a block starts: of the starts that keep its count of blocks, the one
// whose cut after the first block the fewest edges cross (between layers, only what one layer
// hands the next). Where several do (a chain: every cut crosses one edge), the names decide if
// they mark layers: a block starts where a layer starts (not at leaky_re_lu_3/ after
// conv2d_3/: the layer number changes), and of those, one that ends with its rarest unit (the
// pooling that closes a stage of convolutions). Else the earliest: the run follows what comes
// before it.
Stretch aligned(const Units& units, Stretch run) {
  std::vector<std::uint64_t> block(
      units.tokens.begin() + static_cast<std::ptrdiff_t>(run.start),
      units.tokens.begin() + static_cast<std::ptrdiff_t>(run.start + run.period));
  std::sort(block.begin(), block.end());
  const auto count = [&](std::uint64_t token) {
    const auto [lo, hi] = std::equal_range(block.begin(), block.end(), token);
    return hi - lo;
  };
  std::ptrdiff_t rarest = static_cast<std::ptrdiff_t>(run.period);
  for (const std::uint64_t token : block) rarest = std::min(rarest, count(token));
  // Smaller is better: crossing, then not starting a layer, then not closing a stage.
  const auto rank = [&](std::size_t s) {
    const bool starts_layer = s > 0 && units.layer[s] != units.layer[s - 1];
    const bool ends_rarest = count(units.tokens[s + run.period - 1]) == rarest;
    return std::tuple(units.crossing[s + run.period], !starts_layer,
                      !(starts_layer && ends_rarest));
  };
  std::size_t best = run.start;
  for (std::size_t s = run.start;
       s + run.period * run.count <= run.start + run.span && s < run.start + run.period; ++s) {
    if (rank(s) < rank(best)) best = s;
  }
  run.span -= best - run.start;
  run.start = best;
  return run;
}

// The run to fold in [lo, hi), if any: one that saves two boxes or more, or one that is the
// whole level (a model's two decoder layers read as "× 2").
std::optional<Stretch> best_run(const Units& units, std::size_t lo, std::size_t hi) {
  const bool level = lo == 0 && hi == units.tokens.size();
  if (hi - lo < (level ? 2 : 3)) return std::nullopt;
  std::optional<Stretch> chosen;
  for (Stretch run : periodic_stretches(units, lo, hi)) {
    if (run.count < 2) continue;
    run = aligned(units, run);
    run.count = units.wired_alike(run);
    const bool whole = level && run.count >= 2 && run.start == 0 && run.period * run.count == hi;
    if ((run.saved() >= 2 || whole) && (!chosen || run.saved() > chosen->saved())) chosen = run;
  }
  return chosen;
}

Item unit_item(const Level& level, std::size_t u) {
  Item item;
  item.kind = level.units()[u].node ? ItemKind::node : ItemKind::group;
  item.begin = u;
  item.end = u + 1;
  return item;
}

// The items a range holds: n (no ranges) when n <= kMaxBoxes and the wiring is not too dense
// for dot; else kMaxBoxes (or a power of it, for at most kMaxBoxes ranges), halved while the
// edges inside ranges span more than kMaxSpan items in all (each item an edge passes makes
// dot a virtual node: a level where each box reads every earlier one takes it minutes).
std::size_t range_size(std::size_t n, const UnitEdges& edges, std::size_t first_unit,
                       const std::vector<std::uint32_t>& item_of) {
  const auto span_inside = [&](std::size_t size) {
    std::uint64_t span = 0;
    for (const auto& [from, to] : edges) {
      const std::uint32_t a = item_of[from - first_unit], b = item_of[to - first_unit];
      if (a / size == b / size) span += a < b ? b - a : a - b;
    }
    return span;
  };
  std::size_t size = n <= kMaxBoxes ? n : kMaxBoxes;
  while ((n + size - 1) / size > kMaxBoxes) size *= kMaxBoxes;
  while (size > 8 && span_inside(size) > kMaxSpan) size /= 2;
  return size;
}

// One range item over the consecutive items `first` .. `last`.
Item range_over(const Item& first, const Item& last) {
  Item range;
  range.kind = ItemKind::range;
  range.begin = first.begin;
  range.end = last.end;
  return range;
}

}  // namespace

std::vector<Item> fold_repeats(const Level& level, const UnitEdges& edges) {
  const std::size_t m = level.end - level.begin;
  Units units;
  units.tokens.reserve(m);
  units.layer.reserve(m);
  for (std::size_t u = level.begin; u < level.end; ++u) {
    units.tokens.push_back(level.units()[u].token);
    units.layer.push_back(layer_number(level.units()[u].name));
  }
  // `edges` are sorted by their source: one pass makes the offsets.
  units.begin.assign(m + 1, 0);
  for (const auto& [from, to] : edges) {
    ++units.begin[from - level.begin + 1];
    units.targets.push_back(static_cast<std::uint32_t>(to - level.begin));
  }
  for (std::size_t a = 0; a < m; ++a) units.begin[a + 1] += units.begin[a];
  units.crossing.assign(m + 1, 0);
  for (const auto& [from, to] : edges) {
    const std::size_t a = std::min(from, to) - level.begin, b = std::max(from, to) - level.begin;
    ++units.crossing[a + 1];
    --units.crossing[b + 1];
  }
  for (std::size_t c = 1; c <= m; ++c) units.crossing[c] += units.crossing[c - 1];
  std::vector<Stretch> runs;
  std::vector<std::pair<std::size_t, std::size_t>> todo{{0, m}};
  while (!todo.empty() && runs.size() < kMaxRuns) {
    const auto [lo, hi] = todo.back();
    todo.pop_back();
    const std::optional<Stretch> run = best_run(units, lo, hi);
    if (!run) continue;
    runs.push_back(*run);
    todo.emplace_back(lo, run->start);
    todo.emplace_back(run->start + run->period * run->count, hi);
  }
  std::sort(runs.begin(), runs.end(),
            [](const Stretch& a, const Stretch& b) { return a.start < b.start; });
  std::vector<Item> items;
  std::size_t u = 0;
  for (const Stretch& run : runs) {
    for (; u < run.start; ++u) items.push_back(unit_item(level, level.begin + u));
    Item item;
    item.kind = ItemKind::repeat;
    item.begin = level.begin + run.start;
    item.period = run.period;
    item.count = run.count;
    item.end = item.begin + run.period * run.count;
    items.push_back(item);
    u = run.start + run.period * run.count;
  }
  for (; u < m; ++u) items.push_back(unit_item(level, level.begin + u));
  return items;
}

std::vector<Item> gather_single_runs(std::vector<Item> items) {
  const auto single = [](const Item& item) { return item.kind == ItemKind::node; };
  const auto singles = static_cast<std::size_t>(std::count_if(items.begin(), items.end(), single));
  if (singles <= kSinglesShown || singles == items.size()) return items;
  std::vector<Item> out;
  for (std::size_t t = 0; t < items.size();) {
    std::size_t end = t;
    while (end < items.size() && single(items[end])) ++end;
    if (end - t >= kSingleRun) {
      out.push_back(range_over(items[t], items[end - 1]));
      t = end;
    } else {
      out.push_back(items[t++]);
    }
  }
  return out;
}

std::vector<Item> cut_into_ranges(const Level& level, const UnitEdges& edges,
                                  std::vector<Item> items) {
  const std::size_t n = items.size();
  if (n <= 1) return items;
  std::vector<std::uint32_t> item_of(level.end - level.begin);
  for (std::size_t t = 0; t < n; ++t) {
    for (std::size_t u = items[t].begin; u < items[t].end; ++u) {
      item_of[u - level.begin] = static_cast<std::uint32_t>(t);
    }
  }
  const std::size_t size = range_size(n, edges, level.begin, item_of);
  if (size >= n) return items;
  const std::size_t ranges = (n + size - 1) / size;
  // crossing[t]: the edges between items <= t and items > t.
  std::vector<std::int64_t> crossing(n + 1, 0);
  for (const auto& [from, to] : edges) {
    const auto [a, b] = std::minmax(item_of[from - level.begin], item_of[to - level.begin]);
    ++crossing[a];
    --crossing[b];
  }
  for (std::size_t t = 1; t <= n; ++t) crossing[t] += crossing[t - 1];
  std::vector<Item> out;
  std::size_t first = 0;
  for (std::size_t r = 1; r <= ranges; ++r) {
    std::size_t cut = n;  // the range ends after item cut - 1
    if (r < ranges) {
      const std::size_t ideal = r * n / ranges;
      const std::size_t slack = std::max<std::size_t>(1, (n / ranges) * 15 / 100);
      const std::size_t lo = std::max(first + 1, ideal > slack ? ideal - slack : 1);
      const std::size_t hi = std::min(n - 1, ideal + slack);
      cut = std::clamp(ideal, lo, std::max(lo, hi));
      for (std::size_t c = lo; c <= hi; ++c) {
        if (crossing[c - 1] < crossing[cut - 1]) cut = c;
      }
    }
    if (cut - first == 1) {
      out.push_back(items[first]);
    } else {
      out.push_back(range_over(items[first], items[cut - 1]));
    }
    first = cut;
  }
  return out;
}

}  // namespace onnxmap::cli::viewer
