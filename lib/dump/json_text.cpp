#include "dump/json_text.hpp"

#include <array>
#include <charconv>
#include <cmath>

namespace onnxmap::detail {

namespace {

// The length of the valid UTF-8 sequence starting at text[i], or 0 when it is not valid.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t length = 0;
  std::uint32_t min = 0;
  if (lead < 0x80U) return 1;
  if ((lead & 0xE0U) == 0xC0U) {
    length = 2;
    min = 0x80;
  } else if ((lead & 0xF0U) == 0xE0U) {
    length = 3;
    min = 0x800;
  } else if ((lead & 0xF8U) == 0xF0U) {
    length = 4;
    min = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  std::uint32_t code = lead & (0x7FU >> length);
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0U) != 0x80U) return 0;
    code = (code << 6U) | (byte(i + k) & 0x3FU);
  }
  const bool surrogate = code >= 0xD800 && code <= 0xDFFF;
  return code < min || code > 0x10FFFF || surrogate ? 0 : length;
}

template <class T>
void append_number(std::string& out, T value) {
  if (std::isnan(value)) {
    out += "\"NaN\"";
  } else if (std::isinf(value)) {
    out += value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  } else {
    std::array<char, 64> text{};
    const auto result = std::to_chars(text.data(), text.data() + text.size(), value);
    out.append(text.data(), result.ptr);
  }
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t length = utf8_length(text, i);
    if (length == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
      continue;
    }
    if (length > 1) {
      out.append(text.substr(i, length));
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20U || c == 0x7FU) {
      out += "\\u00";
      out += kHex[c >> 4U];
      out += kHex[c & 0xFU];
    } else {
      out += static_cast<char>(c);
    }
    i += length;
  }
  out += '"';
}

void append_base64(std::string& out, std::span<const std::byte> bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  out += '"';
  std::size_t i = 0;
  const auto at = [&](std::size_t k) { return static_cast<std::uint32_t>(bytes[k]); };
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = (at(i) << 16U) | (at(i + 1) << 8U) | at(i + 2);
    for (const unsigned shift : {18U, 12U, 6U, 0U}) out += kAlphabet[(v >> shift) & 0x3FU];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    const std::uint32_t v = (at(i) << 16U) | (rest == 2 ? at(i + 1) << 8U : 0U);
    out += kAlphabet[(v >> 18U) & 0x3FU];
    out += kAlphabet[(v >> 12U) & 0x3FU];
    out += rest == 2 ? kAlphabet[(v >> 6U) & 0x3FU] : '=';
    out += '=';
  }
  out += '"';
}

void append_float(std::string& out, float value) {
  append_number(out, value);
}
void append_double(std::string& out, double value) {
  append_number(out, value);
}

}  // namespace onnxmap::detail
