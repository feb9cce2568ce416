#pragma once
// safetensors files' headers: the element types' names both ways, and a parser that refuses
// what the format forbids.
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of JSON (an object:
// "__metadata__", a string-to-string map, and one entry per tensor, {"dtype", "shape",
// "data_offsets": [begin, end)} counted from the header's end), then the data, which the
// tensors must cover exactly: no hole, no overlap, nothing past the file. The writer is
// write/safetensors_layout.cpp; check (check/safetensors.cpp) compares a model's external data
// in such files with the header.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnxmap/schema.hpp"

namespace onnxmap::detail {

// safetensors' name of an ONNX element type (FLOAT: "F32"), or nullopt where it has none
// (STRING, COMPLEX128, the 4- and 2-bit integers).
[[nodiscard]] std::optional<std::string_view> safetensors_dtype(DataType type) noexcept;
// The ONNX element type of a safetensors name, or nullopt (F6_E2M3, F6_E3M2, unknown names).
[[nodiscard]] std::optional<DataType> onnx_type_of_safetensors(std::string_view dtype) noexcept;

// safetensors' own bound on the header (its MAX_HEADER_SIZE): a larger one is refused unread.
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100'000'000;

// Where the data of a safetensors file starts: 8 + the header length its first 8 bytes give
// (`first` holds at least 8 bytes).
[[nodiscard]] std::uint64_t safetensors_data_start(std::span<const std::byte> first);

struct SafetensorsEntry {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  // in the file, the header included
  std::uint64_t end = 0;
};

struct SafetensorsHeader {
  std::uint64_t data_start = 0;  // 8 + the header's length
  std::map<std::string, std::string> metadata;
  std::vector<SafetensorsEntry> tensors;  // by offset
};

// The header of the safetensors file whose first bytes are `head` and whose size is
// `file_size` (head may be the whole file, or at least its first 8 + N bytes). Throws
// onnxmap::Error naming `file` and the byte offset: out_of_bounds for a length past the file,
// limit_exceeded for one over kMaxSafetensorsHeader, bad_tensor for JSON that is not an object
// (or not JSON), an entry without a string dtype, a shape of non-negative integers or two
// offsets, an unknown dtype, a span that disagrees with the dtype and shape, and offsets that
// leave a hole, overlap or pass the end.
[[nodiscard]] SafetensorsHeader parse_safetensors_header(std::span<const std::byte> head,
                                                         std::uint64_t file_size,
                                                         const std::string& file);

// The header of the safetensors file whose bytes are `file` (mapped: the header is copied out
// under the fault guard, so a file that shrank is an Error, not a signal), as
// parse_safetensors_header gives it. `fetch(length)`, when given, is called first for each
// length of the file's start about to be read (a remote model's mirror fills it).
[[nodiscard]] SafetensorsHeader read_safetensors_header(
    std::span<const std::byte> file, const std::string& name,
    const std::function<void(std::uint64_t)>& fetch = {});

}  // namespace onnxmap::detail
