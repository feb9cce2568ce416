// The in-process fallback drawing (layered_layout.hpp).

#include "layered_layout.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

namespace onnxmap::cli::viewer {

namespace {

constexpr double kGap = 18;        // between boxes of a row (dot's nodesep, 0.25 in)
constexpr double kRankGap = 29;    // between rows (dot's ranksep, 0.4 in)
constexpr double kMargin = 10;     // between a cluster and what it holds
constexpr double kLabelBand = 22;  // above a cluster's content, for its label

// An item of a container (the drawing, or a cluster): a box, or a cluster held in it.
struct Item {
  bool cluster = false;
  std::size_t index = 0;
  std::size_t first_box = 0;  // the lowest box index it holds: graph order
};

struct Placed {
  double x = 0, y = 0, width = 0, height = 0;  // x, y relative to its container's content
};

struct Layered {
  const LayoutInput& in;
  std::vector<std::vector<Item>> items;  // by container: 0 the drawing, c + 1 cluster c
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> lifted;  // edges, by container
  std::vector<Placed> boxes, clusters;
  std::vector<std::size_t> slot_of_box, slot_of_cluster;  // index in its container's items
  std::vector<int> depth;                                 // of each cluster, 1 at the top

  explicit Layered(const LayoutInput& input) : in(input) {
    const std::size_t n = in.clusters.size();
    items.resize(n + 1);
    lifted.resize(n + 1);
    boxes.resize(in.boxes.size());
    clusters.resize(n);
    slot_of_box.resize(in.boxes.size());
    slot_of_cluster.resize(n);
    depth.resize(n);
    std::vector<std::size_t> first(n, std::numeric_limits<std::size_t>::max());
    for (std::size_t b = in.boxes.size(); b-- > 0;) {
      for (int c = in.boxes[b].cluster; c >= 0; c = in.clusters[c].parent) first[c] = b;
    }
    for (std::size_t c = 0; c < n; ++c) {
      const int parent = in.clusters[c].parent;
      depth[c] = parent < 0 ? 1 : depth[parent] + 1;
      if (first[c] == std::numeric_limits<std::size_t>::max()) continue;  // holds no box
      items[parent + 1].push_back({true, c, first[c]});
    }
    for (std::size_t b = 0; b < in.boxes.size(); ++b) {
      items[in.boxes[b].cluster + 1].push_back({false, b, b});
    }
    for (auto& list : items) {
      std::stable_sort(list.begin(), list.end(),
                       [](const Item& a, const Item& b) { return a.first_box < b.first_box; });
      for (std::size_t s = 0; s < list.size(); ++s) {
        (list[s].cluster ? slot_of_cluster : slot_of_box)[list[s].index] = s;
      }
    }
    for (const LayoutEdge& e : in.edges) lift(e);
  }

  // Records edge `e` in the innermost container that holds both ends, between the two items
  // of it that hold them.
  void lift(const LayoutEdge& e) {
    int a = in.boxes[e.from].cluster, b = in.boxes[e.to].cluster;
    std::size_t slot_a = slot_of_box[e.from], slot_b = slot_of_box[e.to];
    const auto up = [&](int& c, std::size_t& slot) {
      slot = slot_of_cluster[c];
      c = in.clusters[c].parent;
    };
    while (a != b) {
      const int da = a < 0 ? 0 : depth[a], db = b < 0 ? 0 : depth[b];
      if (da >= db) up(a, slot_a);
      if (db >= da && a != b) up(b, slot_b);
    }
    if (slot_a != slot_b) lifted[a + 1].push_back({slot_a, slot_b});
  }

  // Each item's rank: the longest path to it from the container's sources, its items taken in
  // topological order; where a cycle leaves none ready, the earliest left in graph order is
  // taken (its edges from those not taken yet are not followed).
  [[nodiscard]] std::vector<std::size_t> ranks_of(std::size_t container) const {
    const std::size_t n = items[container].size();
    std::vector<std::vector<std::size_t>> out(n);
    std::vector<std::size_t> waiting(n, 0), rank(n, 0);
    for (const auto& [from, to] : lifted[container]) {
      out[from].push_back(to);
      ++waiting[to];
    }
    std::vector<bool> taken(n, false);
    std::vector<std::size_t> ready;
    for (std::size_t s = n; s-- > 0;) {
      if (waiting[s] == 0) ready.push_back(s);
    }
    std::size_t next_unranked = 0;
    for (std::size_t done = 0; done < n; ++done) {
      if (ready.empty()) {
        while (taken[next_unranked]) ++next_unranked;
        ready.push_back(next_unranked);
      }
      // Each item is ready once: when its last edge in is followed, or to break a cycle.
      const std::size_t s = ready.back();
      ready.pop_back();
      taken[s] = true;
      for (const std::size_t to : out[s]) {
        if (taken[to]) continue;
        rank[to] = std::max(rank[to], rank[s] + 1);
        if (--waiting[to] == 0) ready.push_back(to);
      }
    }
    return rank;
  }

