#pragma once
// The layered drawing of one scene of the graph page, by Graphviz's `dot` program: boxes of
// given sizes, nested clusters, directed edges; back, where each box and cluster is and the curve
// of each edge, routed between the boxes. Measured against dagre and elkjs in the page for this:
// dot lays out 150 boxes in about 30 ms where dagre takes 190 and elkjs 2,000 (bench/view.md).
// Graphviz keeps memory per layout and can take minutes on a dense level, so each layout is a
// `dot` process of its own (layout_process.hpp), DOT text in and `-Tjson0` out, with a deadline:
// what it does costs that one drawing, never the viewer.

#include <chrono>
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
  // hold boxes of others) where those did too; "column" where dot gave none (column_layout).
  std::string way = "spline";
  // Why the column was drawn instead of dot's drawing ("" when dot's): said on the page.
  std::string note;
};

struct LayoutOptions {
  // Graphviz's program and its first arguments, found on PATH; the DOT text comes on its
  // standard input and `-Tjson0` is added.
  std::vector<std::string> dot = {"dot"};
  // For the whole drawing, from the request to the answer (every dot run it takes): past it,
  // dot is killed and the drawing is the column.
  std::chrono::milliseconds time_limit{5000};
};

// Lays `input` out top to bottom by `dot`: its curves; where one passes through a box (as dot's
// do now and then across a cluster's border), again with polylines, then (up to 200 boxes)
// orthogonal edges, then without clusters ("flat"). Where dot fails, is not installed, or passes
// the time limit, the last of those it made, or else column_layout with a note saying why.
// Thread-safe (each call runs its own dot). Throws onnxmap::Error (invalid_argument) only for an
// index out of range.
[[nodiscard]] LayoutResult layout_graph(const LayoutInput& input, const LayoutOptions& options);

// The drawing made without Graphviz: one box a row, tails above heads where the edges allow
// (sources first), each cluster's boxes consecutive rows; an edge between neighbours straight
// across, the others out to the right of everything and back. Nothing overlaps and no edge
// passes through a box; `way` is "column".
[[nodiscard]] LayoutResult column_layout(const LayoutInput& input);

// Throws onnxmap::Error (invalid_argument) for a cluster, box or edge index out of range.
void check_layout_input(const LayoutInput& input);

}  // namespace onnxmap::cli::viewer
