#pragma once
// A tensor of an opened model: metadata from the index, bytes as a view into the mapped file
// (raw_data and external data) or decoded on request (typed fields, which are varints or need
// reassembly on the wire).
//
// Threads: a Tensor is a view (views.hpp): any number of threads may read one at once. The
// span bytes() and slice_rows() return stays valid and unchanged while the model lives, whatever
// other threads do: release() only drops this process's pages of the mapped file (MADV_DONTNEED,
// the map is read-only and file-backed), so a reader racing it reads the same bytes again from
// the page cache or the disk, at the cost of that read; prefetch racing a reader likewise only
// moves pages in. TensorData owns or views its bytes as it says, a plain value.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "onnxmap/byte_range.hpp"
#include "onnxmap/error.hpp"
#include "onnxmap/export.hpp"
#include "onnxmap/schema.hpp"
#include "onnxmap/views.hpp"

namespace onnxmap {

// A tensor's bytes in the raw_data layout (little-endian, sub-byte types packed): either a view
// into the mapped file (no copy) or a buffer decoded from the typed fields. Which one it is, is
// part of the type, never hidden.
class TensorData {
 public:
  explicit TensorData(std::span<const std::byte> view) : data_(view) {}
  explicit TensorData(std::vector<std::byte> owned) : data_(std::move(owned)) {}

  [[nodiscard]] bool is_view() const noexcept { return data_.index() == 0; }
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
    if (const auto* view = std::get_if<0>(&data_)) return *view;
    return std::get<1>(data_);
  }

 private:
  std::variant<std::span<const std::byte>, std::vector<std::byte>> data_;
};

class ONNXMAP_API Tensor {
 public:
  // The tensor's own name field (may be empty, e.g. in a Constant node).
  [[nodiscard]] std::string_view name() const;
  // The name `Model::tensor` finds it by: its own name, or the Constant node's output name.
  [[nodiscard]] std::string_view lookup_name() const;
  // Where it lives: "graph.initializer[3]", "graph.node[12].attribute[0].t".
  [[nodiscard]] std::string path() const;
  [[nodiscard]] DataType data_type() const;
  [[nodiscard]] std::span<const std::int64_t> dims() const;
  [[nodiscard]] std::uint64_t element_count() const;
  // Bytes of the elements in the raw_data layout; 0 for STRING tensors.
  [[nodiscard]] std::uint64_t byte_size() const;
  [[nodiscard]] TensorStorage storage() const;
  // Whether the elements lie in a file as the raw_data layout has them (raw_data or external
  // data), so that bytes() and slice_rows() are views: storage() is raw or external.
  [[nodiscard]] bool has_stored_bytes() const;
  // Why the payload could not be located (TensorStorage::invalid), else nullopt.
  [[nodiscard]] std::optional<Error> payload_error() const;
  [[nodiscard]] std::string_view doc_string() const;
  [[nodiscard]] std::vector<StringStringEntry> external_data() const;
  [[nodiscard]] std::vector<StringStringEntry> metadata_props() const;

  // For raw and external storage: the file holding the bytes ("" = the model file), the offset
  // there, and the largest power of two (up to 4096) dividing that offset.
  [[nodiscard]] std::string_view data_file() const;
  [[nodiscard]] std::uint64_t file_offset() const;
  [[nodiscard]] std::uint64_t alignment() const;
  // The local file the stored bytes are mapped from (the model's own file, or the external data
  // file resolved against the model's folder) as an absolute path, for callers that map it
  // themselves (copy-on-write, say); empty where the bytes are not a view of a mapped local
  // file: no stored bytes, a model opened in the read or direct mode, by URL, from memory or
  // from standard input.
  [[nodiscard]] std::filesystem::path file_path() const;

  // The bytes without a copy; throws onnxmap::Error for typed storage (use data()) and the
  // payload error for invalid storage. A mapped payload of 2 MiB or more is advised for
  // sequential reading (a cold first touch reads ahead in large chunks). For a local file no
  // I/O happens here; a model opened by URL fetches the bytes first (and throws on failure).
  [[nodiscard]] std::span<const std::byte> bytes() const;
  // The bytes in the raw_data layout: a view for raw and external data, decoded otherwise.
  [[nodiscard]] TensorData data() const;
  // STRING tensors: each element's bytes.
  [[nodiscard]] std::vector<std::string_view> strings() const;

  // Rows along axis 0, the unit of a tensor-parallel shard. row_count: dims[0], 0 for a scalar
  // (which has no rows). row_elements: elements in one row, 0 when there are no rows.
  // row_bytes: bytes of one row in the raw_data layout, or nullopt when a row is not a whole
  // number of bytes (a sub-byte type, an odd row) or the type has no fixed width (STRING).
  [[nodiscard]] std::uint64_t row_count() const;
  [[nodiscard]] std::uint64_t row_elements() const;
  [[nodiscard]] std::optional<std::uint64_t> row_bytes() const;
  // Whether slice_rows() can cut this tensor: it has rows, stored bytes (has_stored_bytes) and
  // rows of whole bytes.
  [[nodiscard]] bool can_slice_rows() const;
  // Where rows [begin, end) lie in the payload: bytes from its first byte, and how many. Throws
  // slice_rows()'s errors (invalid_argument) for rows it cannot cut.
  [[nodiscard]] ByteRange row_range(std::uint64_t begin, std::uint64_t end) const;
  // Rows [begin, end) along axis 0 (a tensor-parallel shard), without a copy; needs
  // can_slice_rows(). Fetched like bytes(), the rows only; a part of the payload is read ahead
  // exactly (MADV_WILLNEED), not past its last row.
  [[nodiscard]] std::span<const std::byte> slice_rows(std::uint64_t begin, std::uint64_t end) const;

  // Drops the bytes' pages from this process (MADV_DONTNEED) after use; a no-op for typed
  // storage and for models opened in the read or direct mode. (To read them in ahead of use:
  // onnxmap::prefetch(tensor), load.hpp.)
  void release() const;

  // The same tensor of the same opened model.
  friend bool operator==(const Tensor& a, const Tensor& b) noexcept {
    return a.index_ == b.index_ && a.tensor_ == b.tensor_;
  }

 private:
  friend struct detail::ViewAccess;
  Tensor(const detail::ModelIndex* index, std::uint32_t tensor) : index_(index), tensor_(tensor) {}

  const detail::ModelIndex* index_;
  std::uint32_t tensor_;  // the tensor's id in the model's tensor table
};

}  // namespace onnxmap
