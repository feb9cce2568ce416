// Fuzz target: a model file opened from disk in both load modes, and peeked. The input is written
// to a file, then opened mapped and copied (LoadMode::read, Boost.Iostreams); both must agree,
// and a file that opens fully must also peek, since peek checks a subset of what open checks.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>

#include "onnxmap/onnxmap.hpp"
#include "scratch.hpp"
#include "walk.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path& model_path() {
  static const fs::path path = onnxmap::fuzz::scratch_folder() / "model.onnx";
  return path;
}

// The tensor count of a full open, or the kind of error it failed with.
struct Outcome {
  std::optional<std::size_t> tensors;
  onnxmap::ErrorKind error = onnxmap::ErrorKind::io;
};

Outcome open_and_walk(onnxmap::LoadMode mode) {
  onnxmap::OpenOptions options;
  options.mode = mode;
  options.max_depth = 32;
  try {
    const onnxmap::Model model = onnxmap::Model::open(model_path(), options);
    onnxmap::fuzz::walk_model(model);
    return {model.tensor_count()};
  } catch (const onnxmap::Error& e) {
    return {std::nullopt, e.kind()};
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  {
    std::ofstream out(model_path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  const Outcome copied = open_and_walk(onnxmap::LoadMode::read);
  const Outcome mapped = open_and_walk(onnxmap::LoadMode::map);
  if (copied.tensors != mapped.tensors || (!copied.tensors && copied.error != mapped.error)) {
    __builtin_trap();  // the two load modes disagree about the same bytes
  }
  for (const onnxmap::LoadMode mode : {onnxmap::LoadMode::read, onnxmap::LoadMode::map}) {
    onnxmap::OpenOptions options;
    options.mode = mode;
    options.max_depth = 32;
    try {
      onnxmap::fuzz::walk_summary(onnxmap::peek(model_path(), options));
    } catch (const onnxmap::Error&) {
      if (copied.tensors) __builtin_trap();  // opens fully, yet peek refuses it
    }
  }
  return 0;
}
