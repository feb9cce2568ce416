#pragma once
// A tensor of an opened model: metadata from the index, bytes as a view into the mapped file
// (raw_data and external data) or decoded on request (typed fields, which are varints or need
// reassembly on the wire).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "onnxmap/detail/message_view.hpp"
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

class ONNXMAP_API Tensor : private detail::MessageView {
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

  // The bytes without a copy; throws onnxmap::Error for typed storage (use data()) and the
  // payload error for invalid storage. A mapped payload of 2 MiB or more is advised for
  // sequential reading (a cold first touch reads ahead in large chunks). For a local file no
  // I/O happens here; a model opened by URL fetches the bytes first (and throws on failure).
  [[nodiscard]] std::span<const std::byte> bytes() const;
  // The bytes in the raw_data layout: a view for raw and external data, decoded otherwise.
  [[nodiscard]] TensorData data() const;
  // STRING tensors: each element's bytes.
  [[nodiscard]] std::vector<std::string_view> strings() const;
  // Rows [begin, end) along axis 0 (a tensor-parallel shard), without a copy; needs raw or
  // external storage and a type whose rows are whole bytes. Fetched like bytes(), the rows only;
  // a part of the payload is read ahead exactly (MADV_WILLNEED), not past its last row.
  [[nodiscard]] std::span<const std::byte> slice_rows(std::uint64_t begin, std::uint64_t end) const;

  // prefetch: the loader's prefetch (load.hpp) of this one tensor: reads the bytes into the page
  // cache now, in large requests on the loader's threads, and returns when they are there (a
  // cold touch through the map would read 4 KiB per fault; a model opened by URL fetches them).
  // release: drops their pages from this process (MADV_DONTNEED) after use. No-ops for typed
  // storage and for models opened in the read or direct mode.
  void prefetch() const;
  void release() const;

  // The same tensor of the same opened model.
  friend bool operator==(const Tensor& a, const Tensor& b) noexcept {
    return a.index_ == b.index_ && a.tensor_ == b.tensor_;
  }

 private:
  friend struct detail::ViewAccess;
  // `tensor` is an id in the model's tensor table.
  Tensor(const detail::ModelIndex* index, std::uint32_t tensor);

  // The payload, or rows [begin, end) of it, checked as bytes() and slice_rows() check, without
  // a fetch or advice: for those two, and for the loader, which plans its own reads.
  [[nodiscard]] std::span<const std::byte> payload_view() const;
  [[nodiscard]] std::span<const std::byte> rows_view(std::uint64_t begin, std::uint64_t end) const;
  std::uint32_t tensor_;
};

}  // namespace onnxmap
