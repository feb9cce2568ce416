// dump_json of an opened model: its file's bytes, fetched first when the model came by URL.

#include "onnxmap/model.hpp"
#include "view/view_access.hpp"

namespace onnxmap {

std::string dump_json(const Model& model, const DumpOptions& options) {
  const detail::ModelIndex& index = *detail::ViewAccess::index(model);
  if (index.fetcher && !options.omit_data) index.fetcher->fetch("", 0, index.file.size());
  try {
    return dump_json(index.file.bytes(), index.kind(0), options);
  } catch (const Error& e) {
    throw e.in_context(index.display_name, "");
  }
}

}  // namespace onnxmap
