// NodeGraph's first passes (node_graph.hpp): each value name interned once, each node's fields
// read once, who makes and who reads each value. Every later pass works on value ids: a graph
// of 300,000 nodes hashes each name once, not once per pass.

#include <unordered_set>

#include "node_graph.hpp"

namespace onnxmap::cli::viewer {

std::uint32_t NodeGraph::intern(std::string_view name) {
  const auto [v, fresh] = values_.intern(name);
  if (fresh) {
    producer_of_.push_back(kNone);
    initializer_of_.push_back(kNone);
    value_flags_.push_back(0);
  }
  return v;
}

std::uint32_t NodeGraph::find_value(std::string_view name) const {
  return values_.find(name);
}

// The graph's initializers, inputs, outputs and declared types.
void NodeGraph::index_values() {
  initializer_list_ = graph_->initializers();
  // Most nodes make one value: about one value per node and initializer.
  const std::size_t values = nodes_.size() + initializer_list_.size() + 16;
  values_.reserve(values);
  producer_of_.reserve(values);
  initializer_of_.reserve(values);
  value_flags_.reserve(values);
  for (std::uint32_t i = 0; i < initializer_list_.size(); ++i) {
    const std::uint32_t v = intern(initializer_list_[i].name());
    if (initializer_of_[v] == kNone) initializer_of_[v] = i;
  }
  for (const ValueInfo info : graph_->inputs()) {
    const std::uint32_t v = intern(info.name());
    value_flags_[v] |= kGraphInput;
    if (initializer_of_[v] == kNone) {
      value_flags_[v] |= kDrawnInput;
      inputs_.push_back(info.name());
    }
    declared_types_.emplace(info.name(), info.type());
  }
  for (const ValueInfo info : graph_->outputs()) {
    value_flags_[intern(info.name())] |= kGraphOutput;
    outputs_.push_back(info.name());
    declared_types_.emplace(info.name(), info.type());
  }
  for (const ValueInfo v : graph_->value_infos()) declared_types_.emplace(v.name(), v.type());
}

// Each node's name, op and values (their ids), who makes each value (the first node that
// does), then keys.
void NodeGraph::index_nodes() {
  const std::size_t n = nodes_.size();
  // Ops by qualified name, and (no string made per node) ai.onnx ops by their type's view.
  std::unordered_map<std::string, std::uint32_t> op_index;
  std::unordered_map<std::string_view, std::uint32_t> onnx_op_index;
  const auto op_of = [&](const Node& node) {
    const std::string_view domain = node.domain(), type = node.op_type();
    const bool onnx = is_default_domain(domain);
    if (const auto found = onnx ? onnx_op_index.find(type) : onnx_op_index.end();
        found != onnx_op_index.end()) {
      return found->second;
    }
    const std::string qualified = (onnx ? "" : std::string(domain) + ".") + std::string(type);
    const auto [op, fresh] =
        op_index.try_emplace(qualified, static_cast<std::uint32_t>(op_names_.size()));
    if (fresh) {
      op_names_.push_back(qualified);
      op_types_.push_back(type);
      op_domains_.push_back(domain);
    }
    if (onnx) onnx_op_index.emplace(type, op->second);
    return op->second;
  };
  names_.reserve(n);
  op_of_.reserve(n);
  node_begin_.reserve(n + 1);
  node_outputs_at_.reserve(n);
  node_values_.reserve(3 * n);
  for (std::uint32_t id = 0; id < n; ++id) {
    const Node& node = nodes_[id];
    names_.push_back(node.name());
    op_of_.push_back(op_of(node));
    node_begin_.push_back(static_cast<std::uint32_t>(node_values_.size()));
    for (const std::string_view input : node.inputs()) {
      node_values_.push_back(input.empty() ? kNone : intern(input));
    }
    node_outputs_at_.push_back(static_cast<std::uint32_t>(node_values_.size()));
    for (const std::string_view output : node.outputs()) {
      const std::uint32_t v = output.empty() ? kNone : intern(output);
      node_values_.push_back(v);
      if (v != kNone && producer_of_[v] == kNone) producer_of_[v] = id;
    }
  }
  node_begin_.push_back(static_cast<std::uint32_t>(node_values_.size()));
  index_keys();
}

// Keys are unique: a node's name, the first time it is given; else "OpType#id", with "'"
// added while a name (of any node) or an earlier key is spelled so. The names are gathered at
// the first key made: most graphs name every node once and need none.
void NodeGraph::index_keys() {
  const std::size_t n = nodes_.size();
  NameTable taken, names;
  taken.reserve(n);
  keys_.reserve(n);
  for (std::uint32_t id = 0; id < n; ++id) {
    const std::string_view name = names_[id];
    if (!name.empty() && taken.intern(name).second) {
      keys_.push_back(name);
      continue;
    }
    if (names.size() == 0) {
      names.reserve(n);
      for (const std::string_view named : names_) names.intern(named);
    }
    std::string made = std::string(op_types_[op_of_[id]]) + "#" + std::to_string(id);
    while (names.contains(made) || taken.contains(made)) made += "'";
    keys_.push_back(made_keys_.emplace_back(std::move(made)));
    taken.intern(keys_.back());
  }
}

// Who reads each value (readers_of): each node once per input that reads it, in node order,
// then `nested_reads` (value, node), in order.
void NodeGraph::index_readers(
    const std::vector<std::pair<std::uint32_t, std::uint32_t>>& nested_reads) {
  const std::size_t n = nodes_.size(), m = values_.size();
  reader_begin_.assign(m + 1, 0);
  for (std::uint32_t id = 0; id < n; ++id) {
    for (const std::uint32_t v : inputs_of(id)) {
      if (v != kNone) ++reader_begin_[v + 1];
    }
  }
  for (const auto& [v, id] : nested_reads) ++reader_begin_[v + 1];
  for (std::size_t v = 0; v < m; ++v) reader_begin_[v + 1] += reader_begin_[v];
  readers_.resize(reader_begin_[m]);
  std::vector<std::uint32_t> filled(reader_begin_.begin(), reader_begin_.end() - 1);
  for (std::uint32_t id = 0; id < n; ++id) {
    for (const std::uint32_t v : inputs_of(id)) {
      if (v != kNone) readers_[filled[v]++] = id;
    }
  }
  for (const auto& [v, id] : nested_reads) readers_[filled[v]++] = id;
}

// The producers of each node's inputs and their names, in one array each (input_begin_), and
// how many of its inputs are drawn as the graph's inputs; what a node's subgraphs read
// (`subgraph_reads`, in node order) counts as its inputs, after its own.
void NodeGraph::index_producers(
    const std::vector<std::pair<std::uint32_t, std::uint32_t>>& subgraph_reads) {
  const std::size_t n = nodes_.size();
  input_begin_.reserve(n + 1);
  graph_input_reads_.reserve(n);
  input_producers_.reserve(node_values_.size());
  input_values_.reserve(node_values_.size());
  auto nested = subgraph_reads.begin();
  for (std::uint32_t id = 0; id < n; ++id) {
    input_begin_.push_back(static_cast<std::uint32_t>(input_producers_.size()));
    std::uint32_t graph_inputs = 0;
    const auto read = [&](std::uint32_t v) {
      const std::uint32_t p = producer_of_[v];
      if (p == kNone) {
        graph_inputs += (value_flags_[v] & kDrawnInput) != 0;
        return;
      }
      input_producers_.push_back(p);
      input_values_.push_back(values_.name(v));
    };
    for (const std::uint32_t v : inputs_of(id)) {
      if (v != kNone) read(v);
    }
    for (; nested != subgraph_reads.end() && nested->second == id; ++nested) read(nested->first);
    graph_input_reads_.push_back(graph_inputs);
  }
  input_begin_.push_back(static_cast<std::uint32_t>(input_producers_.size()));
}

namespace {

// The values the graphs of `node`'s attributes read and do not make (nor declare as inputs or
// initializers), nested graphs included, into `free` (`depth` bounds a hostile nesting).
void free_values(const Node& node, std::vector<std::string_view>& free, int depth);

void free_values(const Graph& graph, std::vector<std::string_view>& free, int depth) {
  std::unordered_set<std::string_view> made;
  for (const ValueInfo v : graph.inputs()) made.insert(v.name());
  for (const Tensor& t : graph.initializers()) made.insert(t.name());
  std::vector<std::string_view> read;
  for (const Node node : graph.nodes()) {
    for (const std::string_view input : node.inputs()) read.push_back(input);
    free_values(node, read, depth);
    for (const std::string_view output : node.outputs()) made.insert(output);
  }
  for (const std::string_view v : read) {
    if (!v.empty() && !made.contains(v)) free.push_back(v);
  }
}

void free_values(const Node& node, std::vector<std::string_view>& free, int depth) {
  if (depth <= 0) return;
  for (const Attribute a : node.attributes()) {
    if (const auto g = a.g()) free_values(*g, free, depth - 1);
    for (const Graph g : a.graphs()) free_values(g, free, depth - 1);
  }
}

}  // namespace

// What the subgraphs of each node read of the graphs around them: of this graph's values, as
// inputs of that node (a control-flow node reads what its branches read, so that an If whose
// branches hold the network is wired to the graph's inputs); in a subgraph (`nested`), values
// of the graphs around it too, drawn as its inputs. A nested graph's own nodes reading outer
// values directly mark them alike. Returned: (value, node), for index_readers.
std::vector<std::pair<std::uint32_t, std::uint32_t>> NodeGraph::index_subgraph_reads(bool nested) {
  const auto inside = [&](std::uint32_t v) {
    return producer_of_[v] != kNone || initializer_of_[v] != kNone ||
           (value_flags_[v] & kGraphInput) != 0;
  };
  const auto mark_outer = [&](std::uint32_t v) {
    if ((value_flags_[v] & kOuter) != 0) return;
    value_flags_[v] |= kOuter | kDrawnInput;
    inputs_.push_back(values_.name(v));
  };
  std::vector<std::pair<std::uint32_t, std::uint32_t>> nested_reads;
  for (std::uint32_t id = 0; id < nodes_.size(); ++id) {
    for (const std::uint32_t v : inputs_of(id)) {
      if (nested && v != kNone && !inside(v)) mark_outer(v);
    }
    std::vector<std::string_view> free;
    free_values(nodes_[id], free, 64);
    std::unordered_set<std::uint32_t> counted;
    for (const std::string_view name : free) {
      const std::uint32_t v = intern(name);
      if (!counted.insert(v).second) continue;
      if (!inside(v)) {
        if (!nested) continue;  // read from nowhere: check reports it
        mark_outer(v);
      } else if (initializer_of_[v] != kNone && producer_of_[v] == kNone) {
        continue;  // a weight: drawn inside, as parameters are
      }
      nested_reads.emplace_back(v, id);
    }
  }
  return nested_reads;
}

}  // namespace onnxmap::cli::viewer
