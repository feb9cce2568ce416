// Fuzz target: external-data resolution with arbitrary keys and locations. A model folder made
// once per process holds good data files and every trap the path policy must refuse (a symlink
// and a hard link to a file outside, a folder, a FIFO, a symlink to a device). The input, read as
// lines, becomes the initializers' external_data entries:
//
//   !<data_type byte><dim byte>...   starts a tensor (dims are the following bytes)
//   key=value                         adds an external_data entry to the current tensor
//   key                               adds an entry with no value
//
// The oracle beyond "no crash": every file outside the folder is filled with 0xEE and no file
// inside holds that byte, so a tensor that opens with an 0xEE byte escaped the folder.

#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnxmap/onnxmap.hpp"
#include "schema/fields.hpp"
#include "scratch.hpp"
#include "walk.hpp"
#include "wire/wire.hpp"

namespace {

namespace fs = std::filesystem;
constexpr std::byte kOutside{0xEE};

void write_file(const fs::path& path, std::size_t size, char fill) {
  std::ofstream out(path, std::ios::binary);
  for (std::size_t i = 0; i < size; ++i) {
    out.put(fill == 0 ? static_cast<char>(i % 200) : fill);  // 0..199: never 0xEE
  }
}

// The model folder, made on first use (removed at exit with the scratch folder).
const fs::path& model_folder() {
  static const fs::path folder = [] {
    const fs::path root = onnxmap::fuzz::scratch_folder();
    const fs::path models = root / "model";
    fs::create_directories(models / "sub");
    fs::create_directories(models / "dir");
    write_file(root / "outside.bin", 64, static_cast<char>(kOutside));
    write_file(models / "data.bin", 64, 0);
    write_file(models / "short.bin", 3, 0);
    write_file(models / "empty.bin", 0, 0);
    write_file(models / "sub" / "inner.bin", 16, 0);
    fs::create_symlink("data.bin", models / "link_in");
    fs::create_symlink("../outside.bin", models / "link_out");
    fs::create_symlink("/dev/zero", models / "zero");
    fs::create_hard_link(root / "outside.bin", models / "hard.bin");
    if (::mkfifo((models / "fifo").c_str(), 0600) != 0) std::abort();
    return models;
  }();
  return folder;
}

struct TensorSpec {
  std::int32_t data_type = 1;
  std::vector<std::int64_t> dims;
  std::vector<std::pair<std::string_view, std::string_view>> entries;
};

std::vector<TensorSpec> parse(std::string_view text) {
  std::vector<TensorSpec> tensors(1);
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (!line.empty() && line.front() == '!') {
      TensorSpec& t = tensors.emplace_back();
      if (line.size() > 1) t.data_type = static_cast<unsigned char>(line[1]) % 30;
      for (std::size_t i = 2; i < line.size() && i < 6; ++i) {
        t.dims.push_back(static_cast<unsigned char>(line[i]));
      }
      continue;
    }
    const std::size_t eq = line.find('=');
    tensors.back().entries.emplace_back(line.substr(0, eq), eq == std::string_view::npos
                                                                ? std::string_view{}
                                                                : line.substr(eq + 1));
  }
  return tensors;
}

std::vector<std::byte> model_bytes(const std::vector<TensorSpec>& tensors) {
  using namespace onnxmap;
  wire::Writer graph;
  // Reused across tensors and entries: building the model was 40% of an execution under ASan,
  // most of it fresh writers growing their vectors from one byte.
  wire::Writer t;
  wire::Writer entry;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorSpec& spec = tensors[i];
    t.clear();
    for (const std::int64_t d : spec.dims) t.field_int64(schema::TensorProto::kDims, d);
    t.field_int32(schema::TensorProto::kDataType, spec.data_type);
    t.field_string(schema::TensorProto::kName, "t" + std::to_string(i));
    for (const auto& [key, value] : spec.entries) {
      entry.clear();
      entry.field_string(schema::StringStringEntryProto::kKey, key);
      entry.field_string(schema::StringStringEntryProto::kValue, value);
      t.field_bytes(schema::TensorProto::kExternalData, entry.bytes());
    }
    t.field_int32(schema::TensorProto::kDataLocation, 1);
    graph.field_bytes(schema::GraphProto::kInitializer, t.bytes());
  }
  wire::Writer model;
  model.field_int64(schema::ModelProto::kIrVersion, 10);
  model.field_bytes(schema::ModelProto::kGraph, graph.bytes());
  return model.take();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto bytes = model_bytes(parse(text));
  onnxmap::OpenOptions options;
  options.mode = size % 2 == 0 ? onnxmap::LoadMode::map : onnxmap::LoadMode::read;
  try {
    const onnxmap::Model model = onnxmap::Model::from_bytes(
        bytes, options, onnxmap::schema::MessageKind::ModelProto, model_folder());
    onnxmap::fuzz::walk_model(model);
    for (std::size_t i = 0; i < model.tensor_count(); ++i) {
      const onnxmap::Tensor t = model.tensor_at(i);
      if (t.storage() != onnxmap::TensorStorage::external) continue;
      for (const std::byte b : t.bytes()) {
        if (b == kOutside) __builtin_trap();  // read a file from outside the model's folder
      }
    }
  } catch (const onnxmap::Error&) {
  }
  return 0;
}
