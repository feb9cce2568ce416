#pragma once
// Opening a model by URL: its metadata is fetched into a sparse local mirror (remote/), the
// unchanged index pass runs over the mirror, and the views fetch payload ranges on demand through
// the PayloadFetcher hook (io/payload_fetcher.hpp) before handing out a view.

#include <memory>
#include <string_view>

#include "index/model_index.hpp"

namespace onnxmap::detail {

// The index of the model at `url`; the returned pointer keeps the mirror and its connections
// alive. Throws onnxmap::Error (http for the server's failures, the index's kinds for the file).
[[nodiscard]] std::shared_ptr<const ModelIndex> open_remote(std::string_view url,
                                                            const Options& options,
                                                            MessageKind root, IndexScope scope);

// For a model opened by URL: fetches every byte of the model file and every external payload,
// so that code reading the files beneath the views (the writer's verbatim copy) sees them whole.
// Nothing for a local model.
void fetch_whole_model(const ModelIndex& index);

}  // namespace onnxmap::detail
