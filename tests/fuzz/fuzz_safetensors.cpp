// Fuzz target: any bytes as a safetensors file, its header read as check reads it
// (index/safetensors_header.hpp). Beyond "no crash, only onnxmap::Error": a header that parses
// has tensors that cover the data exactly, in order, each of a known dtype whose shape takes its
// span.

#include <cstddef>
#include <cstdint>
#include <span>

#include "index/safetensors_header.hpp"
#include "onnxmap/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  try {
    const auto header = onnxmap::detail::parse_safetensors_header(bytes, size, "fuzz");
    std::uint64_t at = header.data_start;
    for (const auto& t : header.tensors) {
      const auto type = onnxmap::detail::onnx_type_of_safetensors(t.dtype);
      const auto count = onnxmap::element_count(t.shape);
      if (t.begin != at || !type || !count ||
          onnxmap::packed_byte_size(*type, *count) != t.end - t.begin) {
        __builtin_trap();
      }
      at = t.end;
    }
    if (at != size) __builtin_trap();
  } catch (const onnxmap::Error&) {
  }
  return 0;
}
