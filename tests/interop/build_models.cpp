// Writes models with the builder for python3-onnx to judge (tests/interop/convert_interop.py builds
// the same model with onnx.helper and compares them field by field).
//
//   build_models FOLDER   writes FOLDER/every.onnx (inline) and FOLDER/every_ext.onnx (external
//                         data: threshold 0, attributes too, 64-byte alignment)

#include <cstring>
#include <iostream>

#include "onnxmap/onnxmap.hpp"

using namespace onnxmap;

namespace {

// Float32 values 0, 0.5, 1, ... as raw bytes.
std::vector<std::byte> ramp(std::size_t count) {
  std::vector<std::byte> out(count * 4);
  for (std::size_t i = 0; i < count; ++i) {
    const float v = static_cast<float>(i) * 0.5F;
    std::memcpy(out.data() + i * 4, &v, 4);
  }
  return out;
}

std::vector<std::byte> int64s(std::initializer_list<std::int64_t> values) {
  std::vector<std::byte> out(values.size() * 8);
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

ModelBuilder every() {
  ModelBuilder m;
  m.ir_version(8).opset("", 17).opset("custom", 1).producer("onnxmap-builder", "1.0");
  m.domain("ai.onnxmap").model_version(ModelVersion::semver(1, 2, 345)).doc_string("every field");
  m.metadata("author", "onnxmap");

  GraphBuilder body("body");
  body.node("Identity", {"bx"}, {"by"}).name("inner");
  body.initializer(TensorBuilder("body_w", DataType::float32, {8}, ramp(8)));
  body.input("bx", TypeSpec::tensor(DataType::float32, std::vector<Dim>{}));
  body.output("by", TypeSpec::tensor(DataType::float32, std::vector<Dim>{}));

  const SparseTensorBuilder sparse{
      TensorBuilder("sparse_values", DataType::float32, {2}, ramp(2)),
      TensorBuilder("sparse_indices", DataType::int64, {2}, int64s({1, 5})),
      {3, 3}};
  GraphBuilder branch("branch");  // If's branches take no inputs; "c" is from the outer graph
  branch.node("Identity", {"c"}, {"by"});
  branch.output("by", TypeSpec::tensor(DataType::float32, {{32}}));

  GraphBuilder& g = m.graph("main");
  g.doc_string("the main graph");
  g.input("x", TypeSpec::tensor(DataType::float32, {{"batch", 16}}));
  g.input("cond", TypeSpec::tensor(DataType::boolean, std::vector<Dim>{}));
  g.initializer(TensorBuilder("w", DataType::float32, {16, 16}, ramp(256)).doc_string("weights"));
  g.initializer(TensorBuilder("half", DataType::float16, {4}, std::vector<std::byte>(8)));
  g.initializer(TensorBuilder::strings("names", {2}, {"alpha", "beta"}));
  g.sparse_initializer(sparse);
  g.node("Constant", {}, {"c"})
      .attribute("value", TensorBuilder("", DataType::float32, {32}, ramp(32)));
  g.node("MatMul", {"x", "w"}, {"y"}).name("matmul").doc_string("y = x w");
  g.node("If", {"cond"}, {"z"}).attribute("then_branch", branch).attribute("else_branch", branch);
  NodeBuilder& n = g.node("Custom", {"y", ""}, {"out"});
  n.domain("custom");
  n.attribute("f", 0.25F)
      .attribute("i", std::int64_t{-7})
      .attribute("s", std::string("text"))
      .attribute("t", TensorBuilder("attr_t", DataType::int64, {3}, int64s({1, 2, 3})))
      .attribute("g", body)
      .attribute("floats", std::vector<float>{1.5F, -2.0F})
      .attribute("ints", std::vector<std::int64_t>{3, -4, 1LL << 40})
      .attribute("strings", std::vector<std::string>{"a", "b"})
      .attribute("tensors",
                 std::vector<TensorBuilder>{TensorBuilder("t0", DataType::float32, {4}, ramp(4))})
      .attribute("graphs",
                 std::vector<std::shared_ptr<GraphBuilder>>{std::make_shared<GraphBuilder>(body)})
      .attribute("sparse", sparse)
      .attribute("sparses", std::vector<SparseTensorBuilder>{sparse})
      .attribute("tp", TypeSpec::sequence(TypeSpec::tensor(DataType::int8, {{1, "n"}})))
      .attribute("tps", std::vector<TypeSpec>{
                            TypeSpec::map(DataType::int64, TypeSpec::tensor(DataType::float32)),
                            TypeSpec::optional(TypeSpec::tensor(DataType::int8)),
                            TypeSpec::opaque("d", "o")});
  g.output("out", TypeSpec::tensor(DataType::float32, {{"batch", 16}}));
  g.value_info("sp",
               TypeSpec::sparse_tensor(DataType::float32, {{Dim("n"), 3}}).denotation("TENSOR"));

  FunctionBuilder& fn = m.function("custom", "Fn");
  fn.inputs = {"a"};
  fn.outputs = {"b"};
  fn.attributes = {"alpha"};
  fn.opset_imports = {{"", 17}};
  fn.doc_string = "a function";
  fn.node("LeakyRelu", {"a"}, {"b"}).attribute_ref("alpha", "alpha", AttributeType::float32);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: build_models FOLDER\n";
    return 2;
  }
  try {
    const std::filesystem::path folder = argv[1];
    const ModelBuilder model = every();
    save(model, folder / "every.onnx");
    SaveOptions external;
    external.external_data = onnxmap::ExternalData::external;
    external.size_threshold = 0;
    external.convert_attribute = true;
    external.align = 64;
    save(model, folder / "every_ext.onnx", external);
  } catch (const Error& e) {
    std::cerr << e.what() << '\n';
    return 1;
  }
  return 0;
}
