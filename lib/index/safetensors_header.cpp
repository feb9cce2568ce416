#include "index/safetensors_header.hpp"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <utility>

#include "onnxmap/bytes.hpp"
#include "onnxmap/error.hpp"
#include "wire/wire.hpp"

namespace onnxmap::detail {

namespace {

// ONNX's element types and safetensors' names for them: the one table of both directions.
constexpr std::array<std::pair<DataType, std::string_view>, 20> kNames{{
    {DataType::float32, "F32"},
    {DataType::uint8, "U8"},
    {DataType::int8, "I8"},
    {DataType::uint16, "U16"},
    {DataType::int16, "I16"},
    {DataType::int32, "I32"},
    {DataType::int64, "I64"},
    {DataType::boolean, "BOOL"},
    {DataType::float16, "F16"},
    {DataType::float64, "F64"},
    {DataType::uint32, "U32"},
    {DataType::uint64, "U64"},
    {DataType::complex64, "C64"},
    {DataType::bfloat16, "BF16"},
    {DataType::float8e4m3fn, "F8_E4M3"},
    {DataType::float8e4m3fnuz, "F8_E4M3FNUZ"},
    {DataType::float8e5m2, "F8_E5M2"},
    {DataType::float8e5m2fnuz, "F8_E5M2FNUZ"},
    {DataType::float8e8m0, "F8_E8M0"},
    {DataType::float4e2m1, "F4"},
}};

using Json = nlohmann::json;

class HeaderReader {
 public:
  HeaderReader(std::uint64_t data_start, std::uint64_t file_size, const std::string& file)
      : data_start_(data_start), file_size_(file_size), file_(file) {}

  [[noreturn]] void fail(const std::string& what, std::uint64_t offset = 8) const {
    throw Error(ErrorKind::bad_tensor, "safetensors header: " + what, offset, {}, file_);
  }

  SafetensorsEntry entry(const std::string& name, const Json& value) const {
    const std::string where = "tensor '" + name + "'";
    if (!value.is_object()) fail(where + " is not an object");
    const auto dtype = value.find("dtype");
    const auto shape = value.find("shape");
    const auto offsets = value.find("data_offsets");
    if (dtype == value.end() || !dtype->is_string()) fail(where + " has no string dtype");
    if (shape == value.end() || !shape->is_array()) fail(where + " has no shape list");
    if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2 ||
        !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
      fail(where + " has no data_offsets [begin, end] of two non-negative integers");
    }
    SafetensorsEntry e{name, dtype->get<std::string>(), {}, 0, 0};
    for (const Json& d : *shape) {
      if (!d.is_number_unsigned() || d.get<std::uint64_t>() > (std::uint64_t{1} << 62U)) {
        fail(where + " has a dimension that is not a non-negative integer");
      }
      e.shape.push_back(d.get<std::int64_t>());
    }
    const auto begin = (*offsets)[0].get<std::uint64_t>();
    const auto end = (*offsets)[1].get<std::uint64_t>();
    if (begin > end || end > file_size_ - data_start_) {
      fail(where + " has data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
           ") outside the " + std::to_string(file_size_ - data_start_) + " bytes of data");
    }
    e.begin = data_start_ + begin;
    e.end = data_start_ + end;
    check_span(where, e);
    return e;
  }

  void check_span(const std::string& where, const SafetensorsEntry& e) const {
    const auto type = onnx_type_of_safetensors(e.dtype);
    if (!type) fail(where + " has dtype \"" + e.dtype + "\", which onnxmap does not know");
    const auto count = element_count(e.shape);
    const auto bytes = count ? packed_byte_size(*type, *count) : std::nullopt;
    if (!bytes || *bytes != e.end - e.begin || (*count * element_bits(*type)) % 8 != 0) {
      fail(where + ": " + e.dtype + " of its shape does not take the " +
               std::to_string(e.end - e.begin) + " bytes of its data_offsets",
           e.begin);
    }
  }

