// Names and order, scope by scope, as the ONNX IR defines them: a graph sees its inputs, its
// initializers, the outputs of its earlier nodes, and whatever its outer graphs had defined when
// the node holding it was reached. A value is assigned once (SSA) in its scope and the scopes
// around it; sibling scopes (the two branches of an If) may reuse names. Subgraph inputs and
// initializers may shadow outer names, as onnx's checker allows.

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "check/checks.hpp"

namespace onnxmap::detail {

namespace {

enum class Origin : std::uint8_t { input, initializer, node };

struct Definition {
  Origin origin;
  std::uint32_t index;  // position among the graph's inputs, initializers or nodes
};

std::string describe(Definition d, bool outer) {
  std::string text;
  switch (d.origin) {
    case Origin::input: text = "input[" + std::to_string(d.index) + "]"; break;
    case Origin::initializer: text = "initializer[" + std::to_string(d.index) + "]"; break;
    case Origin::node: text = "node[" + std::to_string(d.index) + "]"; break;
  }
  return text + (outer ? " of an outer graph" : "");
}

struct Scope {
  explicit Scope(const Scope* enclosing = nullptr) : outer(enclosing) {}

  const Scope* outer;
  std::unordered_map<std::string_view, Definition> defined;      // so far, in walk order
  std::unordered_map<std::string_view, std::uint32_t> producer;  // first node making each name
  std::uint32_t current = 0;  // the node being checked (or holding the subgraph being checked)
  // Training graphs read the inference graph's names but are graphs of their own: assigning one
  // of its names there is no SSA violation.
  bool reassignable = false;
};

// Where a name stands when node `current` of the innermost scope reads it.
struct Lookup {
  enum class Result { defined, later, undefined } result = Result::undefined;
  Definition definition{};
  bool outer = false;
};

Lookup look_up(const Scope& scope, std::string_view name, bool for_assignment = false) {
  for (const Scope* s = &scope; s != nullptr; s = s->outer) {
    if (for_assignment && s->reassignable) break;
    if (const auto it = s->defined.find(name); it != s->defined.end()) {
      return {Lookup::Result::defined, it->second, s != &scope};
    }
  }
  for (const Scope* s = &scope; s != nullptr; s = s->outer) {
    if (const auto it = s->producer.find(name);
        it != s->producer.end() && it->second >= s->current) {
      return {Lookup::Result::later, {Origin::node, it->second}, s != &scope};
    }
  }
  return {};
}

// The operator sets one body of nodes may use: the model's, or a function's own.
class Imports {
 public:
  explicit Imports(const std::vector<OperatorSetId>& opsets) {
    for (const OperatorSetId& id : opsets) domains_.insert(domain_name(id.domain));
  }
  [[nodiscard]] bool has(std::string_view domain) const {
    return domains_.contains(domain_name(domain));
  }

  // Nodes whose domain is not imported, reported once per domain after the walk.
  struct Missing {
    std::string first_path;
    std::string first_op;
    std::uint64_t offset = 0;
    std::uint64_t nodes = 0;
  };
  std::unordered_map<std::string_view, Missing> missing;
  std::vector<std::string_view> missing_order;

 private:
  // Keyed by domain_name, so that both spellings of the default operator set are one key.
  std::unordered_set<std::string_view> domains_;
};

class ScopeChecker {
 public:
  ScopeChecker(const Model& model, CheckReport& report) : model_(model), report_(report) {}

  void run() {
    const std::int64_t ir = model_.ir_version();
    Imports model_imports(model_.opset_imports());
    if (ir >= 3 && model_.opset_imports().empty()) {
      add_problem(report_, ProblemKind::missing_opset, "opset_import",
                  "no opset_import: models of IR version 3 and later must import the operator "
                  "sets their nodes use");
    }
    Scope main;
    if (const auto graph = model_.graph()) {
      check_graph(*graph, "graph", main, model_imports);
    } else {
      add_problem(report_, ProblemKind::structure, "graph", "the model has no graph");
    }
    // Training graphs may use what the inference graph defines.
    main.current = UINT32_MAX;
    main.reassignable = true;
    const auto training = model_.training_info();
    for (std::size_t i = 0; i < training.size(); ++i) {
      const std::string path = "training_info[" + std::to_string(i) + "]";
      if (const auto g = training[i].initialization()) {
        Scope scope(&main);
        check_graph(*g, path + ".initialization", scope, model_imports);
      }
      if (const auto g = training[i].algorithm()) {
        Scope scope(&main);
        check_graph(*g, path + ".algorithm", scope, model_imports);
      }
    }
    report_missing(model_imports);
    const auto functions = model_.functions();
    // A function is called by (domain, name, overload): two with the same key are ambiguous.
    std::unordered_map<std::string, std::size_t> function_keys;
    for (std::size_t i = 0; i < functions.size(); ++i) {
      const Function f = functions[i];
      const std::string path = "functions[" + std::to_string(i) + "]";
      std::string key =
          std::string(f.domain()) + '\0' + std::string(f.name()) + '\0' + std::string(f.overload());
      const auto [it, added] = function_keys.emplace(std::move(key), i);
      if (!added) {
        add_problem(
            report_, ProblemKind::duplicate_function, path,
            "function '" + std::string(f.name()) + "' of domain '" + std::string(f.domain()) + "'" +
                (f.overload().empty() ? "" : " overload '" + std::string(f.overload()) + "'") +
                " is also functions[" + std::to_string(it->second) + "]",
            detail::offset_of(f));
      }
      check_function(f, path);
    }
  }

