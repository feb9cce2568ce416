#pragma once
// The index one pass over a model builds: flat, immutable tables of message records and tensor
// records, plus a hash from tensor name to record. Views are (index, record) pairs over it.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "common/span.hpp"
#include "index/message_record.hpp"
#include "index/pod_table.hpp"
#include "io/mapped_file.hpp"
#include "io/payload_fetcher.hpp"
#include "onnxmap/error.hpp"
#include "onnxmap/options.hpp"
#include "onnxmap/schema.hpp"
#include "schema/descriptors.hpp"
#include "source/model_source.hpp"

namespace onnxmap {}  // namespace onnxmap

namespace onnxmap::detail {

using schema::MessageKind;

// The structural messages get records; small leaf messages (types, shapes, string pairs, opset
// ids, ...) are validated by the pass and decoded from their parent's bytes when touched.
[[nodiscard]] constexpr bool is_indexed(MessageKind kind) noexcept {
  switch (kind) {
    case MessageKind::ModelProto:
    case MessageKind::GraphProto:
    case MessageKind::NodeProto:
    case MessageKind::AttributeProto:
    case MessageKind::TensorProto:
    case MessageKind::SparseTensorProto:
    case MessageKind::ValueInfoProto:
    case MessageKind::FunctionProto:
    case MessageKind::TrainingInfoProto: return true;
    default: return false;
  }
}

struct TensorRecord {
  std::uint32_t message = kNone;         // the TensorProto's MessageRecord
  std::uint32_t next_same_name = kNone;  // the next tensor (breadth-first) with the same name
  std::string_view name;                 // the lookup name (a Constant's output when unnamed)
  std::int32_t data_type = 0;
  // The low bits of name_hash(name), hashed while the pass reads the name: building the name
  // table and most lookups then compare names without touching their pages.
  std::uint32_t name_hash = 0;
  TensorStorage storage = TensorStorage::none;
  std::uint8_t typed_field = 0;  // the typed field that holds the data, for TensorStorage::typed
  std::uint32_t data_file =
      kNone;  // index into ModelIndex::data_files, for TensorStorage::external
  std::uint64_t payload_offset = 0;  // in the model file, or in the data file when external
  std::uint64_t payload_length = 0;
  std::uint32_t dims_begin = 0;  // into ModelIndex::dims
  std::uint32_t dims_count = 0;

  // The elements lie in a file in the raw_data layout (raw_data or external data).
  [[nodiscard]] bool has_stored_bytes() const noexcept {
    return storage == TensorStorage::raw || storage == TensorStorage::external;
  }
};

// A slot of the name table. The hash is kept beside the id so that probing compares hashes
// without touching the (much larger, randomly ordered) tensor records.
struct NameSlot {
  std::uint32_t tensor_plus_one = 0;  // 0: empty
  std::uint32_t hash = 0;             // TensorRecord::name_hash of that tensor
};

struct DataFile {
  std::string location;  // as written in the model
  MappedFile file;
};

// A tensor opened as TensorStorage::invalid (OpenOptions::collect_payload_errors) and why.
struct PayloadError {
  std::uint32_t tensor = kNone;
  Error error;
};

// The index of one opened model (public headers know it only by name).
struct ModelIndex {
  MappedFile file;
  std::string display_name;      // the path, for error messages
  std::filesystem::path folder;  // external data locations resolve against it
  OpenOptions options;
  PodTable<MessageRecord> messages;  // [0] is the root message; breadth-first
  std::vector<std::pair<std::uint32_t, SpanList>> merged_spans;       // sorted by record id
  std::vector<std::pair<std::uint32_t, std::uint64_t>> long_lengths;  // sorted by record id
  PodTable<TensorRecord> tensors;  // breadth-first: outer graphs first
  PodTable<std::int64_t> dims;
  std::vector<DataFile> data_files;
  std::vector<PayloadError> payload_errors;  // sorted by tensor id
  PodTable<NameSlot> name_slots;             // open addressing over lookup names
  // Set for a model opened by URL: fills the mirror behind `file` and the data files before a
  // view of a payload is handed out. Null for a local model.
  std::shared_ptr<const PayloadFetcher> fetcher;

