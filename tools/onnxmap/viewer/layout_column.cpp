// The drawing made without Graphviz (column_layout, graph_layout.hpp): one box a row.

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <queue>
#include <vector>

#include "graph_geometry.hpp"
#include "graph_layout.hpp"

namespace onnxmap::cli::viewer {

namespace {

constexpr double kRowGap = 24;   // pixels between rows, and between sibling clusters
constexpr double kLaneGap = 12;  // pixels between the vertical parts of two arcs
constexpr std::size_t kLanes = 12;

// The boxes in an order where each edge's tail comes before its head (Kahn's, the smallest box
// index first among those ready; boxes on a cycle, which a level does not have, last).
std::vector<std::size_t> sources_first(const LayoutInput& in) {
  std::vector<std::size_t> waiting(in.boxes.size(), 0);
  std::vector<std::vector<std::size_t>> heads(in.boxes.size());
  for (const LayoutEdge& e : in.edges) {
    heads[e.from].push_back(e.to);
    ++waiting[e.to];
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t b = 0; b < in.boxes.size(); ++b) {
    if (waiting[b] == 0) ready.push(b);
  }
  std::vector<std::size_t> order;
  std::vector<bool> done(in.boxes.size(), false);
  while (!ready.empty()) {
    const std::size_t b = ready.top();
    ready.pop();
    order.push_back(b);
    done[b] = true;
    for (const std::size_t h : heads[b]) {
      if (--waiting[h] == 0) ready.push(h);
    }
  }
  for (std::size_t b = 0; b < in.boxes.size(); ++b) {
    if (!done[b]) order.push_back(b);
  }
  return order;
}

// Each cluster's members (boxes and clusters, in the order their first box comes in
// sources_first) and, at index clusters.size(), the top level's.
struct Member {
  bool cluster = false;
  std::size_t index = 0;
};

std::vector<std::vector<Member>> members(const LayoutInput& in) {
  const std::size_t top = in.clusters.size();
  const auto slot = [top](int c) { return c < 0 ? top : static_cast<std::size_t>(c); };
  std::vector<std::vector<Member>> out(top + 1);
  std::vector<bool> placed(top, false);
  for (const std::size_t b : sources_first(in)) {
    int c = in.boxes[b].cluster;
    out[slot(c)].push_back({false, b});
    while (c >= 0 && !placed[static_cast<std::size_t>(c)]) {
      placed[static_cast<std::size_t>(c)] = true;
      const int parent = in.clusters[static_cast<std::size_t>(c)].parent;
      out[slot(parent)].push_back({true, static_cast<std::size_t>(c)});
      c = parent;
    }
  }
  return out;
}

// The boxes from the top down: depth first through the clusters, so that each cluster's boxes
// are consecutive rows.
void visit(const std::vector<std::vector<Member>>& tree, std::size_t at,
           std::vector<std::size_t>& order) {
  for (const Member& m : tree[at]) {
    if (m.cluster) {
      visit(tree, m.index, order);
    } else {
      order.push_back(m.index);
    }
  }
}

// The clusters around box `b`, outermost first.
std::vector<int> chain(const LayoutInput& in, std::size_t b) {
  std::vector<int> out;
  for (int c = in.boxes[b].cluster; c >= 0; c = in.clusters[static_cast<std::size_t>(c)].parent) {
    out.insert(out.begin(), c);
  }
  return out;
}

// The space above a box whose clusters are `now`, below one whose clusters were `before`:
// room for the bottom margin of each cluster left and the top margin and label of each entered.
double gap(const std::vector<int>& before, const std::vector<int>& now) {
  std::size_t common = 0;
  while (common < before.size() && common < now.size() && before[common] == now[common]) {
    ++common;
  }
  return kRowGap + static_cast<double>(before.size() - common) * kClusterMargin +
         static_cast<double>(now.size() - common) * (kClusterMargin + kClusterLabelBand);
}

// A straight segment as a cubic Bezier segment (its start not repeated).
void line_to(std::vector<Point>& curve, Point to) {
  const Point from = curve.back();
  for (const double t : {1.0 / 3, 2.0 / 3, 1.0}) {
    curve.push_back({from.x + (to.x - from.x) * t, from.y + (to.y - from.y) * t});
  }
}

}  // namespace

LayoutResult column_layout(const LayoutInput& in) {
  check_layout_input(in);
  LayoutResult out;
  out.way = "column";
  out.boxes.resize(in.boxes.size());
  std::vector<std::size_t> order;
  visit(members(in), in.clusters.size(), order);
  std::vector<std::size_t> row(in.boxes.size());
  std::vector<int> above;
  double y = 0;
  for (std::size_t r = 0; r < order.size(); ++r) {
    const std::size_t b = order[r];
    std::vector<int> clusters = chain(in, b);
    if (r > 0) y += gap(above, clusters);
    out.boxes[b] = {0, y, in.boxes[b].width, in.boxes[b].height};
    out.width = std::max(out.width, in.boxes[b].width);
    y += in.boxes[b].height;
    row[b] = r;
    above = std::move(clusters);
  }
  out.height = y;
  out.edges.assign(in.edges.size(), {});
  clusters_around_boxes(in, out);  // also moves everything right and down of 0
  const double right = out.width;
  std::size_t arcs = 0;
  for (std::size_t e = 0; e < in.edges.size(); ++e) {
    const Rect& tail = out.boxes[in.edges[e].from];
    const Rect& head = out.boxes[in.edges[e].to];
    std::vector<Point>& curve = out.edges[e];
    const long rows =
        static_cast<long>(row[in.edges[e].to]) - static_cast<long>(row[in.edges[e].from]);
    if (std::labs(rows) == 1) {  // neighbours: straight across the gap between them
      const bool down = rows > 0;
      curve.push_back({tail.x + tail.width / 2, down ? tail.y + tail.height : tail.y});
      line_to(curve, {head.x + head.width / 2, down ? head.y : head.y + head.height});
      continue;
    }
    // Out of the tail's row to the right, down (or up) right of everything, into the head's row.
    const double lane = right + kLaneGap * static_cast<double>(1 + arcs++ % kLanes);
    curve.push_back({tail.x + tail.width, tail.y + tail.height / 2});
    line_to(curve, {lane, tail.y + tail.height / 2});
    line_to(curve, {lane, head.y + head.height / 2});
    line_to(curve, {head.x + head.width, head.y + head.height / 2});
    out.width = std::max(out.width, lane + kLaneGap);
  }
  return out;
}

}  // namespace onnxmap::cli::viewer