  // The tensors cover the data exactly: sorted by offset, each begins where the last ended.
  void check_coverage(std::vector<SafetensorsEntry>& tensors) const {
    std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) {
      return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
    });
    std::uint64_t at = data_start_;
    for (const SafetensorsEntry& e : tensors) {
      if (e.begin != at) {
        fail(std::string(e.begin < at ? "tensor '" + e.name + "' overlaps the one before it"
                                      : "a hole before tensor '" + e.name + "'") +
                 " (at byte " + std::to_string(e.begin) + ", " + std::to_string(at) + " expected)",
             e.begin);
      }
      at = e.end;
    }
    if (at != file_size_) {
      fail("the tensors end at byte " + std::to_string(at) + ", the file at " +
               std::to_string(file_size_),
           at);
    }
  }

 private:
  std::uint64_t data_start_;
  std::uint64_t file_size_;
  const std::string& file_;
};

}  // namespace

std::optional<std::string_view> safetensors_dtype(DataType type) noexcept {
  for (const auto& [onnx, name] : kNames) {
    if (onnx == type) return name;
  }
  return std::nullopt;
}

std::optional<DataType> onnx_type_of_safetensors(std::string_view dtype) noexcept {
  for (const auto& [onnx, name] : kNames) {
    if (name == dtype) return onnx;
  }
  return std::nullopt;
}

std::uint64_t safetensors_data_start(std::span<const std::byte> first) {
  std::size_t pos = 0;
  return 8 + wire::read_fixed64(first, pos);
}

SafetensorsHeader parse_safetensors_header(std::span<const std::byte> head, std::uint64_t file_size,
                                           const std::string& file) {
  const auto fail = [&](ErrorKind kind, const std::string& what, std::uint64_t offset) {
    return Error(kind, "safetensors header: " + what, offset, {}, file);
  };
  if (head.size() < 8 || file_size < 8) {
    throw fail(ErrorKind::out_of_bounds, "the file is shorter than the 8-byte header length", 0);
  }
  const std::uint64_t length = safetensors_data_start(head) - 8;
  if (length > kMaxSafetensorsHeader) {
    throw fail(ErrorKind::limit_exceeded,
               "a header of " + std::to_string(length) + " bytes passes safetensors' limit of " +
                   std::to_string(kMaxSafetensorsHeader),
               0);
  }
  if (length > file_size - 8 || length > head.size() - 8) {
    throw fail(ErrorKind::out_of_bounds,
               "a header of " + std::to_string(length) + " bytes runs past the end of the file (" +
                   std::to_string(file_size) + " bytes)",
               0);
  }
  const HeaderReader reader(8 + length, file_size, file);
  const auto* text = reinterpret_cast<const char*>(head.data()) + 8;
  const Json json = Json::parse(text, text + length, nullptr, false);
  if (json.is_discarded() || !json.is_object()) reader.fail("not a JSON object");
  SafetensorsHeader header{8 + length, {}, {}};
  for (const auto& [name, value] : json.items()) {
    if (name != "__metadata__") {
      header.tensors.push_back(reader.entry(name, value));
      continue;
    }
    if (!value.is_object()) reader.fail("__metadata__ is not an object");
    for (const auto& [key, text_value] : value.items()) {
      if (!text_value.is_string()) reader.fail("__metadata__ '" + key + "' is not a string");
      header.metadata[key] = text_value.get<std::string>();
    }
  }
  reader.check_coverage(header.tensors);
  return header;
}

SafetensorsHeader read_safetensors_header(std::span<const std::byte> file, const std::string& name,
                                          const std::function<void(std::uint64_t)>& fetch) {
  const auto head = [&](std::uint64_t length) {
    length = std::min<std::uint64_t>(length, file.size());
    if (fetch) fetch(length);
    std::vector<std::byte> bytes(length);
    copy_bytes(file.first(length), bytes);
    return bytes;
  };
  const std::uint64_t start = file.size() < 8 ? 8 : safetensors_data_start(head(8));
  // A length past the limit is refused by the parser without reading it.
  return parse_safetensors_header(head(start - 8 <= kMaxSafetensorsHeader ? start : 8), file.size(),
                                  name);
}

}  // namespace onnxmap::detail
