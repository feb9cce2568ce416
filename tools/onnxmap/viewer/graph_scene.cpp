// One drawing of the graph page (graph_scene.hpp); what each box says is in graph_boxes.cpp.

#include "graph_scene.hpp"

#include <algorithm>
#include <memory>
#include <unordered_map>

#include "graph_boxes.hpp"
#include "graph_layout.hpp"
#include "graph_level.hpp"
#include "stats_jobs.hpp"

namespace onnxmap::cli::viewer {

namespace {

constexpr std::size_t kMaxGraphIo = 32;  // graph inputs (and outputs) drawn as boxes
constexpr std::size_t kMaxEdges = 4000;

struct Scene {
  const Folding& folding;
  std::unordered_map<BoxId, BoxId, BoxIdHash> open;  // BoxId::run() -> the id asked for
  std::vector<SceneBox> boxes;
  std::vector<SceneCluster> clusters;
  std::vector<std::string> opened, refused;
  std::vector<BoxId> runs;  // the runs of blocks unfolded

  void add_box(Item item, const std::shared_ptr<const Level>& level, int cluster) {
    SceneBox box;
    box.item = std::move(item);
    box.level = level;
    box.cluster = cluster;
    boxes.push_back(std::move(box));
  }

  // Adds the boxes of `id`'s level into `cluster`, unfolding those asked for.
  void add_level(const BoxId& id, int cluster, int depth) {
    auto level = std::make_shared<const Level>(unfold(folding, id));
    std::vector<Item> items = *folding.items(*level);
    std::size_t remaining = items.size();
    for (Item& item : items) {
      --remaining;
      const auto asked = open.find(item.id.run());
      if (asked == open.end() || !item.id.unfolds() || depth > 64) {
        add_box(std::move(item), level, cluster);
        continue;
      }
      // Room for this level's other boxes, and the unfolded box's own (a level has at most
      // kMaxBoxes, more where a run of one group stands for it).
      if (boxes.size() + remaining + kMaxBoxes + 1 > kMaxSceneBoxes) {
        refused.push_back(asked->second.to_string());
        add_box(std::move(item), level, cluster);
        continue;
      }
      const BoxId shown = asked->second;
      opened.push_back(shown.to_string());
      SceneCluster unfolded{std::move(item), shown.to_string(), cluster, 0, {}};
      if (unfolded.item.kind == ItemKind::repeat) {
        runs.push_back(shown);
        unfolded.shown = shown.shown;
        unfolded.blocks = block_names(folding, shown);
      }
      clusters.push_back(std::move(unfolded));
      add_level(shown, static_cast<int>(clusters.size()) - 1, depth + 1);
    }
  }
};

// Where each drawn node is drawn: its box (-1: none), and for the nodes of unfolded runs of
// blocks, the innermost run and the block. The nodes of the blocks not shown are drawn as their
// like in the block shown (the k-th node of a block in graph order as the k-th of the shown
// one, itself drawn as its like where it is in a run unfolded inside), so that what the run
// reads and makes connects to the block. Runs nest (a run unfolded in the block shown of
// another): within any run, only the shown block's own values are drawn (edge_hidden).
struct NodePlaces {
  std::vector<std::int32_t> box, run;  // per node; run: the innermost holding it, -1: none
  std::vector<std::uint32_t> block;    // per node: its block in that run
  std::vector<std::int32_t> parent;    // per run: the run it is unfolded in, -1: none
  std::vector<std::uint32_t> parent_block, shown;  // per run: its block in parent; block shown
  std::vector<std::uint32_t> hidden;               // the nodes of the blocks not shown

