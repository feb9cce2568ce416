#include "save_roundtrip.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "onnxmap/onnxmap.hpp"
#include "scratch.hpp"
#include "walk.hpp"

namespace onnxmap::fuzz {

namespace {

namespace fs = std::filesystem;

// The decoded bytes of a tensor, or nullopt when the source itself cannot decode them.
std::optional<std::vector<std::byte>> decoded(const Tensor& t) {
  try {
    const TensorData data = t.data();  // owns decoded bytes: keep it alive
    return std::vector<std::byte>(data.bytes().begin(), data.bytes().end());
  } catch (const Error&) {
    return std::nullopt;
  }
}

// What differs between the tensors of `source` and of its saved `copy`, or "".
std::string compare_tensors(const Model& source, const Model& copy) {
  if (copy.tensor_count() != source.tensor_count()) {
    return "the copy holds " + std::to_string(copy.tensor_count()) + " tensors, the source " +
           std::to_string(source.tensor_count());
  }
  for (std::size_t i = 0; i < source.tensor_count(); ++i) {
    const Tensor a = source.tensor_at(i);
    const Tensor b = copy.tensor_at(i);
    if (a.lookup_name() != b.lookup_name() || a.data_type() != b.data_type() ||
        !std::ranges::equal(a.dims(), b.dims())) {
      return a.path() + ": the copy's name, type or dims differ";
    }
    const auto before = decoded(a);
    if (before && before != decoded(b)) return a.path() + ": the copy's bytes differ";
  }
  return {};
}

// The save options `choice` picks.
SaveOptions save_options_from(std::size_t choice) {
  SaveOptions options;
  options.external_data = (choice & 1U) != 0 ? ExternalData::external : ExternalData::inline_data;
  options.size_threshold = (choice & 2U) != 0 ? 0 : 16;
  options.align = (choice & 4U) != 0 ? 1 : 4096;
  options.one_file_per_tensor = (choice & 8U) != 0;
  options.max_external_file_size = (choice & 16U) != 0 ? 64 : 0;
  options.convert_attribute = (choice & 32U) != 0;
  options.checksum = (choice & 64U) != 0;
  return options;
}

}  // namespace

SaveRoundTrip compare_save_roundtrip(std::span<const std::byte> input, std::size_t choice) {
  OpenOptions open_options;
  open_options.max_depth = 32;
  std::optional<Model> source;
  try {
    source = Model::from_bytes(input, open_options);
  } catch (const Error&) {
    return {};
  }
  // A fresh folder each time: files of an earlier run must not satisfy this one's references.
  const fs::path folder = scratch_folder() / "run";
  fs::remove_all(folder);
  fs::create_directories(folder);
  const fs::path path = folder / "model.onnx";
  try {
    (void)save(*source, path, save_options_from(choice));
  } catch (const Error&) {
    return {};
  }
  std::optional<Model> copy;
  try {
    copy = Model::open(path, open_options);
  } catch (const Error& e) {
    return {true, std::string("the saved model does not open: ") + e.what()};
  }
  try {
    // Packed scalars are checked when read, not at open: a getter may throw for the copy as it
    // would for the source.
    walk_model(*copy);
  } catch (const Error&) {
  }
  return {true, compare_tensors(*source, *copy)};
}

}  // namespace onnxmap::fuzz