 private:
  void check_graph(const Graph& graph, const std::string& path, Scope& scope, Imports& imports) {
    const auto inputs = graph.inputs();
    for (std::uint32_t i = 0; i < inputs.size(); ++i) {
      const std::string_view name = inputs[i].name();
      if (name.empty()) continue;
      const auto [it, added] = scope.defined.emplace(name, Definition{Origin::input, i});
      if (!added) {
        add_problem(
            report_, ProblemKind::duplicate_name, path + ".input[" + std::to_string(i) + "]",
            "graph input '" + std::string(name) + "' is also " + describe(it->second, false),
            detail::offset_of(inputs[i]));
      }
    }
    std::uint32_t init_index = 0;
    for (const Tensor& t : graph.initializers()) {
      define_initializer(t.name(), path + ".initializer[" + std::to_string(init_index) + "]",
                         init_index, detail::offset_of(t), scope);
      ++init_index;
    }
    const auto sparse = graph.sparse_initializers();
    for (std::uint32_t i = 0; i < sparse.size(); ++i) {
      const auto values = sparse[i].values();
      if (!values) continue;
      define_initializer(values->name(), path + ".sparse_initializer[" + std::to_string(i) + "]",
                         init_index + i, detail::offset_of(sparse[i]), scope);
    }
    check_nodes(graph.nodes(), path, scope, imports);
    const auto outputs = graph.outputs();
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      check_output(outputs[i].name(), path + ".output[" + std::to_string(i) + "]",
                   detail::offset_of(outputs[i]), scope);
    }
  }

  void define_initializer(std::string_view name, const std::string& path, std::uint32_t index,
                          std::uint64_t offset, Scope& scope) {
    if (name.empty()) return;
    const auto [it, added] = scope.defined.emplace(name, Definition{Origin::initializer, index});
    if (added) {
      // IR versions 1 to 3 require every initializer to be a graph input too.
      if (scope.outer == nullptr && model_.ir_version() >= 1 && model_.ir_version() <= 3) {
        add_problem(report_, ProblemKind::ir_version, path,
                    "initializer '" + std::string(name) +
                        "' is not a graph input, which IR version " +
                        std::to_string(model_.ir_version()) + " requires (IR 4 lifted this)",
                    offset);
      }
      return;
    }
    if (it->second.origin == Origin::input) {
      // An initializer may give a graph input its default value; IR 1-3 even require it.
      it->second = Definition{Origin::initializer, index};
      return;
    }
    add_problem(report_, ProblemKind::duplicate_name, path,
                "initializer '" + std::string(name) + "' is given again; first as " +
                    describe(it->second, false),
                offset);
  }

  void check_nodes(const ViewRange<Node>& nodes, const std::string& path, Scope& scope,
                   Imports& imports) {
    scope.producer = value_producers(nodes);
    scope.defined.reserve(scope.defined.size() + nodes.size());
    for (std::uint32_t k = 0; k < nodes.size(); ++k) {
      scope.current = k;
      check_node(nodes[k], path + ".node[" + std::to_string(k) + "]", k, scope, imports);
    }
    scope.current = static_cast<std::uint32_t>(nodes.size());
  }

