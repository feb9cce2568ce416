// Hostile files at the model level: malformed wire bytes inside a model, absurd nesting, claims
// no file backs, and limits. Each must be an onnxmap::Error of the right kind naming the field
// path, never a crash, a hang or an allocation driven by what the file claims. (The wire layer's
// own cases are in wire_reader_test.cpp; tensor sizes and external paths in tensor_test.cpp and
// external_hostile_test.cpp.)

#include <gtest/gtest.h>

#include <string>

#include "fuzz/walk.hpp"
#include "model_builder.hpp"
#include "onnxmap/model.hpp"
#include "test_support.hpp"

namespace onnxmap {
namespace {

using test::Body;
using test::bytes_of;
using test::message;
using test::raw_tensor;
using test::sub;
using MP = schema::ModelProto;
using GP = schema::GraphProto;
using NP = schema::NodeProto;
using AP = schema::AttributeProto;
using TP = schema::TensorProto;

// A model whose graph.node[0] holds exactly `node` (any bytes, valid or not).
std::vector<std::byte> model_with_node_bytes(const std::vector<std::byte>& node) {
  return message([&](wire::Writer& m) {
    m.field_int64(MP::kIrVersion, 8);
    sub(m, MP::kGraph, [&](wire::Writer& g) {
      g.field_string(GP::kName, "main");
      g.field_bytes(GP::kNode, node);
    });
  });
}

// Opens `bytes` and expects an Error of `kind` at `path`; returns the error's text.
std::string expect_open_error(const std::vector<std::byte>& bytes, ErrorKind kind,
                              const std::string& path, const OpenOptions& options = {}) {
  try {
    (void)Model::from_bytes(bytes, options);
    ADD_FAILURE() << "opened; expected " << to_string(kind);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_EQ(e.field_path(), path) << e.what();
    EXPECT_NE(e.offset(), Error::kNoOffset) << e.what();
    return e.what();
  }
  return {};
}

// Fields `chain` (outermost first), each the only content of the one before, the innermost
// empty: `chain` repeated 100 000 times is megabytes, so the lengths are computed inside out and
// the headers written outside in, never copying a growing message.
std::vector<std::byte> nested(const std::vector<std::uint32_t>& prefix,
                              const std::vector<std::uint32_t>& repeated, int times) {
  std::vector<std::uint32_t> fields = prefix;
  for (int i = 0; i < times; ++i) fields.insert(fields.end(), repeated.begin(), repeated.end());
  std::vector<std::uint64_t> inner_size(fields.size() + 1, 0);
  for (std::size_t i = fields.size(); i-- > 0;) {
    inner_size[i] = wire::varint_size(wire::make_tag(fields[i], wire::WireType::len)) +
                    wire::varint_size(inner_size[i + 1]) + inner_size[i + 1];
  }
  wire::Writer w;
  for (std::size_t i = 0; i < fields.size(); ++i) w.field_len_header(fields[i], inner_size[i + 1]);
  return w.take();
}

TEST(HostileFile, WireErrorsInsideANodeNameTheNode) {
  // An 11-byte varint in an unknown field of the node.
  expect_open_error(model_with_node_bytes(bytes_of({0xF8, 0x06, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                                    0xFF, 0xFF, 0xFF, 0xFF, 0x01})),
                    ErrorKind::bad_varint, "graph.node[0]");
  // op_type claims 50 bytes; 3 follow.
  expect_open_error(model_with_node_bytes(bytes_of({0x22, 50, 'A', 'd', 'd'})),
                    ErrorKind::out_of_bounds, "graph.node[0]");
  // Wire types 6 and 7 do not exist.
  expect_open_error(model_with_node_bytes(bytes_of({0x26, 0x00})), ErrorKind::bad_wire_type,
                    "graph.node[0]");
  expect_open_error(model_with_node_bytes(bytes_of({0x27, 0x00})), ErrorKind::bad_wire_type,
                    "graph.node[0]");
  // Field number 0.
  expect_open_error(model_with_node_bytes(bytes_of({0x02, 0x00})), ErrorKind::bad_field_number,
                    "graph.node[0]");
  // Groups: opened and never closed, closed and never opened, closed by the wrong number.
  expect_open_error(model_with_node_bytes(bytes_of({0x2B, 0x08, 0x01})), ErrorKind::truncated,
                    "graph.node[0]");
  expect_open_error(model_with_node_bytes(bytes_of({0x08, 0x01, 0x2C})), ErrorKind::bad_wire_type,
                    "graph.node[0]");
  expect_open_error(model_with_node_bytes(bytes_of({0x2B, 0x34})), ErrorKind::bad_wire_type,
                    "graph.node[0]");
  // The same at the top level has an empty path; a length past the end of the file.
  expect_open_error(bytes_of({0x3A, 0x7F, 0x00}), ErrorKind::out_of_bounds, "");
  expect_open_error(bytes_of({0x08}), ErrorKind::truncated, "");
}

TEST(HostileFile, PackedNumbersAreCheckedAtOpen) {
  // Packed lists outside tensor payloads are checked by the pass, not first when a view reads
  // them: a varint cut short in an attribute's ints, a float list of 5 bytes, the same in a
  // sparse tensor's dims and in a leaf message (a sharding spec's devices).
  const auto attribute = [](const Body& body) {
    return message([&](wire::Writer& m) {
      sub(m, MP::kGraph, [&](wire::Writer& g) {
        sub(g, GP::kNode, [&](wire::Writer& n) { sub(n, NP::kAttribute, body); });
      });
    });
  };
  expect_open_error(attribute([](wire::Writer& a) {
                      a.field_bytes(AP::kInts, bytes_of({0x01, 0x80}));
                    }),
                    ErrorKind::truncated, "graph.node[0].attribute[0]");
  expect_open_error(attribute([](wire::Writer& a) {
                      a.field_bytes(AP::kFloats, bytes_of({0, 0, 0x80, 0x3F, 0}));
                    }),
                    ErrorKind::truncated, "graph.node[0].attribute[0]");
  expect_open_error(message([](wire::Writer& m) {
                      sub(m, MP::kGraph, [](wire::Writer& g) {
                        sub(g, GP::kSparseInitializer, [](wire::Writer& s) {
                          s.field_bytes(schema::SparseTensorProto::kDims, bytes_of({0xFF}));
                        });
                      });
                    }),
                    ErrorKind::truncated, "graph.sparse_initializer[0]");
  expect_open_error(
      message([](wire::Writer& m) {
        sub(m, MP::kGraph, [](wire::Writer& g) {
          sub(g, GP::kNode, [](wire::Writer& n) {
            sub(n, NP::kDeviceConfigurations, [](wire::Writer& d) {
              sub(d, schema::NodeDeviceConfigurationProto::kShardingSpec, [](wire::Writer& spec) {
                spec.field_bytes(schema::ShardingSpecProto::kDevice, bytes_of({0x05, 0x80}));
              });
            });
          });
        });
      }),
      ErrorKind::truncated, "graph.node[0]");
  // Well-formed packed lists open and read back.
  const Model model = Model::from_bytes(attribute([](wire::Writer& a) {
    const std::vector<std::uint64_t> values = {3, 300, 70000};
    a.field_packed_varints(AP::kInts, values);
  }));
  const auto ints = model.graph()->nodes()[0].attributes()[0].ints();
  EXPECT_EQ(std::vector<std::int64_t>(ints.begin(), ints.end()),
            (std::vector<std::int64_t>{3, 300, 70000}));
}

// "graph" and then `levels` times ".node[0].attribute[0].g".
std::string nested_graph_path(int levels) {
  std::string path = "graph";
  for (int i = 0; i < levels; ++i) path += ".node[0].attribute[0].g";
  return path;
}

TEST(HostileFile, SubgraphsNestedOneHundredThousandDeep) {
  // graph.node[0].attribute[0].g.node[0]... 300 000 messages deep (about 2 MB). The pass is
  // breadth-first, so the depth costs no native stack; the limit stops it at depth 64, the graph
  // at depth 1 + 3 * 21 being the last one scanned.
  const auto deep = nested({MP::kGraph}, {GP::kNode, NP::kAttribute, AP::kG}, 100000);
  const std::string what = expect_open_error(deep, ErrorKind::depth_limit, nested_graph_path(21));
  EXPECT_NE(what.find("max_depth 64"), std::string::npos) << what;

  // Configurable up to kMaxDepthCeiling, and refused beyond it.
  OpenOptions ceiling;
  ceiling.max_depth = kMaxDepthCeiling;
  expect_open_error(deep, ErrorKind::depth_limit, nested_graph_path(3333), ceiling);
  OpenOptions too_deep;
  too_deep.max_depth = kMaxDepthCeiling + 1;
  EXPECT_THROW((void)Model::from_bytes(deep, too_deep), Error);
  try {
    (void)Model::from_bytes(deep, too_deep);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("max_depth"), std::string::npos) << e.what();
  }
  OpenOptions zero;
  zero.max_depth = 0;
  EXPECT_THROW((void)Model::from_bytes(message([](wire::Writer&) {}), zero), Error);
}

TEST(HostileFile, TypesNestedOneHundredThousandDeep) {
  // graph.input[0].type = seq(seq(seq(...))): leaf messages, checked recursively at open. Even at
  // the largest max_depth the recursion stays within the stack (also under ASan).
  const std::vector<std::uint32_t> to_type = {MP::kGraph, GP::kInput,
                                              schema::ValueInfoProto::kType};
  const std::vector<std::uint32_t> seq = {schema::TypeProto::kSequenceType,
                                          schema::TypeProtoSequence::kElemType};
  const auto deep = nested(to_type, seq, 100000);
  expect_open_error(deep, ErrorKind::depth_limit, "graph.input[0]");
  OpenOptions ceiling;
  ceiling.max_depth = kMaxDepthCeiling;
  expect_open_error(deep, ErrorKind::depth_limit, "graph.input[0]", ceiling);

  // Just inside the ceiling: it opens, and the type reads back all the way down.
  const auto inside = nested(to_type, seq, kMaxDepthCeiling / 2 - 4);
  const Model model = Model::from_bytes(inside, ceiling);
  const std::string type = model.graph()->inputs()[0].type().to_string();
  EXPECT_EQ(type.substr(0, 8), "seq(seq(");
  fuzz::walk_model(model);
}

TEST(HostileFile, ClaimsOfBillionsInASmallFile) {
  // A packed dims field whose length claims 4 GB, in a file of a few bytes.
  wire::Writer t;
  t.field_len_header(TP::kDims, 4'000'000'000ULL);
  t.varint(1);
  const auto claim = message([&](wire::Writer& m) {
    sub(m, MP::kGraph, [&](wire::Writer& g) { g.field_bytes(GP::kInitializer, t.bytes()); });
  });
  expect_open_error(claim, ErrorKind::out_of_bounds, "graph.initializer[0]");

  // Dims claim 10^12 strings and 10^12 int64s; the file holds two of each. Opening, walking and
  // decoding allocate by what is there, never by what is claimed.
  const auto model_bytes = message([](wire::Writer& m) {
    sub(m, MP::kGraph, [](wire::Writer& g) {
      sub(g, GP::kInitializer, [](wire::Writer& s) {
        s.field_int64(TP::kDims, 1'000'000'000'000LL);
        s.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::string));
        s.field_string(TP::kName, "s");
        s.field_string(TP::kStringData, "a");
        s.field_string(TP::kStringData, "b");
      });
      sub(g, GP::kInitializer, [](wire::Writer& i) {
        i.field_int64(TP::kDims, 1'000'000'000'000LL);
        i.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::int64));
        i.field_string(TP::kName, "i");
        const std::vector<std::uint64_t> two = {1, 2};
        i.field_packed_varints(TP::kInt64Data, two);
      });
      sub(g, GP::kNode, [](wire::Writer& n) {
        sub(n, NP::kAttribute, [](wire::Writer& a) {
          const std::vector<std::uint64_t> three = {1, 2, 3};
          a.field_packed_varints(AP::kInts, three);
        });
      });
    });
  });
  const Model model = Model::from_bytes(model_bytes);
  EXPECT_EQ(model.tensor("s").strings().size(), 2U);
  EXPECT_EQ(model.tensor("i").byte_size(), 8'000'000'000'000ULL);
  try {
    (void)model.tensor("i").data();
    ADD_FAILURE() << "decoded 2 values as 10^12";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_tensor) << e.what();
    EXPECT_EQ(e.field_path(), "graph.initializer[1]") << e.what();
  }
  EXPECT_EQ(model.graph()->nodes()[0].attributes()[0].ints().size(), 3U);
  fuzz::walk_model(model);
  EXPECT_LT(model.index_bytes(), 64U * 1024U);
}