  [[nodiscard]] std::span<const std::byte> bytes(const ByteRange& span) const noexcept {
    return file.bytes().subspan(span.offset, span.length);
  }
  // The mapped file holding a raw or external payload (nullptr for other storage), and the
  // location of that file as the model names it ("" for the model file itself).
  [[nodiscard]] const MappedFile* payload_file(const TensorRecord& r) const noexcept {
    if (r.storage == TensorStorage::raw) return &file;
    if (r.storage == TensorStorage::external) return &data_files[r.data_file].file;
    return nullptr;
  }
  [[nodiscard]] std::string_view payload_location(const TensorRecord& r) const noexcept {
    return r.storage == TensorStorage::external ? std::string_view(data_files[r.data_file].location)
                                                : std::string_view();
  }
  // What the index knows of a record, for code outside the pass (views, the writer): use these
  // rather than MessageRecord's members, whose layout is the index's business.
  [[nodiscard]] MessageKind kind(std::uint32_t record) const noexcept {
    return static_cast<MessageKind>(messages[record].kind);
  }
  // The parent's field that holds the record (0 for the root).
  [[nodiscard]] std::uint32_t field_number(std::uint32_t record) const noexcept {
    return static_cast<std::uint32_t>(messages[record].field_number);
  }
  // The record's first span; spans() gives all of them when a singular field was merged.
  [[nodiscard]] ByteRange span(std::uint32_t record) const noexcept {
    const MessageRecord& r = messages[record];
    return {r.offset, r.length != MessageRecord::kLongLength ? r.length : long_length(record)};
  }
  // kNone for the root. O(log n): a binary search of the breadth-first table.
  [[nodiscard]] std::uint32_t parent(std::uint32_t record) const noexcept;
  // All children of `record`, as a range of record ids.
  [[nodiscard]] std::pair<std::uint32_t, std::uint32_t> child_range(
      std::uint32_t record) const noexcept {
    const std::uint32_t end = record + 1 < messages.size()
                                  ? messages[record + 1].first_child
                                  : static_cast<std::uint32_t>(messages.size());
    return {messages[record].first_child, end};
  }
  // 0 for the root.
  [[nodiscard]] int depth(std::uint32_t record) const noexcept;
  // The record's position among its parent's values of its field: 3 for graph.node[3].
  [[nodiscard]] std::uint32_t index_in_field(std::uint32_t record) const noexcept;
  [[nodiscard]] SpanList spans(std::uint32_t record) const;
  // The record's spans one at a time, without a copy: how many, and span i of them.
  [[nodiscard]] std::size_t span_count(std::uint32_t record) const noexcept;
  [[nodiscard]] ByteRange span_at(std::uint32_t record, std::size_t i) const noexcept;
  // Children of `record` held in field `field_number`, as a range of record ids.
  [[nodiscard]] std::pair<std::uint32_t, std::uint32_t> children(std::uint32_t record,
                                                                 std::uint32_t field_number) const;
  // The spans of a record whose `merged` is set.
  [[nodiscard]] const SpanList& merged_list(std::uint32_t record) const noexcept;
  // The length of a record whose first span is 4 GiB or longer.
  [[nodiscard]] std::uint64_t long_length(std::uint32_t record) const noexcept;
  // Heap bytes the index holds (its tables, not the mapped file).
  [[nodiscard]] std::uint64_t memory_bytes() const noexcept;
  // "graph.node[12].attribute[0].t"
  [[nodiscard]] std::string path(std::uint32_t record) const;
  // The record whose path() is `path`, or kNone: a walk down the tree, not a scan.
  [[nodiscard]] std::uint32_t record_at_path(std::string_view path) const;
  // The tensor id of TensorProto record `record` (tensors are in record order).
  [[nodiscard]] std::uint32_t tensor_of_message(std::uint32_t record) const noexcept;
  // The first tensor (breadth-first) with lookup name `name`, or kNone.
  [[nodiscard]] std::uint32_t find_tensor(std::string_view name) const noexcept;
  // The payload error of tensor `tensor`, or nullptr when its payload was located.
  [[nodiscard]] const Error* payload_error(std::uint32_t tensor) const noexcept;
};

// The hash of the tensor-name table.
[[nodiscard]] std::uint64_t name_hash(std::string_view name) noexcept;

// How much of the model the pass indexes: everything, or only what `peek` shows (the model's
// own fields, the main graph's name, inputs and outputs), skipping nodes and tensors unread.
enum class IndexScope { full, metadata };

// Maps `path` and builds its index. Throws onnxmap::Error naming file, field path and offset.
[[nodiscard]] std::shared_ptr<ModelIndex> build_index(MappedFile file, std::string display_name,
                                                      std::filesystem::path folder,
                                                      MessageKind root, const OpenOptions& options,
                                                      IndexScope scope = IndexScope::full);
// The index of `source`, which then holds the source's fetcher (called indexed() either way).
[[nodiscard]] std::shared_ptr<const ModelIndex> build_index(ModelSource source, MessageKind root,
                                                            const OpenOptions& options,
                                                            IndexScope scope);

}  // namespace onnxmap::detail
