// The graph page's layout by Graphviz (graph_layout.hpp).

#include "graph_layout.hpp"

#include <graphviz/gvc.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string_view>

#include "graph_geometry.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::cli::viewer {

namespace {

constexpr std::size_t kMaxOrthogonal = 200;  // boxes routed orthogonally at most

std::mutex& graphviz_lock() {
  static std::mutex lock;
  return lock;
}

// Graphviz's messages while a layout runs (under graphviz_lock): kept for the error, not printed.
std::string& graphviz_messages() {
  static std::string messages;
  return messages;
}

int keep_message(char* text) {
  if (graphviz_messages().size() < 1000) graphviz_messages() += text;
  return 0;
}

GVC_t* graphviz() {
  static GVC_t* const context = [] {
    agseterrf(keep_message);
    return gvContext();
  }();
  return context;
}

// Graphviz takes names and values as char*, without writing through them.
void set(void* object, const char* name, const std::string& value) {
  agsafeset(object, const_cast<char*>(name), const_cast<char*>(value.c_str()),
            const_cast<char*>(""));
}

std::string inches(double pixels) {
  return std::to_string(pixels / 72.0);
}

struct GraphDeleter {
  void operator()(Agraph_t* g) const {
    gvFreeLayout(graphviz(), g);
    agclose(g);
  }
};
using GraphPtr = std::unique_ptr<Agraph_t, GraphDeleter>;

}  // namespace

void check_layout_input(const LayoutInput& in) {
  for (std::size_t c = 0; c < in.clusters.size(); ++c) {
    const int parent = in.clusters[c].parent;
    if (parent >= static_cast<int>(c)) {
      throw Error(ErrorKind::invalid_argument, "layout: a cluster's parent comes after it");
    }
  }
  for (const LayoutBox& box : in.boxes) {
    if (box.cluster >= static_cast<int>(in.clusters.size())) {
      throw Error(ErrorKind::invalid_argument, "layout: a box in no such cluster");
    }
  }
  for (const LayoutEdge& edge : in.edges) {
    if (edge.from >= in.boxes.size() || edge.to >= in.boxes.size()) {
      throw Error(ErrorKind::invalid_argument, "layout: an edge to no such box");
    }
  }
}

