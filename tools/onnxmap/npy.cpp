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

}  // namespace onnxmap::cli
