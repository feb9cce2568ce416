// SaveOptions::weights_from: initializers found in a checkpoint's safetensors file (by name, by
// content, transposed) point into it and no byte of theirs is written; the rest go to the
// model's own data file; share_transposed replaces folded copies by the checkpoint's tensor
// and a Transpose node; mismatches are clean errors.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "model_builder.hpp"
#include "onnxmap/onnxmap.hpp"
#include "test_support.hpp"

namespace onnxmap::test {
namespace {

// 4-byte elements of a rows x columns matrix, all distinct.
std::vector<std::byte> matrix(std::size_t rows, std::size_t columns, float seed) {
  std::vector<float> values(rows * columns);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = seed + static_cast<float>(i);
  std::vector<std::byte> out(values.size() * 4);
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

std::vector<std::byte> transposed(const std::vector<std::byte>& m, std::size_t rows,
                                  std::size_t columns) {
  std::vector<std::byte> out(m.size());
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < columns; ++c) {
      std::memcpy(&out[(c * rows + r) * 4], &m[(r * columns + c) * 4], 4);
    }
  }
  return out;
}

const auto kUp = matrix(16, 32, 1);      // "up" [16, 32]
const auto kDown = matrix(16, 32, 1e4);  // "down" [16, 32]; the graph holds its transpose
const auto kCopy = matrix(1, 512, 2e4);  // "copy" [512]; the graph names it "renamed"
const auto kOwn = matrix(1, 512, 3e4);   // only in the graph

// Options whose data goes where the source's does: with weights_from, to an external file.
SaveOptions keep() {
  SaveOptions options;
  options.external_data = ExternalData::keep;
  return options;
}

class WeightsFrom : public TempFolder {
 protected:
  void SetUp() override {
    TempFolder::SetUp();
    ModelBuilder weights;
    weights.ir_version(10).opset("", 21);
    GraphBuilder& w = weights.graph("weights");
    w.initializer(TensorBuilder("up", DataType::float32, {16, 32}, kUp));
    w.initializer(TensorBuilder("down", DataType::float32, {16, 32}, kDown));
    w.initializer(TensorBuilder("copy", DataType::float32, {512}, kCopy));
    save(weights, at("w.onnx"));
    save(Model::open(at("w.onnx")), at("ckpt.safetensors"));
  }

  // x [4, 16] -> MatMul(up^T... ) a graph reading every initializer.
  static ModelBuilder graph(const std::string& up_name = "up") {
    ModelBuilder m;
    m.ir_version(10).opset("", 21);
    GraphBuilder& g = m.graph("main");
    g.input("x", TypeSpec::tensor(DataType::float32, {{4, 32}}));
    g.initializer(TensorBuilder(up_name, DataType::float32, {16, 32}, kUp));
    g.initializer(TensorBuilder("val_7", DataType::float32, {32, 16}, transposed(kDown, 16, 32)));
    g.initializer(TensorBuilder("renamed", DataType::float32, {512}, kCopy));
    g.initializer(TensorBuilder("own", DataType::float32, {512}, kOwn));
    g.node("MatMul", {"x", "val_7"}, {"h"});
    g.node("MatMul", {"h", up_name}, {"y"});
    g.output("y", TypeSpec::tensor(DataType::float32, {{4, 32}}));
    return m;
  }

  static bool checked(const Model& model) {
    CheckOptions options;
    options.read_data = true;
    return check(model, options).ok();
  }

