// What each part of a drawing of the graph page says (graph_boxes.hpp).

#include "graph_boxes.hpp"

#include <cmath>

#include "fold_rules.hpp"
#include "shared/value_text.hpp"

namespace onnxmap::cli::viewer {

namespace {

constexpr std::size_t kValuesPerEdge = 4;
constexpr std::size_t kWeightsShown = 4;
constexpr std::size_t kConstantsShown = 3;
constexpr std::size_t kOpsShown = 3;
constexpr double kWidth = 270;
constexpr double kIoWidth = 190;
constexpr double kLine = 16;
constexpr double kPadding = 12;

nlohmann::json ops_json(const NodeGraph& graph, const Item& item) {
  nlohmann::json ops = nlohmann::json::array();
  for (std::size_t k = 0; k < item.ops.size() && k < kOpsShown; ++k) {
    ops.push_back({{"op", graph.fold().op_name(item.ops[k].first)}, {"count", item.ops[k].second}});
  }
  return ops;
}

nlohmann::json value_json(const NodeGraph& graph, std::string_view name) {
  return {{"name", std::string(name)}, {"type", graph.value_type(name)}};
}

// The type of a Constant's value attribute, where it has one ("INT64[4]").
std::string constant_type(const Node& node) {
  const auto value = node.attribute("value");
  if (!value) return "";
  const auto t = value->t();
  return t ? to_string(t->data_type()) + dims_text(t->dims()) : "";
}

// A node's box: its op, name, the initializers it reads, what is drawn inside it, subgraphs.
nlohmann::json node_content(const NodeGraph& graph, const std::string& graph_path, std::uint32_t id,
                            std::size_t& lines) {
  const Node& node = graph.node_at(id);
  nlohmann::json weights = nlohmann::json::array();
  std::size_t more_weights = 0;
  const auto add_weights = [&](const Node& n) {
    for (const std::string_view input : n.inputs()) {
      if (!graph.initializer(input)) continue;
      if (weights.size() < kWeightsShown) {
        weights.push_back(value_json(graph, input));
      } else {
        ++more_weights;
      }
    }
  };
  add_weights(node);
  nlohmann::json constants = nlohmann::json::array();
  std::size_t more_constants = 0;
  bool quantized = quantized_op(node.domain(), node.op_type());
  for (const std::uint32_t guest : graph.fold().guests(id)) {
    const Node& g = graph.node_at(guest);
    add_weights(g);
    quantized = quantized || quantized_op(g.domain(), g.op_type());
    if (constants.size() >= kConstantsShown) {
      ++more_constants;
      continue;
    }
    const Names outputs = g.outputs();
    const std::string_view output = outputs.empty() ? "" : *outputs.begin();
    const std::string type = g.op_type() == "Constant" ? constant_type(g) : "";
    constants.push_back({{"op", std::string(g.op_type())},
                         {"name", std::string(output)},
                         {"type", type.empty() ? graph.value_type(output) : type},
                         {"node", guest},
                         {"shared", graph.fold().host(guest) != id}});
  }
  nlohmann::json subgraphs = nlohmann::json::array();
  for (const Attribute a : node.attributes()) {
    std::size_t k = 0;
    const std::string base = (graph_path.empty() ? "" : graph_path + "/") + std::to_string(id) +
                             "." + std::string(a.name());
    if (a.g()) subgraphs.push_back({{"attribute", std::string(a.name())}, {"graph", base}});
    for (const Graph g : a.graphs()) {
      (void)g;
      subgraphs.push_back({{"attribute", std::string(a.name()) + "[" + std::to_string(k) + "]"},
                           {"graph", base + "." + std::to_string(k)}});
      ++k;
    }
  }
  lines = 2 + weights.size() + (more_weights > 0) + constants.size() + (more_constants > 0) +
          (subgraphs.empty() ? 0 : 1);
  return {{"kind", "node"},
          {"node", id},
          {"op", graph.fold().op_name(graph.fold().op(id))},
          {"name", std::string(node.name())},
          {"quantized", quantized},
          {"weights", weights},
          {"more_weights", more_weights},
          {"constants", constants},
          {"more_constants", more_constants},
          {"subgraphs", subgraphs}};
}

nlohmann::json item_content(const NodeGraph& graph, const SceneBox& box) {
  const Item& item = box.item;
  nlohmann::json out = {
      {"title", item.title}, {"nodes", item.nodes}, {"ops", ops_json(graph, item)}};
  switch (item.kind) {
    case ItemKind::group:
      out["kind"] = "group";
      out["prefix"] = item.id.prefix;
      break;
    case ItemKind::repeat:
      out["kind"] = "repeat";
      out["count"] = item.count;
      out["first"] = item.first;
      out["last"] = item.last;
      break;
    default:
      out["kind"] = "range";
      out["first"] = item.first;
      out["last"] = item.last;
      break;
  }
  return out;
}

}  // namespace

std::string SceneCluster::label() const {
  if (item.kind != ItemKind::repeat) return item.title;
  const std::string name = shown < blocks.size() ? " " + blocks[shown] : "";
  return item.title + " x " + std::to_string(item.count) + " · block " + std::to_string(shown) +
         name;
}

void SceneEdge::add(std::string_view value) {
  ++count;
  if (values.size() < kValuesPerEdge) values.emplace_back(value);
}

SceneBox io_box(std::string_view value, bool graph_input) {
  SceneBox box;
  box.value = std::string(value);
  box.graph_input = graph_input;
  return box;
}

void describe_boxes(const NodeGraph& graph, const std::string& graph_path,
                    std::vector<SceneBox>& boxes) {
  for (SceneBox& box : boxes) {
    std::size_t lines = 3;
    if (!box.level) {
      box.content = value_json(graph, box.value);
      box.content["kind"] = box.graph_input ? "input" : "output";
      if (box.graph_input && graph.outer_scope(box.value)) box.content["outer"] = true;
      lines = 2;
    } else if (box.item.kind == ItemKind::node) {
      box.content =
          node_content(graph, graph_path, *box.level->units()[box.item.begin].node, lines);
    } else {
      box.content = item_content(graph, box);
    }
    box.content["id"] =
        box.level ? box.item.id.to_string() : (box.graph_input ? "i:" : "o:") + box.value;
    box.width = box.level ? kWidth : kIoWidth;
    box.height = kPadding + kLine * static_cast<double>(lines);
  }
}

nlohmann::json scene_json(const NodeGraph& graph, const std::vector<SceneBox>& boxes,
                          const std::vector<SceneCluster>& clusters,
                          const std::vector<SceneEdge>& edges, const LayoutResult& layout,
                          nlohmann::json extra) {
  const auto rounded = [](double v) { return std::round(v * 10) / 10; };
  const auto rect = [&](nlohmann::json& into, const Rect& r) {
    into["x"] = rounded(r.x);
    into["y"] = rounded(r.y);
    into["width"] = rounded(r.width);
    into["height"] = rounded(r.height);
  };
  nlohmann::json out_boxes = nlohmann::json::array();
  for (std::size_t b = 0; b < boxes.size(); ++b) {
    nlohmann::json box = boxes[b].content;
    rect(box, layout.boxes[b]);
    box["cluster"] = boxes[b].cluster;
    out_boxes.push_back(std::move(box));
  }
  nlohmann::json out_clusters = nlohmann::json::array();
  for (std::size_t c = 0; c < clusters.size(); ++c) {
    const SceneCluster& cluster = clusters[c];
    nlohmann::json json = {{"id", cluster.id},
                           {"label", cluster.label()},
                           {"parent", cluster.parent},
                           {"nodes", cluster.item.nodes}};
    if (cluster.item.kind == ItemKind::repeat) {
      json["count"] = cluster.item.count;
      json["first"] = cluster.item.first;
      json["last"] = cluster.item.last;
      json["blocks"] = cluster.blocks;
    }
    rect(json, layout.clusters[c]);
    out_clusters.push_back(std::move(json));
  }
  nlohmann::json out_edges = nlohmann::json::array();
  for (std::size_t e = 0; e < edges.size(); ++e) {
    nlohmann::json values = nlohmann::json::array();
    for (const std::string& v : edges[e].values) values.push_back(value_json(graph, v));
    nlohmann::json points = nlohmann::json::array();
    for (const Point& p : layout.edges[e]) points.push_back({rounded(p.x), rounded(p.y)});
    out_edges.push_back({{"from", edges[e].from},
                         {"to", edges[e].to},
                         {"count", edges[e].count},
                         {"values", std::move(values)},
                         {"points", std::move(points)}});
  }
  extra["width"] = rounded(layout.width);
  extra["height"] = rounded(layout.height);
  extra["boxes"] = std::move(out_boxes);
  extra["clusters"] = std::move(out_clusters);
  extra["edges"] = std::move(out_edges);
  return extra;
}

}  // namespace onnxmap::cli::viewer
