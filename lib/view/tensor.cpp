// Tensor views: metadata from the tensor record, bytes as views into the mapped files.

#include "onnxmap/tensor.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "index/tensor_table.hpp"
#include "io/payload_fetcher.hpp"
#include "io/read_check.hpp"
#include "view/leaf.hpp"
#include "view/tensor_decode.hpp"
#include "view/tensor_payload.hpp"

namespace onnxmap {

namespace {

using TP = schema::TensorProto;

const detail::TensorRecord& record_of(const detail::ModelIndex* index, std::uint32_t tensor) {
  return index->tensors[tensor];
}

// The fields of the tensor's TensorProto.
detail::Fields fields_of(const detail::ModelIndex* index, std::uint32_t tensor) {
  return {index, index->tensors[tensor].message};
}

// The TensorProto's first byte in the model file, for errors.
std::uint64_t message_offset(const detail::ModelIndex* index, std::uint32_t tensor) {
  return index->span(index->tensors[tensor].message).offset;
}

// Payloads this large are advised for sequential reading on access (MappedFile::
// advise_sequential): a cold first touch then reads ahead in large chunks, not page by page.
constexpr std::uint64_t kSequentialAdviceBytes = std::uint64_t{2} << 20U;

void advise_access(const MappedFile* file, std::uint64_t offset, std::uint64_t length) {
  if (file != nullptr && length >= kSequentialAdviceBytes) {
    file->advise_sequential(offset, length);
  }
}

// A slice of a payload (a rank's rows) this large, when not all in the page cache, is read into
// it exactly with large preads before it is handed out: sequential advice would let the
// kernel's read-ahead run on into the next rank's rows, and MADV_WILLNEED then faults read
// cold slices at half the speed of the preads (bench/cold_load_bench; docs/loading-cold.md).
constexpr std::uint64_t kSliceReadAheadBytes = std::uint64_t{64} << 10U;

void advise_slice(const MappedFile* file, std::uint64_t offset, std::uint64_t length) {
  if (file == nullptr || !file->is_mapped() || length < kSliceReadAheadBytes) return;
  if (!file->resident(offset, length)) file->read_ahead(offset, length);  // a warm slice: no read
  file->allow_huge_pages(offset, length);
  file->map_cached(offset, length);
}

// Raw and external payloads as they lie in the mapped files; empty for other storage.
std::span<const std::byte> stored_payload(const detail::ModelIndex* index,
                                          const detail::TensorRecord& r) {
  const MappedFile* file = index->payload_file(r);
  return file != nullptr ? file->bytes().subspan(r.payload_offset, r.payload_length)
                         : std::span<const std::byte>();
}

// The payload of tensor `id` (record `r`) as it lies in the files: empty for none; throws the
// payload's error for invalid storage, and for typed storage (which cannot be viewed).
std::span<const std::byte> checked_payload(const detail::ModelIndex* index, std::uint32_t id,
                                           const detail::TensorRecord& r) {
  if (r.has_stored_bytes()) return stored_payload(index, r);
  if (r.storage == TensorStorage::none) return {};
  if (r.storage == TensorStorage::invalid) throw *index->payload_error(id);
  throw Error(ErrorKind::invalid_argument,
              "the tensor's elements are in a typed field, which cannot be viewed without "
              "decoding; use data()",
              r.payload_offset, index->path(r.message), index->display_name);
}

// A model opened by URL fetches [offset, offset + length) of the payload into its mirror before
// a view of it is handed out; a local model has no fetcher.
void fetch_payload(const detail::ModelIndex* index, const detail::TensorRecord& r,
                   std::uint64_t offset, std::uint64_t length) {
  const detail::PayloadFetcher* fetcher = index->fetcher.get();
  if (fetcher == nullptr || length == 0) return;
  fetcher->fetch(index->payload_location(r), r.payload_offset + offset, length);
}

// Typed fields live in the TensorProto itself: the whole message is fetched.
void fetch_message(const detail::ModelIndex* index, std::uint32_t record) {
  const detail::PayloadFetcher* fetcher = index->fetcher.get();
  if (fetcher == nullptr) return;
  for (const auto& span : index->spans(record)) fetcher->fetch("", span.offset, span.length);
}

}  // namespace

std::string_view Tensor::name() const {
  return fields_of(index_, tensor_).string_field(TP::kName);
}
std::string_view Tensor::lookup_name() const {
  const std::string_view name = record_of(index_, tensor_).name;
  detail::check_for_front_end(name);  // read by the caller, not by a cursor here
  return name;
}
std::string Tensor::path() const {
  return index_->path(record_of(index_, tensor_).message);
}
DataType Tensor::data_type() const {
  return static_cast<DataType>(record_of(index_, tensor_).data_type);
}

std::span<const std::int64_t> Tensor::dims() const {
  const auto& r = record_of(index_, tensor_);
  return {index_->dims.data() + r.dims_begin, r.dims_count};
}

std::uint64_t Tensor::element_count() const {
  return onnxmap::element_count(dims()).value_or(0);  // overflow was refused at open
}

std::uint64_t Tensor::byte_size() const {
  return packed_byte_size(data_type(), element_count()).value_or(0);
}

TensorStorage Tensor::storage() const {
  return record_of(index_, tensor_).storage;
}

bool Tensor::has_stored_bytes() const {
  return record_of(index_, tensor_).has_stored_bytes();
}

std::optional<Error> Tensor::payload_error() const {
  if (const Error* error = index_->payload_error(tensor_)) return *error;
  return std::nullopt;
}

std::string_view Tensor::doc_string() const {
  return fields_of(index_, tensor_).string_field(TP::kDocString);
}
std::vector<StringStringEntry> Tensor::external_data() const {
  return detail::decode_entries(index_,
                                fields_of(index_, tensor_).messages_field(TP::kExternalData));
}
std::vector<StringStringEntry> Tensor::metadata_props() const {
  return detail::decode_entries(index_,
                                fields_of(index_, tensor_).messages_field(TP::kMetadataProps));
}

std::string_view Tensor::data_file() const {
  const auto& r = record_of(index_, tensor_);
  if (r.storage != TensorStorage::external) return {};
  return index_->data_files[r.data_file].location;
}

std::uint64_t Tensor::file_offset() const {
  return record_of(index_, tensor_).payload_offset;
}

std::filesystem::path Tensor::file_path() const {
  const MappedFile* file = index_->payload_file(record_of(index_, tensor_));
  if (file == nullptr || !file->is_mapped() || index_->fetcher != nullptr) return {};
  return std::filesystem::absolute(file->path());
}

std::uint64_t Tensor::alignment() const {
  constexpr std::uint64_t kMaxReported = 4096;
  const std::uint64_t offset = file_offset();
  if (offset == 0) return kMaxReported;
  return std::min<std::uint64_t>(offset & (~offset + 1), kMaxReported);
}

std::span<const std::byte> Tensor::bytes() const {
  const auto& r = record_of(index_, tensor_);
  if (r.has_stored_bytes()) fetch_payload(index_, r, 0, r.payload_length);
  const auto view = checked_payload(index_, tensor_, r);
  advise_access(index_->payload_file(r), r.payload_offset, view.size());
  return view;
}

TensorData Tensor::data() const {
  const auto& r = record_of(index_, tensor_);
  if (r.storage != TensorStorage::typed) return TensorData(bytes());
  fetch_message(index_, r.message);
  try {
    return TensorData(detail::decode_typed(*index_, index_->spans(r.message), r.typed_field,
                                           r.data_type, element_count()));
  } catch (const Error& e) {
    throw e.in_context(index_->display_name, path());
  }
}

std::vector<std::string_view> Tensor::strings() const {
  if (data_type() != DataType::string) {
    throw Error(ErrorKind::invalid_argument, "not a STRING tensor", message_offset(index_, tensor_),
                path(), index_->display_name);
  }
  return fields_of(index_, tensor_).strings_field(TP::kStringData);
}

std::span<const std::byte> Tensor::slice_rows(std::uint64_t begin, std::uint64_t end) const {
  const auto& r = record_of(index_, tensor_);
  const ByteRange range = row_range(begin, end);
  const auto rows = detail::payload_view(*this).subspan(range.offset, range.length);
  fetch_payload(index_, r, range.offset, rows.size());
  if (rows.size() == r.payload_length) {
    advise_access(index_->payload_file(r), r.payload_offset, rows.size());
  } else {
    advise_slice(index_->payload_file(r), r.payload_offset + range.offset, rows.size());
  }
  return rows;
}

std::uint64_t Tensor::row_count() const {
  const auto shape = dims();
  return shape.empty() ? 0 : static_cast<std::uint64_t>(shape[0]);
}

std::uint64_t Tensor::row_elements() const {
  const std::uint64_t rows = row_count();
  return rows == 0 ? 0 : element_count() / rows;
}

std::optional<std::uint64_t> Tensor::row_bytes() const {
  const std::uint64_t bits = element_bits(data_type());
  if (bits == 0 || row_elements() * bits % 8 != 0) return std::nullopt;
  return row_elements() * bits / 8;  // no overflow: the whole payload's size was checked at open
}

bool Tensor::can_slice_rows() const {
  return !dims().empty() && has_stored_bytes() && row_bytes().has_value() &&
         record_of(index_, tensor_).payload_length == byte_size();
}

ByteRange Tensor::row_range(std::uint64_t begin, std::uint64_t end) const {
  const auto fail = [&](const std::string& why) {
    return Error(ErrorKind::invalid_argument,
                 "slice_rows(" + std::to_string(begin) + ", " + std::to_string(end) + "): " + why,
                 message_offset(index_, tensor_), path(), index_->display_name);
  };
  if (dims().empty()) throw fail("a scalar has no rows");
  const std::uint64_t rows = row_count();
  if (begin > end || end > rows) throw fail("rows run 0.." + std::to_string(rows));
  if (element_bits(data_type()) == 0) throw fail("the data type has no fixed element size");
  const auto per_row = row_bytes();
  if (!per_row) throw fail("a row is not a whole number of bytes");
  // Typed and invalid storage throw their own errors (use data(); why the payload is bad).
  if (!has_stored_bytes()) (void)detail::payload_view(*this);
  // A tensor with dims but no payload field holds no bytes to slice.
  if (!can_slice_rows()) throw fail("the tensor holds no payload for its dims");
  return {begin * *per_row, (end - begin) * *per_row};
}

void Tensor::release() const {
  const auto& r = record_of(index_, tensor_);
  if (const MappedFile* file = index_->payload_file(r)) {
    file->release(r.payload_offset, r.payload_length);
  }
}

}  // namespace onnxmap

