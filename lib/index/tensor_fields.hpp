#pragma once
// A TensorProto as the indexing pass reads it: the fields that say where its elements are,
// collected by one walk (or by the common-layout fast path), and the plain function that turns
// them into a payload or an Error.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <variant>

#include "index/model_index.hpp"
#include "index/walker.hpp"

namespace onnxmap::detail {

// The external_data entries of a tensor that matter for finding its bytes.
struct ExternalRef {
  std::string_view location;
  std::optional<std::uint64_t> offset;
  std::optional<std::uint64_t> length;
};

// What a tensor's fields say; its dims go to the caller's dims table.
struct TensorFields {
  std::int32_t data_type = 0;
  std::string_view name;
  std::optional<ByteRange> raw;
  std::uint64_t raw_tag = 0;       // where raw_data's tag is
  std::optional<ByteRange> typed;  // the first typed data field (float_data, ...)
  std::uint8_t typed_field = 0;    // its number
  bool is_external = false;        // data_location EXTERNAL
  ExternalRef external;
};

// Where a tensor's elements are.
struct Payload {
  TensorStorage storage = TensorStorage::none;
  std::uint32_t data_file = kNone;  // TensorStorage::external
  std::uint64_t offset = 0;         // in the model file, or in the data file when external
  std::uint64_t length = 0;
};

// An external data file, opened by location: its id in ModelIndex::data_files and its size.
struct DataFileRef {
  std::uint32_t id = kNone;
  std::uint64_t size = 0;
};
using OpenDataFile = std::function<DataFileRef(std::string_view location)>;

// Where the elements of a tensor are, checked against its dims and data type, or why not.
// `tensor_offset` is where the tensor starts (errors without a better place point there);
// `open_data_file` is asked only for external tensors, and what it throws is returned.
[[nodiscard]] std::variant<Payload, Error> locate_payload(const TensorFields& fields,
                                                          std::span<const std::int64_t> dims,
                                                          std::uint64_t tensor_offset,
                                                          const OpenDataFile& open_data_file);

// The handler walk_fields reads a tensor with. A problem with the payload's description (a
// negative dimension, an external entry that is not a number) is thrown at once, or, when
// `collect` is set, kept (the first one) and the walk goes on.
class TensorCollector {
 public:
  TensorCollector(PassContext& ctx, PodTable<std::int64_t>& dims, bool collect)
      : ctx_(ctx), dims_(dims), collect_(collect) {}

  [[nodiscard]] static std::uint64_t own_fields() noexcept { return kEveryField; }
  void field(const wire::Field& field);
  void leaf(ByteRange span, MessageKind kind, int depth) { validate_leaf(ctx_, span, kind, depth); }
  // A tensor holds no indexed messages: one in an unexpected place is validated like a leaf.
  void child(const wire::Field& field, const FieldAction& action, int depth) {
    validate_leaf(ctx_, ctx_.span_of(field), action.message, depth);
  }

  TensorFields fields;
  std::optional<Error> problem;

 private:
  void fail(const Error& error);
  void read_dims(const wire::Field& field);
  void read_external_entry(const wire::Field& field);

  PassContext& ctx_;
  PodTable<std::int64_t>& dims_;
  bool collect_;
};

// The fast path for the layout nearly every file has (what libprotobuf and onnxmap write for a
// tensor with raw_data): fields in number order, dims as one varint each, then
// data_type, name and raw_data, each at most once, nothing else, and everything before the raw
// payload on the page where the tensor starts (which scanning its parent touched). Fills `out`
// and appends the dims; returns false, with `dims` as it was, for anything else, which the
// general walk then reads from the start. Malformed framing throws the cursor's Error, the one
// the general walk would throw: the fields before it are the common ones, which raise nothing.
[[nodiscard]] bool read_common_tensor(const std::byte* file, ByteRange span,
                                      std::uint64_t page_size, PodTable<std::int64_t>& dims,
                                      TensorFields& out);

}  // namespace onnxmap::detail
