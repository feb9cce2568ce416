#include "npy.hpp"

#include <string>

namespace onnxmap::cli {

std::vector<char> npy_header(std::string_view descr, std::span<const std::int64_t> shape) {
  std::string dict = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (";
  for (const std::int64_t d : shape) dict += std::to_string(d) + ", ";
  if (shape.size() > 1) dict.resize(dict.size() - 1);  // (2, 3) but (2,) for one dimension
  if (shape.size() > 1)
    dict.back() = ')';
  else
    dict += ")";
  dict += ", }";
  // Magic (6) + version (2) + header length (2) + dict + padding + '\n', a multiple of 64.
  constexpr std::size_t kPrefix = 10;
  const std::size_t total = (kPrefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - kPrefix - dict.size() - 1, ' ');
  dict += '\n';
  std::vector<char> out{'\x93', 'N', 'U', 'M', 'P', 'Y', '\x01', '\x00'};
  out.push_back(static_cast<char>(dict.size() & 0xFFU));
  out.push_back(static_cast<char>(dict.size() >> 8U));
  out.insert(out.end(), dict.begin(), dict.end());
  return out;
}

std::vector<std::byte> unpack_sub_byte(std::span<const std::byte> packed, std::uint32_t bits,
                                       bool is_signed, std::uint64_t count) {
  std::vector<std::byte> out;
  out.reserve(count);
  const std::uint32_t per_byte = 8 / bits;
  const std::uint32_t mask = (1U << bits) - 1;
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto byte = static_cast<std::uint32_t>(packed[i / per_byte]);
    std::uint32_t v = (byte >> (bits * (i % per_byte))) & mask;
    if (is_signed && (v & (1U << (bits - 1))) != 0) v |= ~mask;  // sign-extend
    out.push_back(static_cast<std::byte>(v & 0xFFU));
  }
  return out;
}

}  // namespace onnxmap::cli
