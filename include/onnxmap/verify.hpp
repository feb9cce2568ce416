#pragma once
// Weights verified: digests of a model's files and of each tensor's stored bytes (hash_model),
// a manifest holding them in JSON (docs/verify.md), and a model checked against one
// (verify_model): a flipped bit, a truncated or swapped file and a tensor moved within its file
// are each a mismatch naming the tensor or file and both digests.
//
// Threads: hash_model and verify_model read only their model, on threads of their own (one
// file at a time each, so a sharded checkpoint uses every core), and return when done.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnxmap/export.hpp"
#include "onnxmap/load.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/options.hpp"

namespace onnxmap {

enum class DigestAlgorithm : std::uint8_t {
  sha256,    // what model-signing tools list (the default)
  xxh3_128,  // XXH3's 128-bit hash: not cryptographic, at memory speed
  sha1,      // what ONNX's external data `checksum` key holds (check --data); not for manifests
};
// "sha256", "xxh3-128", "sha1", and back (nullopt for another name).
[[nodiscard]] ONNXMAP_API std::string_view to_string(DigestAlgorithm algorithm) noexcept;
[[nodiscard]] ONNXMAP_API std::optional<DigestAlgorithm> parse_digest_algorithm(
    std::string_view name) noexcept;

struct FileDigest {
  std::string file;  // the model file's name, or a data file's location as the model names it
  std::uint64_t size = 0;
  std::string digest;  // lowercase hex
};

struct TensorDigest {
  std::string name;          // Tensor::lookup_name()
  std::string path;          // Tensor::path(): which tensor of that name
  std::string file;          // as FileDigest::file
  std::uint64_t offset = 0;  // of its stored bytes in `file`
  std::uint64_t length = 0;
  std::string digest;
  // Digests of row slices [row_begin, row_end) along axis 0, as the ranks of a tensor-parallel
  // load read them (HashOptions::ranks), in increasing order of row_begin; each slice once.
  struct Rows {
    std::uint64_t row_begin = 0;
    std::uint64_t row_end = 0;
    std::string digest;
  };
  std::vector<Rows> rows;
};

struct Manifest {
  DigestAlgorithm algorithm = DigestAlgorithm::sha256;
  std::vector<FileDigest> files;      // the model file first, then its data files
  std::vector<TensorDigest> tensors;  // each tensor stored in raw_data or external data
  // A model-signing tool's payload: files named relative to the folder it signed (each of the
  // model's files matches the one whose name ends with its own), sizes unknown, no tensors;
  // files the model does not read (a tokenizer, a config) are not its concern.
  bool signed_files_only = false;
};

struct HashOptions {
  // hash_model's algorithm; verify_model takes the manifest's.
  DigestAlgorithm algorithm = DigestAlgorithm::sha256;
  // Threads hashing at once, the caller's among them; 0: one a core.
  unsigned threads = 0;
  // Tensor-parallel degrees: for each R, the digest of the rows each of R ranks reads of each
  // tensor that plan() cuts for R ranks (TensorDigest::rows), so that a rank's load verifies
  // its own rows (verify_as_loaded). Hashed from the same reads; empty: none.
  std::vector<unsigned> ranks;
  // Called once, when every digest is done, with the bytes hashed as both arguments.
  ProgressCallback progress;
};

// Every file's and every stored tensor's digest, each byte read once (a file's tensors are
// hashed from the reads of the file). Throws onnxmap::Error (io) for a read that fails.
[[nodiscard]] ONNXMAP_API Manifest hash_model(const Model& model, const HashOptions& options = {});

// The manifest as JSON (docs/verify.md), and back. parse_manifest also takes the payload a
// model-signing tool signs (its per-file SHA-256 list), which gives files and no tensors; it
// throws onnxmap::Error (invalid_argument) naming `name` for anything else.
[[nodiscard]] ONNXMAP_API std::string to_json(const Manifest& manifest);
[[nodiscard]] ONNXMAP_API Manifest parse_manifest(std::string_view json, const std::string& name);

struct Mismatch {
  std::string what;      // "tensor", or "file"
  std::string name;      // the tensor's name, or the file's
  std::string file;      // the file the tensor is in (a file's: itself)
  std::string expected;  // the manifest's digest, or "missing"/a size, as `detail` says
  std::string actual;
  std::string detail;  // one line for a person
};

// What verify_model found: every mismatch; none when the model is the manifest's.
struct VerifyReport {
  std::vector<Mismatch> mismatches;
  std::uint64_t files = 0, tensors = 0, bytes = 0;  // checked
  [[nodiscard]] bool ok() const noexcept { return mismatches.empty(); }
};

// Hashes `model` as hash_model does, with the manifest's algorithm, and compares: each file's
// size and digest, each tensor's place (file, offset, length) and digest; a tensor or file of
// one side missing from the other is a mismatch too (for signed_files_only: each of the model's
// files must be listed, and is compared by digest).
[[nodiscard]] ONNXMAP_API VerifyReport verify_model(const Model& model, const Manifest& manifest,
                                                    const HashOptions& options = {});

// What verifies a load as its bytes land (load --verify): a LoadOptions::on_landed (or
// DeviceLoadOptions::on_piece) for `plan` that computes each whole tensor's digest with the
// manifest's algorithm, on the loader's threads, and throws onnxmap::Error (bad_tensor) naming
// the tensor, its file and both digests when it differs from the manifest's entry (found by the
// tensor's path): the load stops, and that tensor is never handed to the callback (a device
// load returns nothing as loaded). Each verifier serves one load of `plan`. A row slice (a
// tensor-parallel rank's part) is judged by the entry's digest of those rows (TensorDigest::
// rows, hash_model with HashOptions::ranks); a slice the manifest has no digest of, and a
// tensor it has no entry for (typed fields: no stored bytes), are not verified; `verified`
// counts the items that were. Throws onnxmap::Error (invalid_argument) when the
// manifest holds no tensors (a signing tool's payload: use verify_model).
struct LandedVerifier {
  LoadCallback on_landed;  // for LoadOptions::on_landed (a load into memory)
  // The same check for DeviceLoadOptions::on_piece (a load to a device, whose pieces pass in
  // order): each tensor hashed from its pieces as they are read, judged at its last.
  std::function<void(const LoadedPiece&)> on_piece;
  std::shared_ptr<std::atomic<std::uint64_t>> verified;
  std::uint64_t not_verifiable = 0;  // items of the plan that will not be verified
};
[[nodiscard]] ONNXMAP_API LandedVerifier verify_as_loaded(const Manifest& manifest,
                                                          std::span<const LoadItem> plan);

}  // namespace onnxmap
