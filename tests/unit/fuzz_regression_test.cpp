// Inputs the fuzz targets (tests/fuzz/) found crashing, replayed through the same walk over every
// view, each with the precise expectation the fix made true. Found under ASan+UBSan, so the
// sanitized test build is where a regression would show.

#include <gtest/gtest.h>

#include "fuzz/walk.hpp"
#include "model_builder.hpp"
#include "onnxmap/model.hpp"
#include "test_support.hpp"

namespace onnxmap {
namespace {

using test::bytes_of;
using test::message;
using test::sub;
using TP = schema::TensorProto;

void expect_invalid_slice(const Tensor& tensor, std::uint64_t begin, std::uint64_t end) {
  test::expect_error([&] { (void)tensor.slice_rows(begin, end); }, ErrorKind::invalid_argument);
}

// fuzz_model: graph.initializer[0] has dims [115, 116, 97, 114, 116, 115], data_type 0 and no
// payload field. slice_rows dereferenced the traits of the undefined type, and for a known type
// would have returned a span of the claimed size over no bytes at all.
TEST(FuzzRegression, SliceRowsOfATensorWithoutPayload) {
  const auto found = bytes_of({
      0x08, 0x03, 0x12, 0x07, 0x70, 0x79, 0x74, 0x6f, 0x72, 0x63, 0x68, 0x1a, 0x03, 0x30, 0x2e,
      0x33, 0x3a, 0x8e, 0x01, 0x0a, 0x36, 0x0a, 0x01, 0x30, 0x12, 0x01, 0x22, 0x31, 0x05, 0x53,
      0x6c, 0x69, 0x63, 0x65, 0x2a, 0x0b, 0x0a, 0x04, 0x61, 0x78, 0x65, 0x73, 0x40, 0x00, 0xa0,
      0x01, 0x07, 0x2a, 0x0b, 0x0a, 0x04, 0x65, 0x6e, 0x64, 0x73, 0x40, 0x01, 0xa0, 0x01, 0x07,
      0x2a, 0x0d, 0x0a, 0x06, 0x73, 0x74, 0x61, 0x72, 0x74, 0x73, 0x40, 0x00, 0xa0, 0x01, 0x07,
      0x0a, 0x0f, 0x0a, 0x01, 0x31, 0x12, 0x01, 0x32, 0x22, 0x07, 0x53, 0x71, 0x75, 0x65, 0x65,
      0x7a, 0x65, 0x2a, 0x0b, 0x0a, 0x04, 0x61, 0x78, 0x65, 0x73, 0x40, 0x00, 0xa0, 0x01, 0x07,
      0x12, 0x10, 0x74, 0x6f, 0x72, 0x63, 0x68, 0x2d, 0x3a, 0x69, 0x74, 0x2d, 0x65, 0x78, 0x70,
      0x6f, 0x72, 0x74, 0x5a, 0x13, 0x0a, 0x01, 0x32, 0x12, 0x0e, 0x0a, 0x0c, 0x08, 0x01, 0x12,
      0x08, 0x0a, 0x02, 0x08, 0x01, 0x0a, 0x02, 0x08, 0x01, 0x62, 0x0f, 0x0a, 0x01, 0x32, 0x12,
      0x0a, 0x0a, 0x08, 0x08, 0x01, 0x12, 0x04, 0x0a, 0x02, 0x08, 0x01, 0x42, 0x02, 0x10, 0x06,
  });
  const Model model = Model::from_bytes(found);
  const Tensor t = model.tensor_at(0);
  EXPECT_EQ(t.path(), "graph.initializer[0]");
  EXPECT_EQ(t.storage(), TensorStorage::none);
  expect_invalid_slice(t, 0, 1);
  fuzz::walk_model(model);

  // The two ways in, built by hand: a known type with dims and no payload, and raw bytes of an
  // unknown type.
  const auto built = message([](wire::Writer& m) {
    sub(m, schema::ModelProto::kGraph, [](wire::Writer& g) {
      sub(g, schema::GraphProto::kInitializer, [](wire::Writer& t) {
        t.field_int64(TP::kDims, 3);
        t.field_int64(TP::kDims, 2);
        t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::float32));
        t.field_string(TP::kName, "empty");
      });
      sub(g, schema::GraphProto::kInitializer, [](wire::Writer& t) {
        t.field_int64(TP::kDims, 2);
        t.field_int32(TP::kDataType, 99);
        t.field_string(TP::kName, "unknown");
        t.field_bytes(TP::kRawData, bytes_of({1, 2, 3, 4}));
      });
    });
  });
  const Model hand = Model::from_bytes(built);
  expect_invalid_slice(hand.tensor("empty"), 0, 1);
  expect_invalid_slice(hand.tensor("empty"), 0, 3);
  expect_invalid_slice(hand.tensor("unknown"), 0, 1);
  EXPECT_EQ(hand.tensor("unknown").bytes().size(), 4U);  // the bytes are still there to read
  fuzz::walk_model(hand);
}

}  // namespace
}  // namespace onnxmap
