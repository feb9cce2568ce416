#pragma once
// One drawing of the graph page (/api/graph, api.md): the boxes of a level, some of them
// unfolded in place into clusters of their own boxes, the graph's inputs and outputs that they
// read and make, the values between them as edges, all laid out (graph_layout.hpp).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "box_id.hpp"
#include "graph_layout.hpp"
#include "node_graph.hpp"

namespace onnxmap::cli::viewer {

// Boxes in one drawing at most, clusters' boxes included: a box whose unfolding would pass it
// stays folded (and is named in the answer's "refused").
inline constexpr std::size_t kMaxSceneBoxes = 600;

struct SceneRequest {
  std::string graph;                  // the graph's path ("" main; see api.md), for links
  BoxId level;                        // the box whose level is drawn (default: the whole graph)
  std::vector<BoxId> open;            // boxes unfolded in place
  bool open_given = false;            // false: the first of a level cut into ranges is unfolded
  std::optional<std::uint32_t> node;  // unfold what holds this node, and say which box it is
};

// Lays the drawing out as `layout` says. Throws ApiError (400, 404) for a bad level, box id or
// node.
[[nodiscard]] nlohmann::json graph_scene(const NodeGraph& graph, const SceneRequest& request,
                                         const LayoutOptions& layout);

}  // namespace onnxmap::cli::viewer