// A model with a bit of everything: a subgraph holding a typed tensor, a STRING initializer, a
// Constant, a function and training info.
std::vector<std::byte> rich_model() {
  const auto subgraph = [](wire::Writer& g) {
    sub(g, GP::kInitializer, [](wire::Writer& t) {
      t.field_int64(TP::kDims, 3);
      t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::int64));
      t.field_string(TP::kName, "typed");
      const std::vector<std::uint64_t> values = {1, 300, 70000};
      t.field_packed_varints(TP::kInt64Data, values);
    });
  };
  return message([&](wire::Writer& m) {
    m.field_int64(MP::kIrVersion, 10);
    sub(m, MP::kGraph, [&](wire::Writer& g) {
      sub(g, GP::kNode, [&](wire::Writer& n) {
        n.field_string(NP::kOpType, "If");
        sub(n, NP::kAttribute, [&](wire::Writer& a) {
          a.field_string(AP::kName, "then_branch");
          sub(a, AP::kG, subgraph);
        });
      });
      sub(g, GP::kNode, [&](wire::Writer& n) {
        n.field_string(NP::kOpType, "Constant");
        n.field_string(NP::kOutput, "c");
        sub(n, NP::kAttribute, [&](wire::Writer& a) {
          a.field_string(AP::kName, "value");
          sub(a, AP::kT,
              raw_tensor("", DataType::float32, {2, 1}, bytes_of({0, 0, 128, 63, 0, 0, 0, 64})));
        });
      });
      sub(g, GP::kInitializer, [](wire::Writer& t) {
        t.field_int64(TP::kDims, 2);
        t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::string));
        t.field_string(TP::kName, "names");
        t.field_string(TP::kStringData, "a");
        t.field_string(TP::kStringData, "bc");
      });
      sub(g, GP::kInput, test::tensor_value_info("x", DataType::float32, {-1, 2}));
    });
    sub(m, MP::kFunctions, [](wire::Writer& f) {
      f.field_string(schema::FunctionProto::kName, "f");
      sub(f, schema::FunctionProto::kNode,
          [](wire::Writer& n) { n.field_string(NP::kOpType, "Relu"); });
    });
    sub(m, MP::kTrainingInfo,
        [&](wire::Writer& t) { sub(t, schema::TrainingInfoProto::kInitialization, subgraph); });
  });
}

