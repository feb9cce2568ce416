// Model views over hand-built wire bytes: metadata, graph walking, tensor lookup, and protobuf's
// rules (unknown fields, last wins, merged messages, any field order).

#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "model_builder.hpp"
#include "onnxmap/model.hpp"
#include "test_support.hpp"
#include "view/view_access.hpp"

namespace onnxmap {
namespace {

using test::float_bytes;
using test::message;
using test::raw_tensor;
using test::sub;
using MP = schema::ModelProto;
using GP = schema::GraphProto;
using NP = schema::NodeProto;
using AP = schema::AttributeProto;

// A small model: y = Add(x, w) with an initializer w, opsets, metadata, a SemVer version.
std::vector<std::byte> small_model() {
  return message([](wire::Writer& m) {
    m.field_int64(MP::kIrVersion, 8);
    m.field_string(MP::kProducerName, "onnxmap-test");
    m.field_string(MP::kProducerVersion, "1.0");
    m.field_string(MP::kDomain, "ai.test");
    m.field_int64(MP::kModelVersion, ModelVersion::semver(1, 2, 345).raw);
    m.field_string(MP::kDocString, "a doc");
    sub(m, MP::kOpsetImport, [](wire::Writer& o) {
      o.field_string(schema::OperatorSetIdProto::kDomain, "");
      o.field_int64(schema::OperatorSetIdProto::kVersion, 17);
    });
    sub(m, MP::kMetadataProps, [](wire::Writer& e) {
      e.field_string(schema::StringStringEntryProto::kKey, "author");
      e.field_string(schema::StringStringEntryProto::kValue, "us");
    });
    sub(m, MP::kGraph, [](wire::Writer& g) {
      sub(g, GP::kNode, [](wire::Writer& n) {
        n.field_string(NP::kInput, "x");
        n.field_string(NP::kInput, "w");
        n.field_string(NP::kOutput, "y");
        n.field_string(NP::kOpType, "Add");
        n.field_string(NP::kName, "add0");
      });
      g.field_string(GP::kName, "main");
      sub(g, GP::kInitializer,
          raw_tensor("w", DataType::float32, {2, 2}, float_bytes({1, 2, 3, 4})));
      sub(g, GP::kInput, test::tensor_value_info("x", DataType::float32, {-1, 2}));
      sub(g, GP::kOutput, test::tensor_value_info("y", DataType::float32, {-1, 2}));
    });
  });
}

TEST(Model, Metadata) {
  const Model model = Model::from_bytes(small_model());
  EXPECT_EQ(model.ir_version(), 8);
  EXPECT_EQ(model.producer_name(), "onnxmap-test");
  EXPECT_EQ(model.producer_version(), "1.0");
  EXPECT_EQ(model.domain(), "ai.test");
  EXPECT_EQ(model.model_version().to_string(), "1.2.345");
  EXPECT_EQ(model.doc_string(), "a doc");
  ASSERT_EQ(model.opset_imports().size(), 1U);
  EXPECT_EQ(model.opset_imports()[0].version, 17);
  ASSERT_EQ(model.metadata_props().size(), 1U);
  EXPECT_EQ(model.metadata_props()[0].key, "author");
  EXPECT_EQ(model.metadata_props()[0].value, "us");
}

TEST(Model, GraphNodesAndValueInfos) {
  const Model model = Model::from_bytes(small_model());
  const Graph graph = *model.graph();
  EXPECT_EQ(graph.name(), "main");
  ASSERT_EQ(graph.nodes().size(), 1U);
  const Node node = graph.nodes()[0];
  EXPECT_EQ(node.op_type(), "Add");
  EXPECT_EQ(node.name(), "add0");
  EXPECT_EQ(node.inputs(), (std::vector<std::string_view>{"x", "w"}));
  EXPECT_EQ(node.outputs(), (std::vector<std::string_view>{"y"}));
  ASSERT_EQ(graph.inputs().size(), 1U);
  const Type type = graph.inputs()[0].type();
  EXPECT_EQ(type.kind(), Type::Kind::tensor);
  EXPECT_EQ(type.elem_type(), DataType::float32);
  EXPECT_EQ(type.to_string(), "FLOAT[N, 2]");
  const auto shape = type.shape();
  ASSERT_TRUE(shape.has_value());
  ASSERT_EQ(shape->size(), 2U);
  EXPECT_FALSE((*shape)[0].value.has_value());
  EXPECT_EQ((*shape)[0].param, "N");
  EXPECT_EQ((*shape)[1].value, 2);
  EXPECT_EQ(graph.initializers().size(), 1U);
}

// Names decodes while iterating: every form of field is stepped over (two-byte tags and lengths,
// scalars, unknown fields), and empty names and empty lists come out as they are.
TEST(Model, NodeNamesAreALazyRange) {
  const std::string long_name(200, 'n');
  const Model model = Model::from_bytes(message([&](wire::Writer& m) {
    sub(m, MP::kGraph, [&](wire::Writer& g) {
      sub(g, GP::kNode, [&](wire::Writer& n) {
        n.field_string(NP::kInput, "a");
        n.field_fixed32(99, 7);
        n.field_string(NP::kOutput, "y");
        n.field_string(NP::kInput, long_name);
        n.field_int64(50, 1);
        n.field_string(NP::kInput, "");
        n.field_string(NP::kOpType, "Sum");
        n.field_string(NP::kInput, "c");
      });
      sub(g, GP::kNode, [](wire::Writer& n) { n.field_string(NP::kOpType, "Constant"); });
    });
  }));
  const Node sum = model.graph()->nodes()[0];
  const std::vector<std::string_view> expected{"a", long_name, "", "c"};
  EXPECT_EQ(sum.inputs(), expected);
  EXPECT_EQ(sum.inputs().size(), 4U);
  EXPECT_FALSE(sum.inputs().empty());
  std::vector<std::string_view> walked;
  const Names inputs = sum.inputs();
  for (auto it = inputs.begin(); it != inputs.end();) walked.push_back(*it++);
  EXPECT_EQ(walked, expected);
  EXPECT_EQ(sum.outputs().to_vector(), (std::vector<std::string_view>{"y"}));
  EXPECT_EQ(sum.op_type(), "Sum");
  const Node constant = model.graph()->nodes()[1];
  EXPECT_TRUE(constant.inputs().empty());
  EXPECT_EQ(constant.inputs().size(), 0U);
  const Names none = constant.inputs();
  EXPECT_TRUE(none.begin() == none.end());
  EXPECT_EQ(Type().denotation(), "");  // a default view reads nothing
}

TEST(Model, TensorLookup) {
  const Model model = Model::from_bytes(small_model());
  ASSERT_EQ(model.tensor_count(), 1U);
  const Tensor w = model.tensor("w");
  EXPECT_EQ(w.name(), "w");
  EXPECT_EQ(w.path(), "graph.initializer[0]");
  EXPECT_EQ(w.data_type(), DataType::float32);
  EXPECT_EQ(std::vector<std::int64_t>(w.dims().begin(), w.dims().end()),
            (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(w.element_count(), 4U);
  EXPECT_EQ(w.byte_size(), 16U);
  EXPECT_EQ(w.storage(), TensorStorage::raw);
  const auto bytes = w.bytes();
  ASSERT_EQ(bytes.size(), 16U);
  float values[4];
  std::memcpy(values, bytes.data(), 16);
  EXPECT_EQ(values[3], 4.0F);
  EXPECT_TRUE(w.data().is_view());
  EXPECT_FALSE(model.find_tensor("nope").has_value());
  try {
    (void)model.tensor("nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
  }
  EXPECT_EQ(model.tensor_at_path("graph.initializer[0]")->name(), "w");
}

// Names given to several initializers, interleaved with others, in a table big enough for
// probes to collide: each name finds its first tensor, then the rest in file order.
TEST(Model, RepeatedNamesChainInFileOrder) {
  constexpr int kTensors = 3000;
  const auto name_of = [](int i) { return "t" + std::to_string(i % 7 == 0 ? i % 5 : i); };
  const auto bytes = message([&](wire::Writer& m) {
    sub(m, MP::kGraph, [&](wire::Writer& g) {
      for (int i = 0; i < kTensors; ++i) {
        sub(g, GP::kInitializer, raw_tensor(name_of(i), DataType::float32, {1}, float_bytes({1})));
      }
    });
  });
  const Model model = Model::from_bytes(bytes);
  std::map<std::string, std::vector<std::string>> expected;
  for (int i = 0; i < kTensors; ++i) {
    expected[name_of(i)].push_back("graph.initializer[" + std::to_string(i) + "]");
  }
  for (const auto& [name, paths] : expected) {
    std::vector<std::string> found;
    for (const Tensor& t : model.tensors(name)) found.push_back(t.path());
    EXPECT_EQ(found, paths) << name;
    EXPECT_EQ(model.tensor(name).path(), paths.front()) << name;
  }
}

TEST(Model, ConstantNodesAndDuplicateNamesAcrossSubgraphs) {
  // Outer initializer "w"; an If node whose then-branch holds another "w"; a Constant node whose
  // unnamed tensor is known by the node's output "c".
  const auto bytes = message([](wire::Writer& m) {
    sub(m, MP::kGraph, [](wire::Writer& g) {
      sub(g, GP::kNode, [](wire::Writer& n) {
        n.field_string(NP::kOutput, "c");
        n.field_string(NP::kOpType, "Constant");
        sub(n, NP::kAttribute, [](wire::Writer& a) {
          a.field_string(AP::kName, "value");
          a.field_int32(AP::kType, static_cast<std::int32_t>(AttributeType::tensor));
          sub(a, AP::kT, raw_tensor("", DataType::float32, {1}, float_bytes({7})));
        });
      });
      sub(g, GP::kNode, [](wire::Writer& n) {
        n.field_string(NP::kOpType, "If");
        sub(n, NP::kAttribute, [](wire::Writer& a) {
          a.field_string(AP::kName, "then_branch");
          a.field_int32(AP::kType, static_cast<std::int32_t>(AttributeType::graph));
          sub(a, AP::kG, [](wire::Writer& inner) {
            sub(inner, GP::kInitializer, raw_tensor("w", DataType::float32, {1}, float_bytes({2})));
          });
        });
      });
      sub(g, GP::kInitializer, raw_tensor("w", DataType::float32, {1}, float_bytes({1})));
    });
  });
  const Model model = Model::from_bytes(bytes);
  ASSERT_EQ(model.tensor_count(), 3U);
  EXPECT_EQ(model.tensor("w").path(), "graph.initializer[0]");  // the outermost one
  const auto all = model.tensors("w");
  ASSERT_EQ(all.size(), 2U);
  EXPECT_EQ(all[1].path(), "graph.node[1].attribute[0].g.initializer[0]");
  const Tensor c = model.tensor("c");
  EXPECT_EQ(c.name(), "");
  EXPECT_EQ(c.lookup_name(), "c");
  EXPECT_EQ(c.path(), "graph.node[0].attribute[0].t");
  const Attribute attr = model.graph()->nodes()[1].attributes()[0];
  EXPECT_EQ(attr.type(), AttributeType::graph);
  ASSERT_TRUE(attr.g().has_value());
  EXPECT_EQ(attr.g()->initializers()[0].path(), all[1].path());

  // Paths lead back to their tensors, spelled exactly as path() spells them.
  for (std::size_t i = 0; i < model.tensor_count(); ++i) {
    const Tensor t = model.tensor_at(i);
    EXPECT_EQ(model.tensor_at_path(t.path())->path(), t.path());
  }
  for (const char* wrong :
       {"", "graph", "graph.node[1]", "graph.node[1].attribute[0].g.initializer[1]",
        "graph.node[01].attribute[0].t", "graph.node[0].attribute[0].t.", "graph.node.attribute",
        "graph.initializer", "graph.initializer[]", "graph.initializer[0",
        "graph[0].initializer[0]", "graph..initializer[0]", "graph.initializer[-1]",
        "graph.initializer[4294967296]", "graph.node[0].attribute[0].t[0]", "nonsense[0]"}) {
    EXPECT_FALSE(model.tensor_at_path(wrong).has_value()) << wrong;
  }
}

TEST(Model, ProtobufMergeAndLastWins) {
  const auto bytes = message([](wire::Writer& m) {
    m.field_string(MP::kProducerName, "first");
    sub(m, MP::kGraph, [](wire::Writer& g) {
      g.field_string(GP::kName, "early");
      sub(g, GP::kNode, [](wire::Writer& n) { n.field_string(NP::kOpType, "A"); });
    });
    m.field_int64(MP::kIrVersion, 3);
    m.field_string(MP::kProducerName, "second");
    m.field_int64(MP::kIrVersion, 9);
    // The graph again: protobuf merges it into the first (name replaced, nodes concatenated).
    sub(m, MP::kGraph, [](wire::Writer& g) {
      g.field_string(GP::kName, "late");
      sub(g, GP::kNode, [](wire::Writer& n) { n.field_string(NP::kOpType, "B"); });
    });
  });
  const Model model = Model::from_bytes(bytes);
  EXPECT_EQ(model.producer_name(), "second");
  EXPECT_EQ(model.ir_version(), 9);
  const Graph graph = *model.graph();
  EXPECT_EQ(graph.name(), "late");
  ASSERT_EQ(graph.nodes().size(), 2U);
  EXPECT_EQ(graph.nodes()[0].op_type(), "A");
  EXPECT_EQ(graph.nodes()[1].op_type(), "B");
  EXPECT_EQ(detail::ViewAccess::record(graph.nodes()[1]),
            detail::ViewAccess::record(graph.nodes()[0]) + 1);
}

TEST(Model, UnknownFieldsAndAnyFieldOrder) {
  const auto bytes = message([](wire::Writer& m) {
    m.field_varint(1000, 5);  // unknown fields of every wire type
    m.field_fixed64(1001, 6);
    m.field_string(1002, "?");
    m.tag(1003, wire::WireType::start_group);
    m.field_varint(1, 1);
    m.tag(1003, wire::WireType::end_group);
    m.field_fixed32(1004, 7);
    m.field_double(MP::kIrVersion, 1.0);  // a known field with the wrong wire type: unknown
    sub(m, MP::kGraph, [](wire::Writer& g) {
      sub(g, GP::kInitializer, [](wire::Writer& t) {
        using TP = schema::TensorProto;
        t.field_bytes(TP::kRawData, float_bytes({1, 2, 3}));  // payload before the name
        const std::uint64_t packed_dims[] = {3};
        t.field_packed_varints(TP::kDims, packed_dims);  // dims packed, as a reader must accept
        t.field_string(999, "unknown inside a tensor");
        t.field_int32(TP::kDataType, 1);
        t.field_string(TP::kName, "late_name");
      });
    });
  });
  const Model model = Model::from_bytes(bytes);
  EXPECT_EQ(model.ir_version(), 0);
  const Tensor t = model.tensor("late_name");
  EXPECT_EQ(t.element_count(), 3U);
  EXPECT_EQ(t.byte_size(), 12U);
}

TEST(Model, NewerIrVersionsStillOpen) {
  const Model model = Model::from_bytes(message([](wire::Writer& m) {
    m.field_int64(MP::kIrVersion, 99);
    m.field_varint(77, 1);  // a field this build does not know
    sub(m, MP::kGraph, [](wire::Writer& g) { g.field_string(GP::kName, "future"); });
  }));
  EXPECT_EQ(model.ir_version(), 99);
  EXPECT_FALSE(onnx_release_for_ir(model.ir_version()).has_value());
  EXPECT_EQ(model.graph()->name(), "future");
}

TEST(Model, BareTensorProto) {
  const auto bytes =
      message(raw_tensor("input_0", DataType::int64, {2}, std::vector<std::byte>(16)));
  const Model model = Model::from_bytes(bytes, {}, schema::MessageKind::TensorProto);
  ASSERT_EQ(model.tensor_count(), 1U);
  EXPECT_EQ(model.tensor("input_0").byte_size(), 16U);
  EXPECT_EQ(model.tensor("input_0").path(), "");
}

TEST(Model, DepthLimitNeverOverflowsTheStack) {
  // Graphs nested in If attributes 3000 deep: far past the default limit of 64.
  std::vector<std::byte> graph;
  for (int level = 0; level < 3000; ++level) {
    graph = message([&](wire::Writer& g) {
      sub(g, GP::kNode, [&](wire::Writer& n) {
        sub(n, NP::kAttribute, [&](wire::Writer& a) { a.field_bytes(AP::kG, graph); });
      });
    });
  }
  const auto model = message([&](wire::Writer& m) { m.field_bytes(MP::kGraph, graph); });
  try {
    (void)Model::from_bytes(model);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::depth_limit);
    EXPECT_NE(std::string(e.what()).find("max_depth 64"), std::string::npos) << e.what();
  }
  OpenOptions deeper;
  deeper.max_depth = 10000;
  // The model, 3000 levels of graph, node and attribute, and the innermost (empty) graph.
  EXPECT_EQ(Model::from_bytes(model, deeper).message_count(), 1U + 3U * 3000U + 1U);
}

TEST(Model, PeekReadsMetadataOnly) {
  const test::ScopedTestFolder folder;
  const auto path = folder.path() / "model.onnx";
  const auto bytes = small_model();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  const ModelSummary summary = peek(path);
  std::filesystem::remove(path);
  EXPECT_EQ(summary.ir_version(), 8);
  EXPECT_EQ(summary.producer_name(), "onnxmap-test");
  EXPECT_EQ(summary.model_version().to_string(), "1.2.345");
  EXPECT_EQ(summary.opset_imports().size(), 1U);
  EXPECT_EQ(summary.graph_name(), "main");
  ASSERT_EQ(summary.inputs().size(), 1U);
  EXPECT_EQ(summary.inputs()[0].type().to_string(), "FLOAT[N, 2]");
  ASSERT_EQ(summary.outputs().size(), 1U);
  EXPECT_EQ(summary.outputs()[0].name(), "y");
}

// Where each top-level field of `message` ends (0 first), read with a hand-written decoder: the
// oracle for which prefixes are whole messages.
std::vector<std::size_t> field_ends(std::span<const std::byte> message) {
  std::vector<std::size_t> ends{0};
  std::size_t at = 0;
  const auto varint = [&] {
    std::uint64_t value = 0;
    for (unsigned shift = 0;; shift += 7) {
      const auto byte = static_cast<std::uint64_t>(message[at++]);
      value |= (byte & 0x7FU) << shift;
      if ((byte & 0x80U) == 0) return value;
    }
  };
  while (at < message.size()) {
    const std::uint64_t wire_type = varint() & 7U;
    if (wire_type == 0) (void)varint();
    if (wire_type == 1) at += 8;
    if (wire_type == 2) at += varint();
    if (wire_type == 5) at += 4;
    ends.push_back(at);
  }
  return ends;
}

TEST(Model, EveryTruncationFailsCleanly) {
  const auto full = small_model();
  const std::vector<std::size_t> ends = field_ends(full);
  ASSERT_GE(ends.size(), 4U);
  for (std::size_t cut = 0; cut < full.size(); ++cut) {
    const std::span<const std::byte> prefix(full.data(), cut);
    const bool whole_fields = std::find(ends.begin(), ends.end(), cut) != ends.end();
    const auto error = test::error_of([&] { (void)Model::from_bytes(prefix); });
    // A cut between two top-level fields is a valid, smaller model; any other cut is refused
    // with the byte offset where the message ran out.
    EXPECT_EQ(!error, whole_fields)
        << "cut at " << cut << ": " << (error ? error->what() : "opened");
    if (error) {
      EXPECT_NE(error->offset(), Error::kNoOffset) << error->what();
    }
  }
}

}  // namespace
}  // namespace onnxmap