  [[nodiscard]] Placed& placed(const Item& item) {
    return item.cluster ? clusters[item.index] : boxes[item.index];
  }

  // Ranks and places the items of `container` (their sizes known); returns its content's size.
  std::pair<double, double> arrange(std::size_t container) {
    const std::vector<Item>& list = items[container];
    const std::vector<std::size_t> rank = ranks_of(container);
    std::size_t ranks = 0;
    for (const std::size_t r : rank) ranks = std::max(ranks, r + 1);
    std::vector<double> row_width(ranks, 0), row_height(ranks, 0);
    for (std::size_t s = 0; s < list.size(); ++s) {
      const Placed& p = placed(list[s]);
      row_width[rank[s]] += (row_width[rank[s]] > 0 ? kGap : 0) + p.width;
      row_height[rank[s]] = std::max(row_height[rank[s]], p.height);
    }
    const double width = ranks == 0 ? 0 : *std::max_element(row_width.begin(), row_width.end());
    std::vector<double> row_y(ranks, 0), row_x(ranks, 0);
    double height = 0;
    for (std::size_t r = 0; r < ranks; ++r) {
      row_y[r] = height;
      row_x[r] = (width - row_width[r]) / 2;
      height += row_height[r] + (r + 1 < ranks ? kRankGap : 0);
    }
    for (std::size_t s = 0; s < list.size(); ++s) {
      Placed& p = placed(list[s]);
      p.x = row_x[rank[s]];
      p.y = row_y[rank[s]] + (row_height[rank[s]] - p.height) / 2;
      row_x[rank[s]] += p.width + kGap;
    }
    return {width, height};
  }
};

}  // namespace

LayoutResult layered_layout(const LayoutInput& in) {
  check_layout_input(in);
  LayoutResult out;
  out.way = "layered";
  if (in.boxes.empty()) return out;
  Layered l(in);
  for (std::size_t b = 0; b < in.boxes.size(); ++b) {
    l.boxes[b].width = in.boxes[b].width;
    l.boxes[b].height = in.boxes[b].height;
  }
  // Children come after their parents: from the last cluster back, each is sized before its
  // parent arranges it.
  for (std::size_t c = in.clusters.size(); c-- > 0;) {
    const auto [width, height] = l.arrange(c + 1);
    l.clusters[c].width = width + 2 * kMargin;
    l.clusters[c].height = height + 2 * kMargin + kLabelBand;
  }
  std::tie(out.width, out.height) = l.arrange(0);
  // Absolute positions, parents first: a container's content starts inside its margins.
  const auto origin = [&](int container) {
    if (container < 0) return Point{};
    const Rect& r = out.clusters[container];
    return Point{r.x + kMargin, r.y + kMargin + kLabelBand};
  };
  out.clusters.resize(in.clusters.size());
  for (std::size_t c = 0; c < in.clusters.size(); ++c) {
    const Point o = origin(in.clusters[c].parent);
    const Placed& p = l.clusters[c];
    out.clusters[c] = {o.x + p.x, o.y + p.y, p.width, p.height};
  }
  for (std::size_t b = 0; b < in.boxes.size(); ++b) {
    const Point o = origin(in.boxes[b].cluster);
    const Placed& p = l.boxes[b];
    out.boxes.push_back({o.x + p.x, o.y + p.y, p.width, p.height});
  }
  for (const LayoutEdge& e : in.edges) {
    const Rect& a = out.boxes[e.from];
    const Rect& b = out.boxes[e.to];
    const Point start{a.x + a.width / 2, a.y + a.height};
    const Point end{b.x + b.width / 2, b.y};
    const auto along = [&](double t) {
      return Point{start.x + (end.x - start.x) * t, start.y + (end.y - start.y) * t};
    };
    out.edges.push_back({start, along(1.0 / 3), along(2.0 / 3), end});
  }
  return out;
}

}  // namespace onnxmap::cli::viewer
