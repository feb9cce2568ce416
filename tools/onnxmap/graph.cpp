// onnxmap graph MODEL [--depth N]: the model's nodes as `outputs = Op[domain](inputs) {attrs}`,
// with graph inputs, initializers and outputs by type and shape, subgraphs (If branches, Loop and
// Scan bodies) indented under their node, and model-local functions after the main graph.

#include <iostream>
#include <string>

#include "attribute_text.hpp"
#include "load_mode_option.hpp"
#include "onnxmap/onnxmap.hpp"
#include "remote_flags.hpp"
#include "verbs.hpp"

namespace onnxmap::cli {

namespace {

struct GraphArgs {
  std::string model;
  int depth = -1;  // subgraph levels to show; -1: all
  LoadModeOption load;
  RemoteOptions remote;
};

std::string name_text(std::string_view name) {
  return name.empty() ? std::string("\"\"") : std::string(name);
}

std::string names_text(const Names& names) {
  std::string out;
  for (const std::string_view name : names) out += (out.empty() ? "" : ", ") + name_text(name);
  return out;
}

std::string type_text(const Type& type) {
  return type.kind() == Type::Kind::none ? std::string("?") : type.to_string();
}

class GraphPrinter {
 public:
  GraphPrinter(std::ostream& out, int max_depth) : out_(out), max_depth_(max_depth) {}

  void model(const Model& model) {
    out_ << "model: ir_version " << model.ir_version() << ", opset_import";
    const auto opsets = model.opset_imports();
    if (opsets.empty()) out_ << " (none)";
    for (std::size_t i = 0; i < opsets.size(); ++i) {
      out_ << (i ? ", " : " ") << (opsets[i].domain.empty() ? "ai.onnx" : opsets[i].domain) << ' '
           << opsets[i].version;
    }
    out_ << '\n';
    if (const auto g = model.graph()) graph(*g, 0, 0);
    for (const Function f : model.functions()) function(f);
  }

 private:
  void line(int indent, const std::string& text) {
    out_ << std::string(static_cast<std::size_t>(indent) * 2, ' ') << text << '\n';
  }

  void graph(const Graph& g, int indent, int level) {
    line(indent, "graph " + (g.name().empty() ? std::string("(unnamed)") : std::string(g.name())));
    for (const ValueInfo input : g.inputs()) {
      line(indent + 1, "input  " + name_text(input.name()) + ": " + type_text(input.type()));
    }
    for (const Tensor& t : g.initializers()) {
      line(indent + 1, "init   " + name_text(t.name()) + ": " + tensor_text(t));
    }
    for (const SparseTensor s : g.sparse_initializers()) {
      const auto values = s.values();
      line(indent + 1, "init   " + name_text(values ? values->name() : std::string_view{}) + ": " +
                           sparse_tensor_text(s));
    }
    for (const Node n : g.nodes()) node(n, indent + 1, level);
    for (const ValueInfo output : g.outputs()) {
      line(indent + 1, "output " + name_text(output.name()) + ": " + type_text(output.type()));
    }
  }

  void function(const Function& f) {
    const std::string domain = f.domain().empty() ? "" : std::string(f.domain()) + ".";
    line(0,
         "function " + domain + std::string(f.name()) + "(" + names_text(f.inputs()) + ") -> (" +
             names_text(f.outputs()) + ")" +
             (f.attribute_names().empty() ? "" : " attributes " + names_text(f.attribute_names())));
    for (const Node n : f.nodes()) node(n, 1, 0);
  }

  void node(const Node& n, int indent, int level) {
    std::string text = names_text(n.outputs()) + " = " + std::string(n.op_type());
    if (!n.domain().empty()) text += "[" + std::string(n.domain()) + "]";
    text += "(" + names_text(n.inputs()) + ")";
    const auto attributes = n.attributes();
    if (!attributes.empty()) {
      text += " {";
      for (std::size_t a = 0; a < attributes.size(); ++a) {
        text += (a ? ", " : "") + std::string(attributes[a].name()) + "=" +
                attribute_value_text(attributes[a]);
      }
      text += "}";
    }
    line(indent, text);
    if (max_depth_ >= 0 && level >= max_depth_) return;
    for (const Attribute attribute : attributes) {
      const std::string name(attribute.name());
      if (const auto g = attribute.g()) {
        line(indent + 1, name + ":");
        graph(*g, indent + 2, level + 1);
      }
      const auto graphs = attribute.graphs();
      for (std::size_t i = 0; i < graphs.size(); ++i) {
        line(indent + 1, name + "[" + std::to_string(i) + "]:");
        graph(graphs[i], indent + 2, level + 1);
      }
    }
  }

  std::ostream& out_;
  int max_depth_;
};

int run_graph(const GraphArgs& args) {
  OpenOptions options;
  options.load = args.load.mode();
  options.remote = args.remote;
  const Model model = Model::open(args.model, options);
  GraphPrinter(std::cout, args.depth).model(model);
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
  add_load_mode_option(sub, args->load);
  add_verb(sub, [args] { return run_graph(*args); });
}

}  // namespace onnxmap::cli
