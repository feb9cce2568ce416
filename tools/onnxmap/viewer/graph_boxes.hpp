#pragma once
// The parts of one drawing of the graph page (graph_scene.hpp) and what each says: boxes
// (a level's items, the graph's inputs and outputs), clusters (unfolded boxes), edges.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph_layout.hpp"
#include "graph_level.hpp"
#include "node_graph.hpp"

namespace onnxmap::cli::viewer {

struct SceneBox {
  Item item;                           // a level's box; unused for a graph input or output
  std::shared_ptr<const Level> level;  // the level it is in; null for a graph input or output
  int cluster = -1;                    // the cluster it is drawn in, -1: none
  std::string value;                   // a graph input or output: its name
  bool graph_input = false;
  nlohmann::json content;        // what it says (api.md), from describe_boxes()
  double width = 0, height = 0;  // pixels, from describe_boxes()
};

struct SceneCluster {
  Item item;       // the unfolded box
  std::string id;  // its id as unfolded (a repeat's names the block shown)
  int parent = -1;
  std::size_t shown = 0;            // a run's block shown
  std::vector<std::string> blocks;  // a run's blocks by name (graph_level.hpp: block_names)
  [[nodiscard]] std::string label() const;
};

struct SceneEdge {
  std::size_t from = 0, to = 0;     // box indices
  std::uint64_t count = 0;          // values from one to the other
  std::vector<std::string> values;  // the first few of them
  void add(std::string_view value);
};

[[nodiscard]] SceneBox io_box(std::string_view value, bool graph_input);

// Fills each box's content and size. `graph_path` names the graph for subgraph links.
void describe_boxes(const NodeGraph& graph, const std::string& graph_path,
                    std::vector<SceneBox>& boxes);

// The answer of /api/graph; `extra` is merged in.
[[nodiscard]] nlohmann::json scene_json(const NodeGraph& graph, const std::vector<SceneBox>& boxes,
                                        const std::vector<SceneCluster>& clusters,
                                        const std::vector<SceneEdge>& edges,
                                        const LayoutResult& layout, nlohmann::json extra);

}  // namespace onnxmap::cli::viewer
