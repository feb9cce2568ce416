// The record table the indexing pass builds, on wire orders libprotobuf never writes: children
// out of field-number order, a singular message merged across other fields, and the paths,
// parents and positions derived from the table.

#include <gtest/gtest.h>

#include "index/model_index.hpp"
#include "model_builder.hpp"
#include "onnxmap/onnxmap.hpp"
#include "view/view_access.hpp"

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
  EXPECT_EQ(detail::ViewAccess::spans(merged).size(), 2U);
  const Attribute attribute = model.graph()->nodes()[1].attributes()[0];
  EXPECT_EQ(attribute.t()->name(), "merged");
  ASSERT_EQ(attribute.tensors().size(), 2U);
  EXPECT_EQ(attribute.tensors()[1].name(), "t1");
}

TEST(IndexLayout, RecordsAgreeWithTheirParents) {
  const Model model = Model::from_bytes(shuffled_graph_model());
  const detail::ModelIndex& index = *detail::ViewAccess::index(*model.graph());
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

// A model whose second node ends with `tail`, raw bytes that are not a valid field.
std::vector<std::byte> model_with_bad_node_tail(const std::vector<std::uint8_t>& tail) {
  return message([&](wire::Writer& m) {
    sub(m, MP::kGraph, [&](wire::Writer& g) {
      sub(g, GP::kNode, named_node("n0"));
      sub(g, GP::kNode, [&](wire::Writer& n) {
        n.field_string(NP::kName, "n1");
        for (const std::uint8_t b : tail) n.raw(std::as_bytes(std::span(&b, 1)));
      });
    });
  });
}

std::uint64_t offset_of(const std::vector<std::byte>& bytes,
                        const std::vector<std::uint8_t>& tail) {
  for (std::size_t i = 0; i + tail.size() <= bytes.size(); ++i) {
    if (std::equal(tail.begin(), tail.end(), bytes.begin() + static_cast<std::ptrdiff_t>(i),
                   [](std::uint8_t a, std::byte b) { return a == static_cast<std::uint8_t>(b); })) {
      return i;
    }
  }
  return Error::kNoOffset;
}

TEST(IndexLayout, StructuralErrorsNameTheRecordAndTheByte) {
  struct Case {
    std::vector<std::uint8_t> tail;
    ErrorKind kind;
    std::uint64_t at;  // the error's offset, relative to the tail
  };
  const Case cases[] = {
      {{0x0A, 0x7F, 'a', 'b'}, ErrorKind::out_of_bounds, 1},   // one-byte length overruns
      {{0x0A, 0x80, 0x01, 'a'}, ErrorKind::out_of_bounds, 1},  // two-byte length overruns
      {{0x0A, 0x80, 0x80, 0x80}, ErrorKind::truncated, 1},     // length varint cut short
      {{0x0F, 0x00}, ErrorKind::bad_wire_type, 0},             // wire type 7
      {{0x02, 0x00}, ErrorKind::bad_field_number, 0},          // field number 0
      {{0xA0, 0x01, 0xFF, 0xFF}, ErrorKind::truncated, 2},     // field 20, varint cut short
      {{0x0D, 0x01, 0x02}, ErrorKind::truncated, 1},           // fixed32 cut short
  };
  for (const Case& c : cases) {
    const auto bytes = model_with_bad_node_tail(c.tail);
    try {
      (void)Model::from_bytes(bytes);
      ADD_FAILURE() << "opened";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), c.kind) << e.what();
      EXPECT_EQ(e.field_path(), "graph.node[1]") << e.what();
      EXPECT_EQ(e.offset(), offset_of(bytes, c.tail) + c.at) << e.what();
    }
  }
}

}  // namespace
}  // namespace onnxmap::test