TEST(HostileFile, EveryTruncationOfARichModel) {
  // Each prefix either opens (a cut at a field boundary is a valid, smaller model) and survives a
  // walk over every view, or fails with an error that says where.
  const auto full = rich_model();
  const Model whole = Model::from_bytes(full);
  ASSERT_EQ(whole.tensor_count(), 4U);
  EXPECT_EQ(whole.tensor("typed").data().bytes().size(), 24U);
  fuzz::walk_model(whole);
  int opened = 0;
  for (std::size_t cut = 0; cut < full.size(); ++cut) {
    try {
      const Model model = Model::from_bytes(std::span(full.data(), cut));
      ++opened;
      fuzz::walk_model(model);
    } catch (const Error& e) {
      EXPECT_NE(e.offset(), Error::kNoOffset) << "cut at " << cut << ": " << e.what();
      EXPECT_LE(e.offset(), cut) << e.what();
    }
  }
  EXPECT_GT(opened, 0);
}

TEST(HostileFile, MaxTensorsIsEnforced) {
  const auto three = message([](wire::Writer& m) {
    sub(m, MP::kGraph, [](wire::Writer& g) {
      for (const char* name : {"a", "b", "c"}) {
        sub(g, GP::kInitializer, raw_tensor(name, DataType::uint8, {1}, bytes_of({7})));
      }
    });
  });
  OpenOptions two;
  two.max_tensors = 2;
  const std::string what =
      expect_open_error(three, ErrorKind::limit_exceeded, "graph.initializer[2]", two);
  EXPECT_NE(what.find("max_tensors"), std::string::npos) << what;
  OpenOptions exactly;
  exactly.max_tensors = 3;
  EXPECT_EQ(Model::from_bytes(three, exactly).tensor_count(), 3U);
}

TEST(HostileFile, MaxMessagesIsEnforced) {
  // The model, its graph and 1000 nodes: 1002 message records.
  const auto nodes = message([](wire::Writer& m) {
    sub(m, MP::kGraph, [](wire::Writer& g) {
      for (int i = 0; i < 1000; ++i) {
        sub(g, GP::kNode, [](wire::Writer& n) { n.field_string(NP::kOpType, "Relu"); });
      }
    });
  });
  OpenOptions small;
  small.max_messages = 1001;
  const std::string what = expect_open_error(nodes, ErrorKind::limit_exceeded, "graph", small);
  EXPECT_NE(what.find("max_messages"), std::string::npos) << what;
  small.max_messages = 1002;
  EXPECT_EQ(Model::from_bytes(nodes, small).message_count(), 1002U);
  EXPECT_GE(OpenOptions{}.max_messages, std::uint64_t{1} << 24U);  // generous by default
}

}  // namespace
}  // namespace onnxmap