namespace {

// The graph of `in` with its attributes, not laid out yet.
GraphPtr build(const LayoutInput& in, const char* way, std::vector<Agraph_t*>& clusters,
               std::vector<Agnode_t*>& nodes, std::vector<Agedge_t*>& edges) {
  const bool clustered = std::string_view(way) != "flat";
  char name[] = "scene";
  GraphPtr g(agopen(name, Agdirected, nullptr));
  set(g.get(), "rankdir", "TB");
  set(g.get(), "nodesep", "0.25");
  set(g.get(), "ranksep", "0.4");
  set(g.get(), "newrank", "true");
  set(g.get(), "fontsize", "12");
  if (std::string_view(way) != "flat") set(g.get(), "splines", way);
  if (in.edges.size() > 3 * in.boxes.size()) {
    // Densely wired: bound the ranking's and ordering's iterations (a level where each box reads
    // every earlier one takes dot minutes otherwise; these bring 45 such boxes from 18 s to 2).
    set(g.get(), "nslimit", "1");
    set(g.get(), "nslimit1", "1");
    set(g.get(), "mclimit", "0.2");
  }
  for (std::size_t c = 0; clustered && c < in.clusters.size(); ++c) {
    Agraph_t* parent = in.clusters[c].parent < 0 ? g.get() : clusters[in.clusters[c].parent];
    std::string sub = "cluster_" + std::to_string(c);
    clusters.push_back(agsubg(parent, sub.data(), 1));
    // No label: the page draws it in the margin. (Graphviz would lay text out through
    // fontconfig, and parses escapes and HTML in labels: no model text reaches it.)
    set(clusters.back(), "margin", "22");
  }
  for (std::size_t b = 0; b < in.boxes.size(); ++b) {
    const LayoutBox& box = in.boxes[b];
    Agraph_t* owner = box.cluster < 0 || !clustered ? g.get() : clusters[box.cluster];
    std::string id = "b" + std::to_string(b);
    Agnode_t* node = agnode(owner, id.data(), 1);
    set(node, "shape", "box");
    set(node, "fixedsize", "true");
    set(node, "label", "");
    set(node, "width", inches(box.width));
    set(node, "height", inches(box.height));
    nodes.push_back(node);
  }
  for (const LayoutEdge& e : in.edges) {
    Agedge_t* edge = agedge(g.get(), nodes[e.from], nodes[e.to], nullptr, 1);
    set(edge, "arrowhead", "none");
    edges.push_back(edge);
  }
  return g;
}

// One run of dot over `in`, edges drawn `way` ("spline", "polyline", "ortho"), boxes in their
// clusters; or "flat": boxes all at the top level, splines, the clusters' rectangles left empty.
LayoutResult run_dot(const LayoutInput& in, const char* way) {
  graphviz_messages().clear();
  std::vector<Agraph_t*> clusters;
  std::vector<Agnode_t*> nodes;
  std::vector<Agedge_t*> edges;
  GraphPtr g = build(in, way, clusters, nodes, edges);
  char dot[] = "dot";
  if (gvLayout(graphviz(), g.get(), dot) != 0) {
    throw Error(ErrorKind::io,
                "graph layout failed (is Graphviz's dot plugin installed? Debian: libgvc6): " +
                    graphviz_messages());
  }
  LayoutResult out;
  out.way = way;
  const boxf bounds = GD_bb(g.get());
  const double top = bounds.UR.y;
  out.width = bounds.UR.x - bounds.LL.x;
  out.height = bounds.UR.y - bounds.LL.y;
  const auto flip = [&](pointf p) { return Point{p.x - bounds.LL.x, top - p.y}; };
  for (std::size_t b = 0; b < nodes.size(); ++b) {
    const Point centre = flip(ND_coord(nodes[b]));
    out.boxes.push_back({centre.x - in.boxes[b].width / 2, centre.y - in.boxes[b].height / 2,
                         in.boxes[b].width, in.boxes[b].height});
  }
  for (Agraph_t* cluster : clusters) {
    const boxf bb = GD_bb(cluster);
    const Point corner = flip({bb.LL.x, bb.UR.y});
    out.clusters.push_back({corner.x, corner.y, bb.UR.x - bb.LL.x, bb.UR.y - bb.LL.y});
  }
  for (Agedge_t* edge : edges) {
    std::vector<Point> curve;
    const splines* spl = ED_spl(edge);
    if (spl != nullptr && spl->size > 0) {
      const bezier& bz = spl->list[0];
      for (int k = 0; k < bz.size; ++k) curve.push_back(flip(bz.list[k]));
    }
    out.edges.push_back(std::move(curve));
  }
  return out;
}

}  // namespace

LayoutResult layout_graph(const LayoutInput& in) {
  check_layout_input(in);
  if (in.boxes.empty()) return {};
  const std::lock_guard lock(graphviz_lock());
  // dot routes an edge through a box now and then where it crosses a cluster's border: then
  // the edges are routed as polylines; then (on drawings small enough: it takes seconds on
  // 450 boxes) orthogonally; and last the boxes are laid out without clusters, and each
  // cluster drawn around its boxes (where it may hold boxes of another).
  LayoutResult out = run_dot(in, "spline");
  if (in.clusters.empty() || !first_edge_through_box(in, out)) return out;
  out = run_dot(in, "polyline");
  if (!first_edge_through_box(in, out)) return out;
  if (in.boxes.size() <= kMaxOrthogonal) {
    out = run_dot(in, "ortho");
    if (!first_edge_through_box(in, out)) return out;
  }
  out = run_dot(in, "flat");
  clusters_around_boxes(in, out);
  return out;
}

}  // namespace onnxmap::cli::viewer
