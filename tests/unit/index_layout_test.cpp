// The record table the indexing pass builds, on wire orders libprotobuf never writes: children
// out of field-number order, a singular message merged across other fields, and the paths,
// parents and positions derived from the table.

#include <gtest/gtest.h>

#include "index/model_index.hpp"
#include "model_builder.hpp"
#include "onnxmap/onnxmap.hpp"

namespace onnxmap::test {
namespace {

using GP = schema::GraphProto;
using MP = schema::ModelProto;
using NP = schema::NodeProto;
using AP = schema::AttributeProto;
using TP = schema::TensorProto;

Body named_node(std::string_view name, const Body& attributes = {}) {
  return [=](wire::Writer& n) {
    n.field_string(NP::kName, name);
    if (attributes) attributes(n);
  };
}

// A graph whose fields arrive as initializer, node, input, initializer, node: the pass must still
// give each field's children contiguous, in wire order within the field.
std::vector<std::byte> shuffled_graph_model() {
  return message([](wire::Writer& m) {
    sub(m, MP::kGraph, [](wire::Writer& g) {
      sub(g, GP::kInitializer, raw_tensor("a", DataType::float32, {1}, float_bytes({1})));
      sub(g, GP::kNode, named_node("n0"));
      sub(g, GP::kInput,
          [](wire::Writer& v) { v.field_string(schema::ValueInfoProto::kName, "x"); });
      sub(g, GP::kInitializer, raw_tensor("b", DataType::float32, {2}, float_bytes({2, 3})));
      sub(g, GP::kNode, named_node("n1", [](wire::Writer& n) {
            sub(n, NP::kAttribute, [](wire::Writer& a) {
              // tensors[0], t (first part), tensors[1], t again: merged into the first t.
              sub(a, AP::kTensors, raw_tensor("t0", DataType::float32, {1}, float_bytes({4})));
              sub(a, AP::kT, [](wire::Writer& t) { t.field_int64(TP::kDims, 1); });
              sub(a, AP::kTensors, raw_tensor("t1", DataType::float32, {1}, float_bytes({5})));
              sub(a, AP::kT, [](wire::Writer& t) {
                t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::float32));
                t.field_string(TP::kName, "merged");
                t.field_bytes(TP::kRawData, float_bytes({6}));
              });
            });
          }));
    });
  });
}

TEST(IndexLayout, ChildrenOutOfFieldOrder) {
  const Model model = Model::from_bytes(shuffled_graph_model());
  const Graph graph = *model.graph();
  ASSERT_EQ(graph.nodes().size(), 2U);
  EXPECT_EQ(graph.nodes()[0].name(), "n0");
  EXPECT_EQ(graph.nodes()[1].name(), "n1");
  ASSERT_EQ(graph.initializers().size(), 2U);
  EXPECT_EQ(graph.initializers()[1].name(), "b");
  EXPECT_EQ(graph.initializers()[1].path(), "graph.initializer[1]");
  ASSERT_EQ(graph.inputs().size(), 1U);
  EXPECT_EQ(graph.inputs()[0].name(), "x");
  EXPECT_EQ(model.tensor("a").path(), "graph.initializer[0]");
  EXPECT_EQ(model.tensor("t1").path(), "graph.node[1].attribute[0].tensors[1]");
  EXPECT_EQ(model.tensor_at_path("graph.node[1].attribute[0].tensors[0]")->name(), "t0");
}

TEST(IndexLayout, SingularMessageMergedAcrossOtherFields) {
  const Model model = Model::from_bytes(shuffled_graph_model());
  const Tensor merged = model.tensor("merged");
  EXPECT_EQ(merged.path(), "graph.node[1].attribute[0].t");
  ASSERT_EQ(merged.dims().size(), 1U);
  EXPECT_EQ(merged.dims()[0], 1);
  EXPECT_EQ(merged.byte_size(), 4U);
  EXPECT_EQ(merged.spans().size(), 2U);
  const Attribute attribute = model.graph()->nodes()[1].attributes()[0];
  EXPECT_EQ(attribute.t()->name(), "merged");
  ASSERT_EQ(attribute.tensors().size(), 2U);
  EXPECT_EQ(attribute.tensors()[1].name(), "t1");
}

TEST(IndexLayout, RecordsAgreeWithTheirParents) {
  const Model model = Model::from_bytes(shuffled_graph_model());
  const detail::ModelIndex& index = *model.graph()->index();
  for (std::uint32_t id = 1; id < index.messages.size(); ++id) {
    const std::uint32_t parent = index.parent(id);
    ASSERT_LT(parent, id);
    const auto [first, last] = index.children(parent, index.field_number(id));
    EXPECT_GE(id, first);
    EXPECT_LT(id, last);
    EXPECT_EQ(index.depth(id), index.depth(parent) + 1);
  }
  EXPECT_EQ(index.parent(0), detail::kNone);
}

}  // namespace
}  // namespace onnxmap::test