  // Whether the value a -> b is not drawn: the innermost run holding both holds them in
  // different blocks, or in a block not shown.
  [[nodiscard]] bool edge_hidden(std::uint32_t a, std::uint32_t b) const {
    for (std::int32_t ra = run[a], ba = block[a]; ra >= 0; ba = parent_block[ra], ra = parent[ra]) {
      for (std::int32_t rb = run[b], bb = block[b]; rb >= 0;
           bb = parent_block[rb], rb = parent[rb]) {
        if (ra == rb) return ba != bb || static_cast<std::uint32_t>(bb) != shown[rb];
      }
    }
    return false;
  }
};

// The drawn nodes of block `b` of run `run` (of `units`), sorted.
std::vector<std::uint32_t> block_nodes(const FoldGraph& graph, const std::vector<Unit>& units,
                                       const BoxId& run, std::size_t b) {
  std::vector<std::uint32_t> ids;
  for (std::size_t u = run.begin + b * run.period; u < run.begin + (b + 1) * run.period; ++u) {
    for_each_node(graph, units[u], [&](std::uint32_t id) { ids.push_back(id); });
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// `runs` in the order they were unfolded: a run before those unfolded inside it.
NodePlaces place_nodes(const Folding& folding, const std::vector<SceneBox>& boxes,
                       const std::vector<BoxId>& runs) {
  const FoldGraph& graph = folding.graph();
  NodePlaces at;
  at.box.assign(graph.size(), -1);
  at.run.assign(graph.size(), -1);
  at.block.assign(graph.size(), 0);
  for (std::size_t b = 0; b < boxes.size(); ++b) {
    const SceneBox& box = boxes[b];
    for (std::size_t u = box.item.begin; u < box.item.end; ++u) {
      for_each_node(graph, box.level->units()[u],
                    [&](std::uint32_t id) { at.box[id] = static_cast<std::int32_t>(b); });
    }
  }
  std::vector<std::vector<std::vector<std::uint32_t>>> blocks(runs.size());
  for (std::size_t r = 0; r < runs.size(); ++r) {  // outer first: the innermost run is kept
    const BoxId& run = runs[r];
    const Level block = resolve(folding, run);
    for (std::size_t b = 0; b < run.count; ++b) {
      blocks[r].push_back(block_nodes(graph, block.units(), run, b));
    }
    const std::uint32_t first = blocks[r][0].empty() ? 0 : blocks[r][0][0];
    at.parent.push_back(blocks[r][0].empty() ? -1 : at.run[first]);
    at.parent_block.push_back(at.block[first]);
    at.shown.push_back(static_cast<std::uint32_t>(run.shown));
    for (std::size_t b = 0; b < run.count; ++b) {
      for (const std::uint32_t id : blocks[r][b]) {
        at.run[id] = static_cast<std::int32_t>(r);
        at.block[id] = static_cast<std::uint32_t>(b);
      }
    }
  }
  for (std::size_t r = runs.size(); r-- > 0;) {  // inner first: a like's own place is known
    const std::vector<std::uint32_t>& shown = blocks[r][at.shown[r]];
    for (std::size_t b = 0; b < blocks[r].size(); ++b) {
      const std::vector<std::uint32_t>& ids = blocks[r][b];
      if (b == at.shown[r] || ids.size() != shown.size()) continue;
      for (std::size_t k = 0; k < ids.size(); ++k) {
        at.box[ids[k]] = at.box[shown[k]];
        at.hidden.push_back(ids[k]);
      }
    }
  }
  return at;
}

struct EdgeKey {
  std::size_t from, to;
  bool operator==(const EdgeKey&) const = default;
};
struct EdgeKeyHash {
  std::size_t operator()(const EdgeKey& k) const { return k.from * 1000003U ^ k.to; }
};

// The edges between boxes, each pair once with its values; graph inputs and outputs added as
// boxes where a box reads or makes them.
std::vector<SceneEdge> connect(const Folding& folding, std::vector<SceneBox>& boxes,
                               const std::vector<BoxId>& runs) {
  const FoldGraph& graph = folding.graph();
  const NodePlaces at = place_nodes(folding, boxes, runs);
  const std::vector<std::int32_t>& box_of = at.box;
  const std::size_t leaves = boxes.size();
  std::unordered_map<EdgeKey, std::size_t, EdgeKeyHash> index;
  std::vector<SceneEdge> edges;
  const auto add = [&](std::size_t from, std::size_t to, std::string_view value) {
    if (from == to) return;
    auto at = index.find({from, to});
    if (at == index.end()) {
      if (edges.size() >= kMaxEdges) return;  // past the budget: not drawn
      at = index.emplace(EdgeKey{from, to}, edges.size()).first;
      edges.push_back({from, to, 0, {}});
    }
    edges[at->second].add(value);
  };
  for (const std::string_view input : graph.graph_inputs()) {
    if (boxes.size() - leaves >= kMaxGraphIo) break;
    std::vector<std::size_t> readers;
    for (const std::uint32_t r : graph.readers(input)) {
      if (box_of[graph.host(r)] >= 0) readers.push_back(box_of[graph.host(r)]);
    }
    // Read by a box, or by no node at all: a model's inputs are all shown, read or not.
    if (readers.empty() && !graph.readers(input).empty()) continue;
    boxes.push_back(io_box(input, true));
    for (const std::size_t r : readers) add(boxes.size() - 1, r, input);
  }
  const std::size_t inputs_end = boxes.size();
  for (const std::string_view output : graph.graph_outputs()) {
    if (boxes.size() - inputs_end >= kMaxGraphIo) break;
    const auto p = graph.producer(output);
    if (!p || box_of[graph.host(*p)] < 0) continue;
    boxes.push_back(io_box(output, false));
    add(box_of[graph.host(*p)], boxes.size() - 1, output);
  }
  for (std::size_t b = 0; b < leaves; ++b) {
    const SceneBox& box = boxes[b];
    for (std::size_t u = box.item.begin; u < box.item.end; ++u) {
      for_each_node(graph, box.level->units()[u], [&](std::uint32_t id) {
        graph.for_each_input(id, [&](std::uint32_t producer, std::string_view value) {
          const std::uint32_t source = graph.host(producer);
          const std::int32_t from = box_of[source];
          if (from >= 0 && !at.edge_hidden(source, id)) {
            add(static_cast<std::size_t>(from), b, value);
          }
        });
      });
    }
  }
  // What the blocks not shown read from outside their run, drawn into their like.
  for (const std::uint32_t id : at.hidden) {
    graph.for_each_input(id, [&](std::uint32_t producer, std::string_view value) {
      const std::uint32_t source = graph.host(producer);
      const std::int32_t from = box_of[source];
      if (from >= 0 && box_of[id] >= 0 && !at.edge_hidden(source, id)) {
        add(static_cast<std::size_t>(from), static_cast<std::size_t>(box_of[id]), value);
      }
    });
  }
  return edges;
}

LayoutInput layout_input(const std::vector<SceneBox>& boxes,
                         const std::vector<SceneCluster>& clusters,
                         const std::vector<SceneEdge>& edges) {
  LayoutInput in;
  for (const SceneCluster& c : clusters) in.clusters.push_back({c.parent});
  for (const SceneBox& b : boxes) in.boxes.push_back({b.width, b.height, b.cluster});
  for (const SceneEdge& e : edges) in.edges.push_back({e.from, e.to});
  return in;
}

}  // namespace

nlohmann::json graph_scene(const NodeGraph& graph, const SceneRequest& request,
                           const LayoutOptions& layout_options) {
  const Folding& folding = graph.folding();
  Scene scene{folding, {}, {}, {}, {}, {}, {}};
  std::string found;
  if (request.node) {
    if (*request.node >= graph.size()) {
      throw ApiError{404, "no node " + std::to_string(*request.node) + " in this graph"};
    }
    std::vector<BoxId> path = path_to_node(folding, request.level, *request.node);
    found = path.back().to_string();
    path.pop_back();
    for (const BoxId& id : path) scene.open[id.run()] = id;
  }
  for (const BoxId& id : request.open) scene.open[id.run()] = id;
  if (!request.open_given && !request.node) {
    // Held: the cache may drop its own copy meanwhile.
    const std::shared_ptr<const std::vector<Item>> top =
        folding.items(unfold(folding, request.level));
    if (!top->empty() && top->front().kind == ItemKind::range) {
      scene.open[top->front().id] = top->front().id;
    }
  }
  scene.add_level(request.level, -1, 0);
  const std::vector<SceneEdge> edges = connect(folding, scene.boxes, scene.runs);
  describe_boxes(graph, request.graph, scene.boxes);
  const LayoutResult layout =
      layout_graph(layout_input(scene.boxes, scene.clusters, edges), layout_options);
  return scene_json(graph, scene.boxes, scene.clusters, edges, layout,
                    {{"graph", request.graph},
                     {"level", request.level.to_string()},
                     {"layout", layout.way},
                     {"layout_note", layout.note},
                     {"open", scene.opened},
                     {"refused", scene.refused},
                     {"found", found}});
}

}  // namespace onnxmap::cli::viewer
