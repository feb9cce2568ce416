#pragma once
// The drawing the graph page falls back to when Graphviz's layout is abandoned (past its time
// limit, or its helper process died: layout_helpers.hpp): computed here, in the viewer's
// process, in time linear in boxes and edges. Each cluster is laid out on its own, bottom up,
// and then placed as one block among its siblings, so boxes and clusters never overlap; items
// are ranked by the longest path from the level's sources (a cycle is broken at its earliest item
// in graph order) and set in centred rows; edges are straight lines from the bottom of their
// tail to the top of their head, and may cross boxes.

#include "graph_layout.hpp"

namespace onnxmap::cli::viewer {

// Lays `input` out top to bottom; `way` of the result is "layered". Throws onnxmap::Error
// (invalid_argument) as layout_graph does for an index out of range.
[[nodiscard]] LayoutResult layered_layout(const LayoutInput& input);

}  // namespace onnxmap::cli::viewer
