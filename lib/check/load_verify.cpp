// verify_as_loaded (verify.hpp): each whole tensor of a plan matched with its manifest entry
// before the load, then hashed on the loader's threads as it lands.

#include <map>

#include "io/digest.hpp"
#include "onnxmap/verify.hpp"

namespace onnxmap {

LandedVerifier verify_as_loaded(const Manifest& manifest, std::span<const LoadItem> plan) {
  if (manifest.tensors.empty()) {
    throw Error(ErrorKind::invalid_argument,
                "the manifest has no tensor digests (a signing tool's payload lists files: "
                "verify those with `onnxmap verify`)");
  }
  std::map<std::string_view, const TensorDigest*> by_path;
  for (const TensorDigest& t : manifest.tensors) by_path[t.path] = &t;
  // The manifest's entry of each item, or null for one not verified.
  auto expected = std::make_shared<std::vector<TensorDigest>>();
  auto index = std::make_shared<std::vector<std::size_t>>(plan.size(), SIZE_MAX);
  LandedVerifier out;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const LoadItem& item = plan[i];
    const bool whole = item.row_begin == 0 && item.row_end == kAllRows;
    const auto found = whole ? by_path.find(item.tensor.path()) : by_path.end();
    if (found == by_path.end()) {
      ++out.not_verifiable;
      continue;
    }
    (*index)[i] = expected->size();
    expected->push_back(*found->second);
  }
  out.verified = std::make_shared<std::atomic<std::uint64_t>>(0);
  out.on_landed = [expected, index, verified = out.verified,
                   algorithm = manifest.algorithm](const LoadedTensor& t) {
    const std::size_t at = (*index)[t.item];
    if (at == SIZE_MAX) return;
    const TensorDigest& want = (*expected)[at];
    const std::string got = detail::digest_hex(algorithm, t.bytes);
    if (got != want.digest) {
      throw Error(ErrorKind::bad_tensor,
                  "tensor '" + want.name + "' in '" + want.file +
                      "': " + std::string(to_string(algorithm)) + " digest " + got +
                      ", the manifest's " + want.digest + "; the load stopped",
                  Error::kNoOffset, want.path);
    }
    ++*verified;
  };
  return out;
}

}  // namespace onnxmap
