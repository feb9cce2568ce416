// The builder: what it writes reads back through the views, attribute by attribute and type by
// type; bad tensors are refused when they are made. (tests/interop/ has python3-onnx judge the
// same files.)

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "onnxmap/onnxmap.hpp"
#include "test_support.hpp"

namespace onnxmap::test {
namespace {

std::vector<std::byte> floats(std::initializer_list<float> values) {
  std::vector<std::byte> out(values.size() * 4);
  if (!out.empty()) std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

class Builder : public TempFolder {};

TEST_F(Builder, EveryAttributeTypeReadsBack) {
  ModelBuilder m;
  m.ir_version(9).opset("", 19).opset("custom", 1).producer("builder_test", "0.1");
  m.domain("ai.test").model_version(ModelVersion::semver(1, 2, 3)).doc_string("doc");
  m.metadata("author", "us");
  GraphBuilder body("body");
  body.node("Identity", {"x"}, {"y"});
  body.input("x", TypeSpec::tensor(DataType::float32, std::vector<Dim>{}));
  body.output("y");
  const std::vector<std::byte> values = floats({1.5F, -2.0F});
  const SparseTensorBuilder sparse{
      TensorBuilder("sv", DataType::float32, {2}, values),
      TensorBuilder("si", DataType::int64, {2}, std::vector<std::byte>(16, std::byte{0})),
      {10}};
  GraphBuilder& g = m.graph("main");
  NodeBuilder& n = g.node("Custom", {"a", ""}, {"b"});
  n.domain("custom").name("n0").doc_string("node doc").overload("v2").metadata("k", "v");
  n.attribute("f", 0.25F)
      .attribute("i", std::int64_t{-7})
      .attribute("s", std::string("text"))
      .attribute("t", TensorBuilder("tt", DataType::float32, {2}, values))
      .attribute("g", body)
      .attribute("floats", std::vector<float>{1.0F, 2.0F})
      .attribute("ints", std::vector<std::int64_t>{3, -4})
      .attribute("strings", std::vector<std::string>{"a", "b"})
      .attribute("tensors", std::vector<TensorBuilder>{TensorBuilder::strings("st", {1}, {"x"})})
      .attribute("graphs",
                 std::vector<std::shared_ptr<GraphBuilder>>{std::make_shared<GraphBuilder>(body)})
      .attribute("sparse", sparse)
      .attribute("sparses", std::vector<SparseTensorBuilder>{sparse, sparse})
      .attribute("tp", TypeSpec::sequence(TypeSpec::tensor(DataType::int8)))
      .attribute("tps", std::vector<TypeSpec>{TypeSpec::optional(TypeSpec::tensor(DataType::int8)),
                                              TypeSpec::opaque("d", "o")});
  g.sparse_initializer(sparse);
  g.value_info("m", TypeSpec::map(DataType::int64, TypeSpec::tensor(DataType::float32)));
  g.value_info("sp",
               TypeSpec::sparse_tensor(DataType::float32, {{Dim("n"), 3}}).denotation("IMAGE"));
  FunctionBuilder& fn = m.function("custom", "Fn");
  fn.inputs = {"a"};
  fn.outputs = {"b"};
  fn.attributes = {"alpha"};
  fn.opset_imports = {{"", 19}};
  fn.node("Relu", {"a"}, {"b"}).attribute_ref("alpha", "alpha", AttributeType::float32);
  save(m, at("m.onnx"));

  const Model model = Model::open(at("m.onnx"));
  EXPECT_EQ(model.ir_version(), 9);
  EXPECT_EQ(model.model_version().to_string(), "1.2.3");
  EXPECT_EQ(model.opset_imports().size(), 2U);
  EXPECT_EQ(model.metadata_props().at(0).value, "us");
  const Node node = model.graph()->nodes()[0];
  EXPECT_EQ(node.domain(), "custom");
  EXPECT_EQ(node.overload(), "v2");
  EXPECT_EQ(node.inputs(), (std::vector<std::string_view>{"a", ""}));
  EXPECT_EQ(node.attribute("f")->f(), 0.25F);
  EXPECT_EQ(node.attribute("i")->i(), -7);
  EXPECT_EQ(node.attribute("s")->s(), "text");
  EXPECT_EQ(node.attribute("t")->t()->dims()[0], 2);
  EXPECT_EQ(node.attribute("g")->g()->nodes()[0].op_type(), "Identity");
  EXPECT_EQ(node.attribute("floats")->floats(), (std::vector<float>{1.0F, 2.0F}));
  EXPECT_EQ(node.attribute("ints")->ints(), (std::vector<std::int64_t>{3, -4}));
  EXPECT_EQ(node.attribute("strings")->strings().size(), 2U);
  EXPECT_EQ(node.attribute("tensors")->tensors()[0].strings()[0], "x");
  EXPECT_EQ(node.attribute("graphs")->graphs().size(), 1U);
  EXPECT_EQ(node.attribute("sparse")->sparse_tensor()->dims(), std::vector<std::int64_t>{10});
  EXPECT_EQ(node.attribute("sparses")->sparse_tensors().size(), 2U);
  EXPECT_EQ(node.attribute("tp")->tp()->to_string(), "seq(INT8)");
  EXPECT_EQ(node.attribute("tps")->type_protos().size(), 2U);
  for (const Attribute a : node.attributes()) {
    EXPECT_NE(a.type(), AttributeType::undefined) << a.name();
  }
  EXPECT_EQ(model.graph()->sparse_initializers().size(), 1U);
  EXPECT_EQ(model.graph()->value_infos()[1].type().denotation(), "IMAGE");
  const Function f = model.functions()[0];
  EXPECT_EQ(f.nodes()[0].attributes()[0].ref_attr_name(), "alpha");
  EXPECT_EQ(f.nodes()[0].attributes()[0].type(), AttributeType::float32);
  // The tensors: the attribute's, the sparse parts, found by name.
  EXPECT_EQ(model.tensor("tt").data().bytes()[3], values[3]);
  EXPECT_EQ(model.tensor("sv").data_type(), DataType::float32);
}

TEST_F(Builder, BorrowedAndOwnedBytes) {
  std::vector<std::byte> mine = floats({1, 2, 3, 4});
  ModelBuilder m;
  m.graph().initializer(TensorBuilder("borrowed", DataType::float32, {2, 2}, std::span(mine)));
  m.graph().initializer(TensorBuilder("owned", DataType::float32, {4}, floats({5, 6, 7, 8})));
  save(m, at("m.onnx"));
  const Model model = Model::open(at("m.onnx"));
  EXPECT_TRUE(std::ranges::equal(model.tensor("borrowed").bytes(), mine));
  EXPECT_EQ(model.tensor("owned").bytes().size(), 16U);
  EXPECT_EQ(model.ir_version(), kLatestIrVersion);
}

TEST_F(Builder, GeneratedAndZeroPayloads) {
  ModelBuilder m;
  // 3 MiB generated in 1 MiB pieces, in order; 64 MiB of zeros left as a hole.
  std::uint64_t next = 0;
  m.graph().initializer(TensorBuilder("gen", DataType::uint8, {3 << 20},
                                      [&next](std::uint64_t offset, std::span<std::byte> out) {
                                        EXPECT_EQ(offset, next);
                                        for (std::size_t i = 0; i < out.size(); ++i)
                                          out[i] = std::byte((offset + i) % 251);
                                        next = offset + out.size();
                                      }));
  m.graph().initializer(TensorBuilder::zeros("zero", DataType::float32, {16 << 20}));
  save(m, at("m.onnx"));
  EXPECT_EQ(next, 3U << 20);
  const Model model = Model::open(at("m.onnx"));
  const auto gen = model.tensor("gen").bytes();
  EXPECT_EQ(gen[(2 << 20) + 5], std::byte(((2 << 20) + 5) % 251));
  const auto zero = model.tensor("zero").bytes();
  EXPECT_EQ(zero.size(), 64U << 20);
  EXPECT_TRUE(
      std::ranges::all_of(zero.subspan(0, 1 << 20), [](std::byte b) { return b == std::byte{0}; }));
  struct stat st {};
  ASSERT_EQ(::stat(at("m.onnx").c_str(), &st), 0);
  EXPECT_LT(st.st_blocks * 512, 16 << 20) << "the zeros were written instead of left as a hole";
}

TEST_F(Builder, RefusesBadTensors) {
  const auto expect_invalid = [](auto make) {
    try {
      make();
      ADD_FAILURE();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << e.what();
    }
  };
  expect_invalid([] { TensorBuilder("w", DataType::float32, {3}, floats({1, 2})); });
  expect_invalid([] { TensorBuilder("w", DataType::float32, {-1}, floats({})); });
  expect_invalid([] { TensorBuilder("w", DataType::string, {1}, floats({1})); });
  expect_invalid([] {
    TensorBuilder("w", DataType::uint8, {1LL << 40, 1LL << 40}, std::vector<std::byte>{});
  });
  expect_invalid([] { TensorBuilder::strings("s", {2}, {"only one"}); });
  // Sub-byte types are packed: 3 INT4 values take 2 bytes.
  EXPECT_NO_THROW(TensorBuilder("w", DataType::int4, {3}, std::vector<std::byte>(2)));
}

// module_path: torch's `namespace` metadata (full or relative module names), else a path name;
// initializer_readers: each initializer's first reader, its input index and module.
TEST_F(Builder, ModulesOfNodesAndTheirWeights) {
  ModelBuilder m;
  GraphBuilder& g = m.graph("main");
  g.input("x", TypeSpec::tensor(DataType::float32, {{4}}));
  g.initializer(TensorBuilder::zeros("val_105", DataType::float32, {4, 4}));
  g.initializer(TensorBuilder::zeros("unread", DataType::float32, {1}));
  g.node("MatMul", {"x", "val_105"}, {"a"})
      .name("node_MatMul_1")
      .metadata("namespace",
                ": Llama/model: LlamaModel/model.layers.0: Layer/"
                "model.layers.0.self_attn.q_proj: Linear/linear: aten.linear");
  g.node("Relu", {"a"}, {"b"})
      .name("node_relu")
      .metadata("namespace", ": M/model: X/mlp: Y/relu: aten");
  g.node("Add", {"b", "val_105"}, {"c"}).name("/model/layers.1/mlp/Add");
  g.node("Neg", {"c"}, {"d"}).name("flat_name").metadata("namespace", "not torch's form");
  g.node("Abs", {"d"}, {"y"}).name("node_abs").metadata("namespace", ": Llama/abs: aten.abs");
  g.output("y");
  save(m, at("m.onnx"));

  const Model model = Model::open(at("m.onnx"));
  const auto nodes = model.graph()->nodes();
  EXPECT_EQ(module_path(nodes[0]), "model.layers.0.self_attn.q_proj");
  EXPECT_EQ(module_path(nodes[1]), "model.mlp");  // relative names joined
  EXPECT_EQ(module_path(nodes[2]), "model.layers.1.mlp");
  EXPECT_EQ(module_path(nodes[3]), "");  // metadata in another form: not the name's either
  EXPECT_EQ(module_path(nodes[4]), "");  // the model's own op: no module between
  const auto readers = initializer_readers(*model.graph());
  ASSERT_EQ(readers.size(), 1U);
  const InitializerReader& r = readers.at("val_105");
  EXPECT_EQ(r.node, 0U);
  EXPECT_EQ(r.input, 1U);
  EXPECT_EQ(r.module, "model.layers.0.self_attn.q_proj");
}

}  // namespace
}  // namespace onnxmap::test
