#include "text_file.hpp"

#include <fstream>
#include <sstream>

#include "onnxmap/error.hpp"

namespace onnxmap::cli {

std::string read_text(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::io, "cannot read " + what, Error::kNoOffset, {}, path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace onnxmap::cli
