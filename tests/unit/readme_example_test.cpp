// The README's library example, run as it is written, on the model its comment says to make.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "onnxmap/onnxmap.hpp"
#include "write/synth.hpp"
#include "test_support.hpp"

namespace {

TEST(Readme, LibraryExampleRuns) {
  const onnxmap::test::ScopedTestFolder scoped;
  const std::filesystem::path& folder = scoped.path();
  const auto old_path = std::filesystem::current_path();
  std::filesystem::current_path(folder);
  onnxmap::SynthOptions options;
  options.layers = 2;
  options.hidden = 64;
  (void)onnxmap::synth("model.onnx", options);

  // --- the README's code, unchanged ---
  const onnxmap::Model model = onnxmap::Model::open("model.onnx");
  for (const onnxmap::Node node : model.graph()->nodes()) {
    std::cout << node.op_type() << " ";
  }
  const onnxmap::Tensor w = model.tensor("model.layers.0.mlp.up_proj.weight");
  std::span<const std::byte> bytes = w.bytes();           // a view into the mapped file, no copy
  std::span<const std::byte> rows = w.slice_rows(0, 16);  // rows 0..15, also a view
  const onnxmap::ModelSummary meta = onnxmap::peek("model.onnx");  // metadata only
  std::cout << "\n" << meta.ir_version() << " " << bytes.size() << " " << rows.size() << "\n";

  onnxmap::SaveOptions external;  // weights to model.ext.onnx.data, each 4096-aligned
  external.external_data = true;
  onnxmap::save(model, "model.ext.onnx", external);

  std::vector<float> weights(4 * 4, 0.5F);
  onnxmap::ModelBuilder built;
  built.ir_version(8).opset("", 17);
  onnxmap::GraphBuilder& g = built.graph("tiny");
  g.input("x", onnxmap::TypeSpec::tensor(onnxmap::DataType::float32, {{"batch", 4}}));
  g.initializer(onnxmap::TensorBuilder("w", onnxmap::DataType::float32, {4, 4},
                                       std::as_bytes(std::span(weights))));  // borrowed
  g.node("MatMul", {"x", "w"}, {"y"});
  g.output("y", onnxmap::TypeSpec::tensor(onnxmap::DataType::float32, {{"batch", 4}}));
  onnxmap::save(built, "tiny.onnx");
  // --- end ---

  EXPECT_EQ(bytes.size(), 256U * 64U * 2U);
  EXPECT_EQ(rows.size(), 16U * 64U * 2U);
  const auto ext = onnxmap::Model::open("model.ext.onnx");
  EXPECT_EQ(ext.tensor("model.layers.0.mlp.up_proj.weight").data_file(),
            "model.ext.onnx.data");
  const auto tiny = onnxmap::Model::open("tiny.onnx");
  EXPECT_EQ(tiny.tensor("w").bytes().size(), 64U);
  std::filesystem::current_path(old_path);
}

}  // namespace
