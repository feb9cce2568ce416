#pragma once
// Geometry of a laid-out drawing (graph_layout.hpp): whether an edge passes through a box, and
// clusters drawn around their boxes where dot laid the boxes out without them.

#include <cstddef>
#include <optional>

#include "graph_layout.hpp"

namespace onnxmap::cli::viewer {

// Pixels between a cluster drawn by clusters_around_boxes and what it holds, and above those,
// for its label.
inline constexpr double kClusterMargin = 10;
inline constexpr double kClusterLabelBand = 22;

// The first edge of `out` whose curve enters a box other than its two ends (by more than
// 2 pixels), if any.
[[nodiscard]] std::optional<std::size_t> first_edge_through_box(const LayoutInput& in,
                                                                const LayoutResult& out);

// Sets each cluster's rectangle around its boxes and clusters, with a margin and a band for its
// label on top; then moves the whole drawing so that nothing is left or above 0, and sizes it.
void clusters_around_boxes(const LayoutInput& in, LayoutResult& out);

}  // namespace onnxmap::cli::viewer
