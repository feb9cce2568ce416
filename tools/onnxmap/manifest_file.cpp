#include "manifest_file.hpp"

#include <fstream>
#include <sstream>

namespace onnxmap::cli {

Manifest read_manifest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::io, "cannot read the manifest", Error::kNoOffset, {}, path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_manifest(text.str(), path);
}

}  // namespace onnxmap::cli
