// Which module a node computes for, and who reads each initializer (views.hpp: module_path,
// initializer_readers).

#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "onnxmap/tensor.hpp"
#include "onnxmap/views.hpp"

namespace onnxmap {

namespace {

// The module path in torch's `namespace` text: its parts "module: class" cut at '/', the last
// one the traced op's, not a module; a part relative to the one before it is joined to it (the
// exporter has written full paths and relative ones). "" where the text is not in that form.
std::string namespace_module(std::string_view text) {
  std::string module;
  for (std::size_t cut = text.find('/'); cut != std::string_view::npos; cut = text.find('/')) {
    const std::string_view part = text.substr(0, cut);
    text.remove_prefix(cut + 1);
    const std::size_t colon = part.find(": ");
    if (colon == std::string_view::npos) return {};
    const std::string_view name = part.substr(0, colon);
    if (name.empty()) continue;
    const bool full = !module.empty() && name.size() > module.size() && name.starts_with(module) &&
                      name[module.size()] == '.';
    module = module.empty() || full ? std::string(name) : module + "." + std::string(name);
  }
  return module;
}

// "/model/layers.0/mlp/up_proj/MatMul" -> "model.layers.0.mlp.up_proj"; "" without a '/'.
std::string name_module(std::string_view name) {
  const std::size_t last = name.rfind('/');
  if (last == std::string_view::npos) return {};
  std::string module;
  for (std::string_view rest = name.substr(0, last); !rest.empty();) {
    const std::size_t cut = rest.find('/');
    const std::string_view segment = rest.substr(0, cut);
    if (!segment.empty()) module += (module.empty() ? "" : ".") + std::string(segment);
    rest = cut == std::string_view::npos ? std::string_view() : rest.substr(cut + 1);
  }
  return module;
}

}  // namespace

std::string module_path(const Node& node) {
  for (const StringStringEntry& entry : node.metadata_props()) {
    if (entry.key == "namespace") return namespace_module(entry.value);
  }
  return name_module(node.name());
}

std::unordered_map<std::string_view, InitializerReader> initializer_readers(const Graph& graph) {
  std::unordered_set<std::string_view> initializers;
  for (const Tensor& t : graph.initializers()) initializers.insert(t.name());
  std::unordered_map<std::string_view, InitializerReader> readers;
  const ViewRange<Node> nodes = graph.nodes();
  std::uint32_t k = 0;
  for (const Node node : nodes) {
    std::uint32_t input = 0;
    for (const std::string_view name : node.inputs()) {
      if (initializers.contains(name) && !readers.contains(name)) {
        readers.emplace(name, InitializerReader{k, input, module_path(node)});
      }
      ++input;
    }
    ++k;
  }
  return readers;
}

}  // namespace onnxmap
