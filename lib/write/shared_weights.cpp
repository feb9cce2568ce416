// SharedWeightsPlan: the checkpoint opened and matched, then, with share_transposed, the rewrite
// of each transposed match: the checkpoint's tensor becomes an initializer of the main graph
// (once, however many copies of it the exporter folded) and a Transpose node gives each copy's
// name its values.

#include <set>
#include <unordered_map>

#include "onnxmap/views.hpp"
#include "schema/fields.hpp"
#include "view/view_access.hpp"
#include "wire/wire.hpp"
#include "write/shared_weights.hpp"

namespace onnxmap::detail {

namespace {

using GP = schema::GraphProto;

// Every name the main graph uses: its inputs, outputs, initializers and nodes' values and names.
std::set<std::string, std::less<>> names_in(const Graph& graph) {
  std::set<std::string, std::less<>> names;
  for (const ValueInfo& v : graph.inputs()) names.emplace(v.name());
  for (const ValueInfo& v : graph.outputs()) names.emplace(v.name());
  for (const Tensor& t : graph.initializers()) names.emplace(t.name());
  for (const Node& node : graph.nodes()) {
    names.emplace(node.name());
    for (const std::string_view n : node.inputs()) names.emplace(n);
    for (const std::string_view n : node.outputs()) names.emplace(n);
  }
  return names;
}

// A name not in `names` (then added): `wanted`, else it with ".shared", ".shared2", ...
std::string unique_name(std::string wanted, std::set<std::string, std::less<>>& names) {
  std::string name = wanted;
  for (int n = 1; names.contains(name); ++n) {
    name = wanted + ".shared" + (n > 1 ? std::to_string(n) : "");
  }
  names.insert(name);
  return name;
}

// A GraphProto's node field: Transpose(input) -> output, perm [1, 0], in the default domain.
void append_transpose(wire::Writer& graph, std::string_view input, std::string_view output,
                      std::string_view name) {
  using NP = schema::NodeProto;
  using AP = schema::AttributeProto;
  wire::Writer perm;
  perm.field_string(AP::kName, "perm");
  perm.field_int64(AP::kInts, 1);
  perm.field_int64(AP::kInts, 0);
  perm.field_int32(AP::kType, static_cast<std::int32_t>(AttributeType::ints));
  wire::Writer node;
  node.field_string(NP::kInput, input);
  node.field_string(NP::kOutput, output);
  node.field_string(NP::kName, name);
  node.field_string(NP::kOpType, "Transpose");
  node.field_bytes(NP::kAttribute, perm.bytes());
  graph.field_bytes(GP::kNode, node.bytes());
}

}  // namespace

SharedWeightsPlan::SharedWeightsPlan(const Model& model, const WeightsFrom& options,
                                     const std::filesystem::path& model_folder,
                                     std::span<const std::uint32_t> candidates)
    : checkpoint_(open_checkpoint(options.source, model_folder)),
      entries_(ViewAccess::index(model)->tensors.size()) {
  const std::vector<WeightMatch> matches = match_weights(model, candidates, checkpoint_, options);
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    Entry& entry = entries_[candidates[i]];
    entry.kind = matches[i].kind;
    entry.checkpoint = matches[i].checkpoint;
    if (entry.kind == MatchKind::name || entry.kind == MatchKind::content) entry.use = Use::shared;
  }
  plan_transposes(model, options);
}

void SharedWeightsPlan::plan_transposes(const Model& model, const WeightsFrom& options) {
  const ModelIndex& index = *ViewAccess::index(model);
  const auto graph = model.graph();
  if (!graph) return;
  graph_record_ = ViewAccess::record(*graph);
  const std::uint32_t graph_record = graph_record_;
  const auto opsets = model.opset_imports();
  const bool default_domain = std::any_of(
      opsets.begin(), opsets.end(), [](const auto& o) { return is_default_domain(o.domain); });
  if (!options.share_transposed || !default_domain) return;
  std::set<std::string, std::less<>> names = names_in(*graph);
  std::set<std::string_view> inputs;
  for (const ValueInfo& v : graph->inputs()) inputs.insert(v.name());
  // A main-graph initializer (not also a graph input) can be replaced; the checkpoint's tensor
  // is named once in the graph: by an initializer sharing it as it is, else by the first
  // replacement.
  const auto replaceable = [&](std::uint32_t t) {
    const std::uint32_t message = index.tensors[t].message;
    return index.parent(message) == graph_record &&
           index.field_number(message) == GP::kInitializer &&
           !inputs.contains(index.tensors[t].name);
  };
  std::unordered_map<std::uint32_t, std::string> holder;  // checkpoint tensor -> graph name
  for (std::uint32_t t = 0; t < entries_.size(); ++t) {
    if (entries_[t].use == Use::shared && index.parent(index.tensors[t].message) == graph_record) {
      holder.emplace(entries_[t].checkpoint, std::string(index.tensors[t].name));
    }
  }
  wire::Writer nodes;
  for (std::uint32_t t = 0; t < entries_.size(); ++t) {
    Entry& entry = entries_[t];
    if (entry.kind != MatchKind::transposed || !replaceable(t)) continue;
    auto [it, added] = holder.try_emplace(entry.checkpoint);
    if (added) {
      it->second = unique_name(checkpoint_.tensors[entry.checkpoint].name, names);
      entry.initializer = it->second;
    }
    entry.use = added ? Use::checkpoint : Use::dropped;
    const std::string_view output = index.tensors[t].name;
    append_transpose(nodes, it->second, output,
                     unique_name("onnxmap.transpose." + std::string(output), names));
  }
  const auto bytes = nodes.bytes();
  nodes_.assign(bytes.begin(), bytes.end());
}

void SharedWeightsPlan::count(SharedWeights& shared) const {
  for (const Entry& entry : entries_) {
    if (entry.checkpoint == kNone) continue;
    const std::uint64_t bytes = checkpoint_.tensors[entry.checkpoint].length;
    TensorCount* into = nullptr;
    if (entry.use == Use::shared) {
      into = entry.kind == MatchKind::name ? &shared.by_name : &shared.by_content;
    } else if (entry.use == Use::own) {
      into = &shared.transposed_kept;
    } else {
      into = &shared.transposed;
    }
    ++into->tensors;
    into->bytes += bytes;
  }
}

}  // namespace onnxmap::detail
