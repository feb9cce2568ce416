#pragma once
// JSON spellings of protobuf values: escaped strings, base64 bytes, floats in shortest form.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace onnxmap::detail {

// A JSON string literal; invalid UTF-8 becomes U+FFFD, as text decoding would make it.
void append_json_string(std::string& out, std::string_view text);
// A JSON string holding standard base64 (with padding) of `bytes`.
void append_base64(std::string& out, std::span<const std::byte> bytes);
// The shortest decimal that reads back as the same float / double; NaN and infinities as the
// strings "NaN", "Infinity", "-Infinity", as protobuf's JSON mapping writes them.
void append_float(std::string& out, float value);
void append_double(std::string& out, double value);

}  // namespace onnxmap::detail
