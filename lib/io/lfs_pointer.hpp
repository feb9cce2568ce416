#pragma once
// Git LFS pointers: the small text file a clone made without Git LFS holds in place of a large
// file (a model, a data file). Read as ONNX, one is "wire type 6 does not exist" at byte 0;
// read as external data, every tensor runs past its end. Found first, it is named for what it is.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace onnxmap::detail {

struct LfsPointer {
  std::string oid;  // "sha256:4d7a..."
  std::uint64_t size = 0;
};

// The pointer `file` is (a file of fewer than 1024 bytes: "version https://git-lfs.github.com/
// spec/v1", "oid sha256:...", "size N"), or nullopt. Reads `file` under the fault guard.
[[nodiscard]] std::optional<LfsPointer> lfs_pointer(std::span<const std::byte> file);

// "is a Git LFS pointer to an object of 1.2 GiB (sha256:4d7a...), not its content: ..." with
// what to run.
[[nodiscard]] std::string lfs_pointer_message(const LfsPointer& pointer);

}  // namespace onnxmap::detail
