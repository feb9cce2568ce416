#pragma once
// The layered drawing of one scene of the graph page, by Graphviz's `dot` (libgvc): boxes of given
// sizes, nested clusters, directed edges; back, where each box and cluster is and the curve of
// each edge, routed between the boxes. Measured against dagre and elkjs in the page for this: dot
// lays out 150 boxes in about 30 ms where dagre takes 190 and elkjs 2,000 (bench/view.md).
// Graphviz is not thread-safe (one layout runs at a time), keeps memory per layout, and can take
// minutes on a dense level: the viewer calls it in helper processes (layout_helpers.hpp).

#include <cstddef>
#include <string>
#include <vector>

namespace onnxmap::cli::viewer {

struct LayoutBox {
  double width = 0;   // pixels
  double height = 0;  // pixels
  int cluster = -1;   // index into LayoutInput::clusters, -1: none
};

struct LayoutCluster {
  int parent = -1;  // index of the enclosing cluster, -1: none; parents come first
};

struct LayoutEdge {
  std::size_t from = 0;  // box indices
  std::size_t to = 0;
};

struct LayoutInput {
  std::vector<LayoutBox> boxes;
  std::vector<LayoutCluster> clusters;
  std::vector<LayoutEdge> edges;
};

struct Point {
  double x = 0;
  double y = 0;
};

struct Rect {
  double x = 0;  // top left, pixels, y down
  double y = 0;
  double width = 0;
  double height = 0;
};

struct LayoutResult {
  double width = 0;
  double height = 0;
  std::vector<Rect> boxes;     // as LayoutInput::boxes
  std::vector<Rect> clusters;  // as LayoutInput::clusters
  // Each edge a cubic Bezier spline: its start, then three points per segment (two control
  // points and the segment's end), from the edge's tail on its box's border to its head.
  std::vector<std::vector<Point>> edges;
  // How: "spline" (dot's curves), "polyline" or "ortho" where curves passed through a box, or
  // "flat" (no clusters in the layout; each cluster drawn around its boxes, and it may then
  // hold boxes of others) where those did too.
  std::string way = "spline";
  // Why a simpler drawing was made instead of dot's ("" when dot's): said on the page.
  std::string note;
};

// Lays `input` out top to bottom. Throws onnxmap::Error (invalid_argument) for an index out of
// range, and (io) where Graphviz fails or its `dot` layout plugin is not installed.
[[nodiscard]] LayoutResult layout_graph(const LayoutInput& input);

// Throws onnxmap::Error (invalid_argument) for a cluster, box or edge index out of range.
void check_layout_input(const LayoutInput& input);

}  // namespace onnxmap::cli::viewer
