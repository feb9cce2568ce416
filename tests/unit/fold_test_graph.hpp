#pragma once
// Small graphs for the folding's unit tests (fold_rules_test.cpp, fold_levels_test.cpp), built
// the way NodeGraph builds them from a model (tools/onnxmap/viewer/node_graph.cpp): values
// first, then nodes in graph order, then finish(). The names live in the test graph.

#include <deque>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "viewer/fold_graph.hpp"

namespace onnxmap::cli::viewer {

class TestGraph {
 public:
  struct NodeSpec {
    NodeSpec(std::string op_type, std::string node_name, std::vector<std::string> in,
             std::vector<std::string> out, std::string module_scope = "")
        : op(std::move(op_type)),
          name(std::move(node_name)),
          inputs(std::move(in)),
          outputs(std::move(out)),
          module(std::move(module_scope)) {}
    std::string op, name;
    std::vector<std::string> inputs, outputs;
    std::string module;  // the module path's scope of its metadata ("" none)
  };

  TestGraph& input(std::string name) {
    inputs_.push_back(std::move(name));
    return *this;
  }
  TestGraph& output(std::string name) {
    outputs_.push_back(std::move(name));
    return *this;
  }
  TestGraph& initializer(std::string name) {
    initializers_.push_back(std::move(name));
    return *this;
  }
  TestGraph& node(NodeSpec spec) {
    nodes_.push_back(std::move(spec));
    return *this;
  }
  // The node ids are the order of node() calls.
  const FoldGraph& finish(bool nested = false) {
    for (const std::string& name : initializers_) graph_.add_initializer(name);
    for (const std::string& name : inputs_) graph_.add_graph_input(name);
    for (const std::string& name : outputs_) graph_.add_graph_output(name);
    for (const NodeSpec& spec : nodes_) {
      const std::vector<std::string_view> in(spec.inputs.begin(), spec.inputs.end());
      const std::vector<std::string_view> out(spec.outputs.begin(), spec.outputs.end());
      graph_.add_node({spec.op, "", spec.name, spec.module, false}, in, out);
    }
    graph_.finish(nested);
    return graph_;
  }
  [[nodiscard]] const FoldGraph& graph() const { return graph_; }

 private:
  // Deques: the graph keeps views of these strings.
  std::deque<std::string> inputs_, outputs_, initializers_;
  std::deque<NodeSpec> nodes_;
  FoldGraph graph_;
};

}  // namespace onnxmap::cli::viewer