namespace onnxmap::detail {

std::span<const std::byte> payload_view(const Tensor& t) {
  const ModelIndex* index = ViewAccess::index(t);
  const std::uint32_t id = ViewAccess::tensor(t);
  return checked_payload(index, id, record_of(index, id));
}

std::span<const std::byte> rows_view(const Tensor& t, std::uint64_t begin, std::uint64_t end) {
  const ByteRange range = t.row_range(begin, end);
  return payload_view(t).subspan(range.offset, range.length);
}

std::span<const std::byte> payload_range(const Tensor& t, std::uint64_t offset,
                                         std::uint64_t length) {
  const ModelIndex* index = ViewAccess::index(t);
  const TensorRecord& r = record_of(index, ViewAccess::tensor(t));
  const auto range =
      payload_view(t).subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(length));
  fetch_payload(index, r, offset, length);
  advise_slice(index->payload_file(r), r.payload_offset + offset, length);
  return range;
}

void release_payload_range(const Tensor& t, std::uint64_t offset, std::uint64_t length) {
  const ModelIndex* index = ViewAccess::index(t);
  const TensorRecord& r = record_of(index, ViewAccess::tensor(t));
  if (const MappedFile* file = index->payload_file(r)) {
    file->release_interior(r.payload_offset + offset, length);
  }
}

}  // namespace onnxmap::detail
