// peek: the metadata of a model from a partial index (no nodes, no tensors).

#include "index/model_index.hpp"
#include "onnxmap/model.hpp"
#include "view/view_access.hpp"

namespace onnxmap {

namespace {

// The main graph's fields ModelSummary shows, empty when there is no graph.
ViewRange<ValueInfo> graph_values(const Model& model, bool inputs) {
  const auto graph = model.graph();
  if (!graph) return detail::ViewAccess::range<ValueInfo>(nullptr, {0, 0});
  return inputs ? graph->inputs() : graph->outputs();
}

}  // namespace

std::string_view ModelSummary::graph_name() const {
  const auto graph = model_.graph();
  return graph ? graph->name() : std::string_view{};
}

ViewRange<ValueInfo> ModelSummary::inputs() const& {
  return graph_values(model_, true);
}
ViewRange<ValueInfo> ModelSummary::outputs() const& {
  return graph_values(model_, false);
}

ModelSummary peek(const std::filesystem::path& path, const OpenOptions& options) {
  const auto root = schema::MessageKind::ModelProto;
  return ModelSummary(Model(detail::build_index(detail::open_source(path, options, root), root,
                                                options, detail::IndexScope::metadata)));
}

}  // namespace onnxmap
