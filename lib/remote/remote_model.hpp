#pragma once
// A model given by URL, as a sparse local mirror: its metadata is fetched at open, its payloads
// on demand through the fetcher (io/payload_fetcher.hpp).

#include <filesystem>
#include <memory>
#include <string_view>

#include "io/payload_fetcher.hpp"
#include "onnxmap/options.hpp"
#include "onnxmap/schema.hpp"

namespace onnxmap::detail {

struct Mirror {
  std::filesystem::path model_path;  // the mirror of the model file
  std::filesystem::path folder;      // where the mirrors of its external data files lie
  // Fills the mirrors; keeps them and the connections alive. Its indexed() drops a temporary
  // mirror's names (or writes a cache's record) once the index pass has opened the files.
  std::shared_ptr<PayloadFetcher> fetcher;
};

// Fetches the metadata of the model at `url` (root message `root`, nested at most `max_depth`
// deep) into a mirror, or trusts a cached one. Throws onnxmap::Error (http for the server's
// failures).
[[nodiscard]] Mirror open_mirror(std::string_view url, const RemoteOptions& options,
                                 schema::MessageKind root, int max_depth);

}  // namespace onnxmap::detail
