// A level of many tensors has its second half read on a thread of its own
// (lib/index/tensor_slice.hpp). The model must read as the serial pass reads it: every tensor in
// order with its name, type, dims and bytes, found by name (the first of a repeated name), and
// what the thread leaves to the serial scan (a tensor of another layout, a bad one, a limit)
// read or reported as before, with the tensor's path.

#include <gtest/gtest.h>

#include <string>

#include "model_builder.hpp"
#include "onnxmap/onnxmap.hpp"

namespace onnxmap::test {
namespace {

using GP = schema::GraphProto;
using MP = schema::ModelProto;
using TP = schema::TensorProto;

// Past the count below which a level's tensors are read on one thread.
constexpr int kTensors = 40000;

// What tensor `i` of the test graphs holds: 1 to 3 dims, float16 bytes numbering it.
std::vector<std::int64_t> dims_of(int i) {
  std::vector<std::int64_t> dims;
  for (int d = 0; d <= i % 3; ++d) dims.push_back(1 + (i + d) % 4);
  return dims;
}

std::vector<std::byte> bytes_of(int i) {
  std::int64_t elements = 1;
  for (const std::int64_t d : dims_of(i)) elements *= d;
  std::vector<std::byte> bytes(static_cast<std::size_t>(elements) * 2);
  for (std::size_t b = 0; b < bytes.size(); ++b) bytes[b] = static_cast<std::byte>(i + b);
  return bytes;
}

std::string name_of(int i, int repeated) {
  return "t" + std::to_string(i == repeated ? 7 : i);
}

// A graph of a few nodes, kTensors initializers and outputs after them (records of the same
// level past the tensors). Tensor `float_data` is written with float_data instead of raw_data
// (a layout the thread leaves to the serial scan), tensor `bad` with one byte too few, tensor
// `repeated` under tensor 7's name.
std::vector<std::byte> graph(int float_data, int bad, int repeated) {
  return message([&](wire::Writer& m) {
    sub(m, MP::kGraph, [&](wire::Writer& g) {
      for (int i = 0; i < 3; ++i) {
        sub(g, GP::kNode, [&](wire::Writer& n) { n.field_string(schema::NodeProto::kInput, "x"); });
      }
      for (int i = 0; i < kTensors; ++i) {
        sub(g, GP::kInitializer, [&](wire::Writer& t) {
          for (const std::int64_t d : dims_of(i)) t.field_int64(TP::kDims, d);
          if (i == float_data) {
            t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::float32));
            t.field_string(TP::kName, name_of(i, repeated));
            for (std::int64_t e = 0; e < static_cast<std::int64_t>(bytes_of(i).size()) / 2; ++e) {
              t.field_fixed32(TP::kFloatData, 0);
            }
            return;
          }
          std::vector<std::byte> raw = bytes_of(i);
          if (i == bad) raw.pop_back();
          t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::float16));
          t.field_string(TP::kName, name_of(i, repeated));
          t.field_bytes(TP::kRawData, raw);
        });
      }
      for (int i = 0; i < 3; ++i)
        sub(g, GP::kOutput, tensor_value_info("y", DataType::float16, {1}));
    });
  });
}

void expect_tensors(const Model& model, int float_data, int repeated) {
  const std::vector<Tensor> tensors = model.graph()->initializers();
  ASSERT_EQ(tensors.size(), static_cast<std::size_t>(kTensors));
  ASSERT_EQ(model.tensor_count(), static_cast<std::size_t>(kTensors));
  for (int i = 0; i < kTensors; ++i) {
    const Tensor& tensor = tensors[static_cast<std::size_t>(i)];
    ASSERT_EQ(tensor.name(), name_of(i, repeated)) << i;
    const std::vector<std::int64_t> dims = dims_of(i);
    ASSERT_EQ(std::vector<std::int64_t>(tensor.dims().begin(), tensor.dims().end()), dims) << i;
    if (i == float_data) {
      ASSERT_EQ(tensor.data_type(), DataType::float32);
      ASSERT_EQ(tensor.storage(), TensorStorage::typed);
      continue;
    }
    ASSERT_EQ(tensor.data_type(), DataType::float16) << i;
    const std::vector<std::byte> expected = bytes_of(i);
    ASSERT_TRUE(std::ranges::equal(tensor.bytes(), expected)) << i;
    if (i != 7 && i != repeated) {
      const std::optional<Tensor> found = model.find_tensor(name_of(i, repeated));
      ASSERT_TRUE(found.has_value()) << i;
      ASSERT_EQ(found->bytes().data(), tensor.bytes().data()) << i;
    }
  }
  // A repeated name finds its first tensor.
  ASSERT_EQ(model.find_tensor("t7")->bytes().data(), tensors[7].bytes().data());
  EXPECT_EQ(model.graph()->outputs().size(), 3U);
}

TEST(TensorSlice, ALevelOfManyTensorsReadsAsWritten) {
  expect_tensors(Model::from_bytes(graph(-1, -1, -1)), -1, -1);
}

TEST(TensorSlice, TensorsTheThreadLeavesAreReadInTheirPlace) {
  // In the first half (read serially), first in the thread's half, and later in it.
  for (const int other : {100, kTensors / 2, kTensors / 2 + 1, kTensors - 1}) {
    SCOPED_TRACE(other);
    expect_tensors(Model::from_bytes(graph(other, -1, kTensors - 10)), other, kTensors - 10);
  }
}

TEST(TensorSlice, ABadTensorInEitherHalfIsReportedWithItsPath) {
  for (const int bad : {10, kTensors / 2, kTensors - 1}) {
    SCOPED_TRACE(bad);
    try {
      (void)Model::from_bytes(graph(-1, bad, -1));
      ADD_FAILURE() << "opened with a bad tensor";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::bad_tensor) << e.what();
      const std::string tensor = "graph.initializer[" + std::to_string(bad) + "]";
      EXPECT_EQ(e.field_path(), tensor + ".raw_data") << e.what();
    }
    OpenOptions collect;
    collect.collect_payload_errors = true;
    const Model model = Model::from_bytes(graph(-1, bad, -1), collect);
    ASSERT_EQ(model.payload_errors().size(), 1U);
    EXPECT_EQ(model.graph()->initializers()[static_cast<std::size_t>(bad)].storage(),
              TensorStorage::invalid);
    EXPECT_EQ(model.graph()
                  ->initializers()[static_cast<std::size_t>(bad) + (bad < 20 ? 1 : -1)]
                  .storage(),
              TensorStorage::raw);
  }
}

TEST(TensorSlice, TheTensorLimitIsReportedAtTheSameTensor) {
  for (const std::uint64_t limit : {std::uint64_t{kTensors / 4}, std::uint64_t{kTensors - 5}}) {
    OpenOptions options;
    options.max_tensors = limit;
    try {
      (void)Model::from_bytes(graph(-1, -1, -1), options);
      ADD_FAILURE() << "opened past max_tensors " << limit;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::limit_exceeded) << e.what();
      EXPECT_EQ(e.field_path(), "graph.initializer[" + std::to_string(limit) + "]") << e.what();
    }
  }
}

}  // namespace
}  // namespace onnxmap::test
