// onnxmap graph MODEL [--depth N] [--json]: the model's nodes as
// `outputs = Op[domain](inputs) {attrs}`, with graph inputs, initializers and outputs by type and
// shape, subgraphs (If branches, Loop and Scan bodies) indented under their node, and model-local
// functions after the main graph. The text is rendered from the JSON (graph_json.hpp).

#include <iostream>
#include <string>

#include "format.hpp"
#include "graph_json.hpp"
#include "load_mode_option.hpp"
#include "onnxmap/onnxmap.hpp"
#include "remote_flags.hpp"
#include "verbs.hpp"

namespace onnxmap::cli {

namespace {

struct GraphArgs {
  std::string model;
  int depth = -1;  // subgraph levels to show; -1: all
  bool json = false;
  LoadModeOption load;
  RemoteOptions remote;
};

std::string name_text(const nlohmann::json& name) {
  const std::string text = name.get<std::string>();
  return text.empty() ? std::string("\"\"") : text;
}

std::string names_text(const nlohmann::json& names) {
  std::string out;
  for (const nlohmann::json& name : names) out += (out.empty() ? "" : ", ") + name_text(name);
  return out;
}

class GraphText {
 public:
  explicit GraphText(std::ostream& out) : out_(out) {}

  void model(const nlohmann::json& model) {
    std::string opsets;
    for (const auto& [domain, version] : model["opset_import"].items()) {
      opsets += (opsets.empty() ? " " : ", ") + domain + ' ' +
                std::to_string(version.get<std::int64_t>());
    }
    out_ << "model: ir_version " << model["ir_version"].get<std::int64_t>() << ", opset_import"
         << (opsets.empty() ? " (none)" : opsets) << '\n';
    if (model.contains("graph")) graph(model["graph"], 0);
    for (const nlohmann::json& f : model["functions"]) function(f);
  }

 private:
  void line(std::size_t indent, const std::string& text) {
    out_ << std::string(indent * 2, ' ') << text << '\n';
  }

  void graph(const nlohmann::json& g, std::size_t indent) {
    const std::string name = g["name"].get<std::string>();
    line(indent, "graph " + (name.empty() ? std::string("(unnamed)") : name));
    for (const nlohmann::json& v : g["inputs"]) line(indent + 1, "input  " + typed(v));
    for (const nlohmann::json& v : g["initializers"]) line(indent + 1, "init   " + typed(v));
    for (const nlohmann::json& n : g["nodes"]) node(n, indent + 1);
    for (const nlohmann::json& v : g["outputs"]) line(indent + 1, "output " + typed(v));
  }

  static std::string typed(const nlohmann::json& value) {
    return name_text(value["name"]) + ": " + value["type"].get<std::string>();
  }

  void function(const nlohmann::json& f) {
    const std::string domain = f["domain"].get<std::string>();
    const auto& attributes = f["attributes"];
    line(0, "function " + (domain.empty() ? "" : domain + ".") + f["name"].get<std::string>() +
                "(" + names_text(f["inputs"]) + ") -> (" + names_text(f["outputs"]) + ")" +
                (attributes.empty() ? "" : " attributes " + names_text(attributes)));
    for (const nlohmann::json& n : f["nodes"]) node(n, 1);
  }

  void node(const nlohmann::json& n, std::size_t indent) {
    const std::string domain = n["domain"].get<std::string>();
    std::string text = names_text(n["outputs"]) + " = " + n["op_type"].get<std::string>() +
                       (domain.empty() ? "" : "[" + domain + "]") + "(" + names_text(n["inputs"]) +
                       ")";
    const auto& attributes = n["attributes"];
    for (std::size_t a = 0; a < attributes.size(); ++a) {
      text += (a ? ", " : " {") + attributes[a]["name"].get<std::string>() + "=" +
              attributes[a]["value"].get<std::string>();
    }
    line(indent, attributes.empty() ? text : text + "}");
    for (const nlohmann::json& a : attributes) subgraphs(a, indent + 1);
  }

  // "then_branch:" over a GRAPH attribute's graph, "branches[i]:" over each of a GRAPHS one.
  void subgraphs(const nlohmann::json& attribute, std::size_t indent) {
    if (!attribute.contains("graphs")) return;
    const std::string name = attribute["name"].get<std::string>();
    const bool one = attribute["type"].get<std::string>() == "GRAPH";
    const auto& graphs = attribute["graphs"];
    for (std::size_t i = 0; i < graphs.size(); ++i) {
      line(indent, one ? name + ":" : name + "[" + std::to_string(i) + "]:");
      graph(graphs[i], indent + 1);
    }
  }

  std::ostream& out_;
};

int run_graph(const GraphArgs& args) {
  OpenOptions options;
  options.mode = args.load.mode();
  options.remote = args.remote;
  const Model model = Model::open(args.model, options);
  const nlohmann::json walked = graph_json(model, args.depth);
  if (args.json) {
    print_json(std::cout, walked);
  } else {
    GraphText(std::cout).model(walked);
  }
  return kExitOk;
}

}  // namespace

void add_graph_verb(CLI::App& app) {
  auto args = std::make_shared<GraphArgs>();
  CLI::App* sub = app.add_subcommand(
      "graph",
      "Print the nodes as `outputs = Op[domain](inputs) {attributes}`, subgraphs indented");
  sub->add_option("MODEL", args->model, "the .onnx file")->required();
  add_remote_flags(sub, args->remote);
  sub->add_option("--depth", args->depth,
                  "show subgraphs (If, Loop, Scan bodies) down to N levels; 0: the main graph only")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--json", args->json, "the same walk as one JSON object");
  add_load_mode_option(sub, args->load);
  add_verb(sub, [args] { return run_graph(*args); });
}

}  // namespace onnxmap::cli
