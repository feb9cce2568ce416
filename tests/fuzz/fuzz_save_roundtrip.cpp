// Fuzz target: save round trips. Any bytes that open as a model are saved (inline, or with
// external data under options the input's size picks) and opened again; the copy must hold the same
// tensors: names, types, dims and decoded bytes. Saving may refuse (onnxmap::Error), but what it
// writes must open.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "onnxmap/onnxmap.hpp"
#include "scratch.hpp"
#include "walk.hpp"

namespace {

namespace fs = std::filesystem;

// The decoded bytes of a tensor, or nullopt when the source itself cannot decode them.
std::optional<std::vector<std::byte>> decoded(const onnxmap::Tensor& t) {
  try {
    const onnxmap::TensorData data = t.data();  // owns decoded bytes: keep it alive
    return std::vector<std::byte>(data.bytes().begin(), data.bytes().end());
  } catch (const onnxmap::Error&) {
    return std::nullopt;
  }
}

// The save options an input picks, by its size (so the seeds stay whole models).
onnxmap::SaveOptions options_from(std::size_t choice) {
  onnxmap::SaveOptions options;
  options.external_data = (choice & 1U) != 0;
  options.size_threshold = (choice & 2U) != 0 ? 0 : 16;
  options.align = (choice & 4U) != 0 ? 1 : 4096;
  options.one_file_per_tensor = (choice & 8U) != 0;
  options.max_external_file_size = (choice & 16U) != 0 ? 64 : 0;
  options.convert_attribute = (choice & 32U) != 0;
  return options;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  onnxmap::Options open_options;
  open_options.max_depth = 32;
  open_options.index_threads = 1 + static_cast<unsigned>(size % 3);
  std::optional<onnxmap::Model> source;
  try {
    source = onnxmap::Model::from_bytes(std::as_bytes(std::span(data, size)), open_options);
  } catch (const onnxmap::Error&) {
    return 0;
  }
  // A fresh folder each time: files of an earlier run must not satisfy this one's references.
  const fs::path folder = onnxmap::fuzz::scratch_folder() / "run";
  fs::remove_all(folder);
  fs::create_directories(folder);
  const fs::path path = folder / "model.onnx";
  try {
    (void)onnxmap::save(*source, path, options_from(size));
  } catch (const onnxmap::Error&) {
    return 0;
  }
  std::optional<onnxmap::Model> copy;
  try {
    copy = onnxmap::Model::open(path, open_options);
  } catch (const onnxmap::Error&) {
    __builtin_trap();  // save wrote a model that does not open
  }
  try {
    // Packed scalars are checked when read, not at open: a getter may throw for the copy as it
    // would for the source.
    onnxmap::fuzz::walk_model(*copy);
  } catch (const onnxmap::Error&) {
  }
  if (copy->tensor_count() != source->tensor_count()) __builtin_trap();
  for (std::size_t i = 0; i < source->tensor_count(); ++i) {
    const onnxmap::Tensor a = source->tensor_at(i);
    const onnxmap::Tensor b = copy->tensor_at(i);
    if (a.lookup_name() != b.lookup_name() || a.data_type() != b.data_type() ||
        !std::ranges::equal(a.dims(), b.dims())) {
      __builtin_trap();  // a tensor changed its name, type or shape
    }
    const auto before = decoded(a);
    if (before && before != decoded(b)) __builtin_trap();  // the bytes changed
  }
  return 0;
}
