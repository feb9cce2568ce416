// Bulk reads on a thread pool: every byte lands where it belongs, typed tensors included.

#include <gtest/gtest.h>

#include <numeric>

#include "model_builder.hpp"
#include "onnxmap/bulk.hpp"
#include "onnxmap/model.hpp"

namespace onnxmap {
namespace {

using test::message;
using test::sub;

TEST(Bulk, ReadIntoCopiesEveryTensorInChunks) {
  const auto bytes = message([](wire::Writer& m) {
    sub(m, schema::ModelProto::kGraph, [](wire::Writer& g) {
      for (int i = 0; i < 6; ++i) {
        std::vector<float> values(100 + 37 * i);
        std::iota(values.begin(), values.end(), static_cast<float>(i * 1000));
        sub(g, schema::GraphProto::kInitializer,
            test::raw_tensor("w" + std::to_string(i), DataType::float32,
                             {static_cast<std::int64_t>(values.size())},
                             test::float_bytes(values)));
      }
      sub(g, schema::GraphProto::kInitializer, [](wire::Writer& t) {
        t.field_int64(schema::TensorProto::kDims, 2);
        t.field_int32(schema::TensorProto::kDataType, static_cast<std::int32_t>(DataType::int64));
        t.field_string(schema::TensorProto::kName, "typed");
        t.field_int64(schema::TensorProto::kInt64Data, -1);
        t.field_int64(schema::TensorProto::kInt64Data, 7);
      });
      sub(g, schema::GraphProto::kInitializer, [](wire::Writer& t) {
        // Empty and typed: its decoded bytes are an empty span whose pointer may be null.
        t.field_int64(schema::TensorProto::kDims, 0);
        t.field_int32(schema::TensorProto::kDataType, static_cast<std::int32_t>(DataType::int64));
        t.field_string(schema::TensorProto::kName, "empty");
      });
    });
  });
  const Model model = Model::from_bytes(bytes);
  std::vector<Tensor> tensors;
  for (std::size_t i = 0; i < model.tensor_count(); ++i) tensors.push_back(model.tensor_at(i));
  std::vector<std::vector<std::byte>> storage;
  std::vector<std::span<std::byte>> buffers;
  for (const Tensor& t : tensors) storage.emplace_back(t.byte_size());
  for (auto& s : storage) buffers.emplace_back(s);

  BulkOptions options;
  options.threads = 4;
  // Many chunks per tensor, so threads interleave; then units of work holding many tensors.
  for (const std::size_t chunk_bytes : {64, 1000, 1 << 20}) {
    options.chunk_bytes = chunk_bytes;
    for (auto& s : storage) std::fill(s.begin(), s.end(), std::byte{0xEE});
    read_into(tensors, buffers, options);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const TensorData expected = tensors[i].data();
      ASSERT_TRUE(std::equal(storage[i].begin(), storage[i].end(), expected.bytes().begin(),
                             expected.bytes().end()))
          << tensors[i].path() << " in chunks of " << chunk_bytes;
    }
    page_in(tensors, options);
  }

  buffers[0] = buffers[0].subspan(1);
  EXPECT_THROW(read_into(tensors, buffers, options), Error);
}

}  // namespace
}  // namespace onnxmap