  // With external data for the model's own tensors unless `options` say otherwise.
  SaveResult save_sharing(const ModelBuilder& builder, SaveOptions options = keep()) {
    save(builder, at("g.onnx"));
    options.weights_from.source = at("ckpt.safetensors");
    return save(Model::open(at("g.onnx")), at("out.onnx"), options);
  }
};

TEST_F(WeightsFrom, InitializersPointIntoTheCheckpointByNameAndContent) {
  const SaveResult r = save_sharing(graph());
  EXPECT_EQ(r.shared.by_name.tensors, 1U);
  EXPECT_EQ(r.shared.by_name.bytes, kUp.size());
  EXPECT_EQ(r.shared.by_content.tensors, 1U);
  EXPECT_EQ(r.shared.transposed.tensors, 0U);
  EXPECT_EQ(r.shared.transposed_kept.tensors, 1U);  // val_7 stays the model's own
  EXPECT_EQ(r.shared.own.tensors, 2U);              // val_7 and own
  EXPECT_EQ(r.shared.own.bytes, kDown.size() + kOwn.size());
  EXPECT_EQ(r.data_files, std::vector<std::filesystem::path>{"out.onnx.data"});
  EXPECT_EQ(std::filesystem::file_size(at("out.onnx.data")), 4096 + kOwn.size());

  const Model original = Model::open(at("g.onnx"));
  const Model out = Model::open(at("out.onnx"));
  const Model checkpoint_model = Model::open(at("w.onnx"));
  for (const char* name : {"up", "val_7", "renamed", "own"}) {
    EXPECT_TRUE(
        std::ranges::equal(out.tensor(name).data().bytes(), original.tensor(name).data().bytes()))
        << name;
  }
  EXPECT_EQ(out.tensor("up").data_file(), "ckpt.safetensors");
  EXPECT_EQ(out.tensor("renamed").data_file(), "ckpt.safetensors");
  EXPECT_EQ(out.tensor("own").data_file(), "out.onnx.data");
  EXPECT_TRUE(checked(out));
}

TEST_F(WeightsFrom, ShareTransposedFeedsTheCheckpointsTensorToATranspose) {
  SaveOptions options = keep();
  options.weights_from.share_transposed = true;
  const SaveResult r = save_sharing(graph(), options);
  EXPECT_EQ(r.shared.transposed.tensors, 1U);
  EXPECT_EQ(r.shared.transposed_kept.tensors, 0U);
  EXPECT_EQ(r.shared.own.tensors, 1U);
  const Model out = Model::open(at("out.onnx"));
  EXPECT_FALSE(out.find_tensor("val_7").has_value());
  const Tensor down = out.tensor("down");
  EXPECT_EQ(down.data_file(), "ckpt.safetensors");
  EXPECT_TRUE(std::ranges::equal(down.dims(), std::vector<std::int64_t>{16, 32}));
  EXPECT_TRUE(std::ranges::equal(down.data().bytes(), kDown));
  const Node first = *out.graph()->nodes().begin();
  EXPECT_EQ(first.op_type(), "Transpose");
  EXPECT_EQ(*first.inputs().begin(), "down");
  EXPECT_EQ(*first.outputs().begin(), "val_7");
  EXPECT_EQ(first.attribute("perm")->ints(), (std::vector<std::int64_t>{1, 0}));
  EXPECT_TRUE(checked(out));
}

// A transposed copy of a tensor the graph already holds by name reads that initializer.
TEST_F(WeightsFrom, ATransposedCopyOfANamedTensorReadsIt) {
  ModelBuilder m = graph();
  m.graph("main").initializer(
      TensorBuilder("val_9", DataType::float32, {32, 16}, transposed(kUp, 16, 32)));
  SaveOptions options = keep();
  options.weights_from.share_transposed = true;
  const SaveResult r = save_sharing(m, options);
  EXPECT_EQ(r.shared.transposed.tensors, 2U);
  const Model out = Model::open(at("out.onnx"));
  EXPECT_FALSE(out.find_tensor("val_9").has_value());
  int transposes_of_up = 0;
  for (const Node& node : out.graph()->nodes()) {
    if (node.op_type() == "Transpose" && *node.inputs().begin() == "up") ++transposes_of_up;
  }
  EXPECT_EQ(transposes_of_up, 1);
  EXPECT_EQ(out.graph()->initializers().size(), 4U);  // up, down, renamed, own
}

TEST_F(WeightsFrom, MismatchesAreCleanErrors) {
  const auto error_of = [&](const ModelBuilder& m, SaveOptions options = {}) {
    try {
      save_sharing(m, options);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  ModelBuilder other_shape;
  other_shape.ir_version(10).opset("", 21);
  other_shape.graph("g").initializer(TensorBuilder("up", DataType::float32, {32, 16}, kUp));
  EXPECT_NE(error_of(other_shape)
                .find("'up' is FLOAT [32, 16], the checkpoint's 'up' "
                      "(ckpt.safetensors) FLOAT [16, 32]"),
            std::string::npos)
      << error_of(other_shape);
  ModelBuilder other_values;
  other_values.ir_version(10).opset("", 21);
  other_values.graph("g").initializer(TensorBuilder("up", DataType::float32, {16, 32}, kDown));
  EXPECT_NE(error_of(other_values).find("holds other values than the checkpoint's 'up'"),
            std::string::npos);
  SaveOptions mapped;
  mapped.weights_from.names = {{"renamed", "absent"}};
  EXPECT_NE(error_of(graph(), mapped).find("'absent' for 'renamed', which the checkpoint"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(at("out.onnx")));

  // A checkpoint outside the model's folder: external data cannot point there.
  std::filesystem::create_directory(at("sub"));
  save(graph(), at("g.onnx"));
  SaveOptions outside;
  outside.weights_from.source = at("ckpt.safetensors");
  try {
    save(Model::open(at("g.onnx")), at("sub/out.onnx"), outside);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsafe_path);
    EXPECT_NE(std::string(e.what()).find("lies outside the folder"), std::string::npos);
  }
}

TEST_F(WeightsFrom, SourcesThatAreNoCheckpointAreCleanErrors) {
  save(graph(), at("g.onnx"));
  const Model model = Model::open(at("g.onnx"));
  const auto error_of = [&](const std::filesystem::path& source) {
    SaveOptions options = keep();
    options.weights_from.source = source;
    try {
      save(model, at("out.onnx"), options);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of(at("absent.safetensors")).find("no such file or folder"), std::string::npos);
  EXPECT_NE(error_of(at("g.onnx")).find("is not a checkpoint"), std::string::npos);
  std::filesystem::create_directory(at("empty"));
  EXPECT_NE(error_of(at("empty")).find("holds no .safetensors file"), std::string::npos);
  const std::string index = R"({"weight_map": {"up": "../x.safetensors"}})";
  write(at("model.safetensors.index.json"), std::as_bytes(std::span(index)));
  EXPECT_NE(error_of(at("model.safetensors.index.json")).find("climbs out"), std::string::npos);
  // A folder whose two files both hold "up".
  std::filesystem::create_directory(at("two"));
  std::filesystem::copy_file(at("ckpt.safetensors"), at("two/a.safetensors"));
  std::filesystem::copy_file(at("ckpt.safetensors"), at("two/b.safetensors"));
  EXPECT_NE(error_of(at("two")).find("is in two files of the checkpoint, two/a.safetensors and "
                                     "two/b.safetensors"),
            std::string::npos)
      << error_of(at("two"));
  EXPECT_FALSE(std::filesystem::exists(at("out.onnx")));
}

// A name mapping finds a tensor under another name, with the checks of a name match.
TEST_F(WeightsFrom, ANameMappingFindsTensorsByTheCheckpointsName) {
  SaveOptions options = keep();
  options.weights_from.names = {{"w0", "up"}};
  options.weights_from.match_content = false;
  const SaveResult r = save_sharing(graph("w0"), options);
  EXPECT_EQ(r.shared.by_name.tensors, 1U);
  EXPECT_EQ(r.shared.by_content.tensors, 0U);  // content matching is off: "renamed" is own
  const Model out = Model::open(at("out.onnx"));
  EXPECT_EQ(out.tensor("w0").data_file(), "ckpt.safetensors");
}

// A checkpoint in a Hugging Face Hub cache snapshot, a symlink into the repository's blobs/: the
// graph written beside it points at the snapshot's name for it, which the reader follows.
TEST_F(WeightsFrom, AHubSnapshotsCheckpointIsFoundByItsName) {
  namespace fs = std::filesystem;
  const fs::path repo = at("hub/models--org--tiny");
  const fs::path snapshot = repo / "snapshots" / "c0ffee";
  fs::create_directories(repo / "blobs");
  fs::create_directories(snapshot);
  fs::rename(at("ckpt.safetensors"), repo / "blobs" / "5e1f");
  fs::create_symlink("../../blobs/5e1f", snapshot / "model.safetensors");
  save(graph(), at("g.onnx"));
  SaveOptions options = keep();
  options.weights_from.source = snapshot / "model.safetensors";
  const SaveResult r = save(Model::open(at("g.onnx")), snapshot / "model.onnx", options);
  EXPECT_EQ(r.shared.by_name.tensors + r.shared.by_content.tensors, 2U);
  const Model out = Model::open(snapshot / "model.onnx");
  EXPECT_EQ(out.tensor("up").data_file(), "model.safetensors");
  EXPECT_TRUE(checked(out));
}

}  // namespace
}  // namespace onnxmap::test
