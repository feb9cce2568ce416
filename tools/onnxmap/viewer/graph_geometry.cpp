// Geometry of a laid-out drawing (graph_geometry.hpp).

#include "graph_geometry.hpp"

#include <algorithm>
#include <limits>

namespace onnxmap::cli::viewer {

namespace {

constexpr double kInset = 2;  // pixels of a box an edge may graze
constexpr int kSamples = 12;  // points sampled on each Bezier segment

Point point_on_curve(const Point& a, const Point& b, const Point& c, const Point& d, double t) {
  const double u = 1 - t;
  const double w0 = u * u * u, w1 = 3 * u * u * t, w2 = 3 * u * t * t, w3 = t * t * t;
  return {w0 * a.x + w1 * b.x + w2 * c.x + w3 * d.x, w0 * a.y + w1 * b.y + w2 * c.y + w3 * d.y};
}

bool strictly_inside(const Point& p, const Rect& r) {
  return p.x > r.x + kInset && p.x < r.x + r.width - kInset && p.y > r.y + kInset &&
         p.y < r.y + r.height - kInset;
}

// The rectangle around `a` and `b`.
Rect merged(const Rect& a, const Rect& b) {
  const double left = std::min(a.x, b.x), top = std::min(a.y, b.y);
  const double right = std::max(a.x + a.width, b.x + b.width);
  const double bottom = std::max(a.y + a.height, b.y + b.height);
  return {left, top, right - left, bottom - top};
}

}  // namespace

std::optional<std::size_t> first_edge_through_box(const LayoutInput& in, const LayoutResult& out) {
  for (std::size_t e = 0; e < out.edges.size(); ++e) {
    const std::vector<Point>& curve = out.edges[e];
    std::vector<Point> points;
    for (std::size_t k = 0; k + 3 < curve.size(); k += 3) {
      for (int s = 0; s <= kSamples; ++s) {
        points.push_back(point_on_curve(curve[k], curve[k + 1], curve[k + 2], curve[k + 3],
                                        static_cast<double>(s) / kSamples));
      }
    }
    if (points.empty()) continue;
    Rect span{points[0].x, points[0].y, 0, 0};
    for (const Point& p : points) span = merged(span, {p.x, p.y, 0, 0});
    for (std::size_t b = 0; b < out.boxes.size(); ++b) {
      if (b == in.edges[e].from || b == in.edges[e].to) continue;
      const Rect& r = out.boxes[b];
      const bool near = r.x < span.x + span.width && span.x < r.x + r.width &&
                        r.y < span.y + span.height && span.y < r.y + r.height;
      if (!near) continue;
      if (std::any_of(points.begin(), points.end(),
                      [&](const Point& p) { return strictly_inside(p, r); })) {
        return e;
      }
    }
  }
  return std::nullopt;
}

void clusters_around_boxes(const LayoutInput& in, LayoutResult& out) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<Rect> around(in.clusters.size(), Rect{inf, inf, -inf, -inf});
  std::vector<bool> any(in.clusters.size(), false);
  const auto take = [&](int c, const Rect& r) {
    around[c] = any[c] ? merged(around[c], r) : r;
    any[c] = true;
  };
  for (std::size_t b = 0; b < in.boxes.size(); ++b) {
    if (in.boxes[b].cluster >= 0) take(in.boxes[b].cluster, out.boxes[b]);
  }
  // Children come after their parents: each is complete before its parent takes it.
  out.clusters.assign(in.clusters.size(), Rect{});
  for (std::size_t c = in.clusters.size(); c-- > 0;) {
    if (!any[c]) continue;
    const Rect& r = around[c];
    out.clusters[c] = {r.x - kClusterMargin, r.y - kClusterMargin - kClusterLabelBand,
                       r.width + 2 * kClusterMargin,
                       r.height + 2 * kClusterMargin + kClusterLabelBand};
    if (in.clusters[c].parent >= 0) take(in.clusters[c].parent, out.clusters[c]);
  }
  double left = 0, top = 0, right = out.width, bottom = out.height;
  for (const Rect& r : out.clusters) {
    left = std::min(left, r.x);
    top = std::min(top, r.y);
    right = std::max(right, r.x + r.width);
    bottom = std::max(bottom, r.y + r.height);
  }
  const auto shift = [&](double& x, double& y) {
    x -= left;
    y -= top;
  };
  for (Rect& r : out.boxes) shift(r.x, r.y);
  for (Rect& r : out.clusters) shift(r.x, r.y);
  for (auto& curve : out.edges) {
    for (Point& p : curve) shift(p.x, p.y);
  }
  out.width = right - left;
  out.height = bottom - top;
}

}  // namespace onnxmap::cli::viewer