  void check_node(const Node& node, const std::string& path, std::uint32_t k, Scope& scope,
                  Imports& imports) {
    ++report_.nodes;
    const std::string_view domain = domain_name(node.domain());
    if (!imports.has(domain)) {
      auto [it, added] = imports.missing.try_emplace(domain);
      if (added) {
        imports.missing_order.push_back(domain);
        it->second = {path, std::string(node.op_type()), detail::offset_of(node), 0};
      }
      ++it->second.nodes;
    }
    const std::vector<std::string_view> inputs = node.inputs();
    for (std::size_t j = 0; j < inputs.size(); ++j) {
      if (inputs[j].empty()) continue;  // an optional input left out
      const Lookup found = look_up(scope, inputs[j]);
      if (found.result == Lookup::Result::defined) continue;
      // Text is built only for problems: a model may hold hundreds of thousands of inputs.
      const std::string where = path + ".input[" + std::to_string(j) + "]";
      const std::string quoted = "'" + std::string(inputs[j]) + "'";
      if (found.result == Lookup::Result::undefined) {
        add_problem(report_, ProblemKind::undefined_input, where,
                    quoted + " (input of " + std::string(node.op_type()) +
                        ") is not a graph input, an initializer, or an output of any node in "
                        "scope",
                    detail::offset_of(node));
      } else {
        const bool self = !found.outer && found.definition.index == k;
        add_problem(
            report_, ProblemKind::out_of_order, where,
            quoted +
                (self ? " is an output of this same node"
                      : " is produced only later, by " + describe(found.definition, found.outer)) +
                ": nodes must be in topological order",
            detail::offset_of(node));
      }
    }
    const auto attributes = node.attributes();
    for (std::size_t a = 0; a < attributes.size(); ++a) {
      const std::string attr_path = path + ".attribute[" + std::to_string(a) + "]";
      if (const auto g = attributes[a].g()) {
        Scope inner(&scope);
        check_graph(*g, attr_path + ".g", inner, imports);
      }
      const auto graphs = attributes[a].graphs();
      for (std::size_t i = 0; i < graphs.size(); ++i) {
        Scope inner(&scope);
        check_graph(graphs[i], attr_path + ".graphs[" + std::to_string(i) + "]", inner, imports);
      }
    }
    const std::vector<std::string_view> outputs = node.outputs();
    for (std::size_t j = 0; j < outputs.size(); ++j) {
      if (outputs[j].empty()) continue;  // an optional output left out
      const Lookup found = look_up(scope, outputs[j], true);
      if (found.result == Lookup::Result::defined) {
        add_problem(report_, ProblemKind::ssa, path + ".output[" + std::to_string(j) + "]",
                    "'" + std::string(outputs[j]) + "' is already defined by " +
                        describe(found.definition, found.outer) + ": a value is assigned once",
                    detail::offset_of(node));
        continue;
      }
      scope.defined.emplace(outputs[j], Definition{Origin::node, k});
    }
  }

  void check_output(std::string_view name, const std::string& path, std::uint64_t offset,
                    const Scope& scope) {
    if (name.empty() || look_up(scope, name).result == Lookup::Result::defined) return;
    add_problem(
        report_, ProblemKind::undefined_output, path,
        "output '" + std::string(name) + "' is not defined by any input, initializer or node",
        offset);
  }

  void check_function(const Function& function, const std::string& path) {
    Imports imports(function.opset_imports());
    Scope scope;
    const std::vector<std::string_view> inputs = function.inputs();
    for (std::uint32_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].empty()) continue;
      const auto [it, added] = scope.defined.emplace(inputs[i], Definition{Origin::input, i});
      if (!added) {
        add_problem(report_, ProblemKind::duplicate_name,
                    path + ".input[" + std::to_string(i) + "]",
                    "function input '" + std::string(inputs[i]) + "' is also " +
                        describe(it->second, false),
                    detail::offset_of(function));
      }
    }
    check_nodes(function.nodes(), path, scope, imports);
    const std::vector<std::string_view> outputs = function.outputs();
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      check_output(outputs[i], path + ".output[" + std::to_string(i) + "]",
                   detail::offset_of(function), scope);
    }
    report_missing(imports);
  }

  void report_missing(const Imports& imports) {
    for (const std::string_view domain : imports.missing_order) {
      const Imports::Missing& m = imports.missing.at(domain);
      const std::string shown = is_default_domain(domain) ? "the default domain (ai.onnx)"
                                                          : "domain '" + std::string(domain) + "'";
      add_problem(report_, ProblemKind::missing_opset, m.first_path + ".domain",
                  shown + " of " + m.first_op + " has no opset_import" +
                      (m.nodes > 1 ? " (" + std::to_string(m.nodes) + " nodes use it)" : ""),
                  m.offset);
    }
  }

  const Model& model_;
  CheckReport& report_;
};

}  // namespace

std::unordered_map<std::string_view, std::uint32_t> value_producers(const ViewRange<Node>& nodes) {
  std::unordered_map<std::string_view, std::uint32_t> producer;
  producer.reserve(nodes.size());
  for (std::uint32_t k = 0; k < nodes.size(); ++k) {
    for (const std::string_view out : nodes[k].outputs()) {
      if (!out.empty()) producer.emplace(out, k);
    }
  }
  return producer;
}

void check_scopes(const Model& model, CheckReport& report) {
  ScopeChecker(model, report).run();
}

}  // namespace onnxmap::detail
