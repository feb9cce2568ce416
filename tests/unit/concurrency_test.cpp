// One Model, many threads: lookups, slices, typed decoding and view walks at once. The model is
// immutable after open, so this must be clean under ThreadSanitizer.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "fuzz/walk.hpp"
#include "model_builder.hpp"
#include "onnxmap/model.hpp"
#include "test_support.hpp"

namespace onnxmap {
namespace {

using test::message;
using test::sub;

TEST(Concurrency, SixteenThreadsShareOneModel) {
  constexpr int kTensors = 64;
  const auto bytes = message([](wire::Writer& m) {
    sub(m, schema::ModelProto::kGraph, [](wire::Writer& g) {
      for (int i = 0; i < kTensors; ++i) {
        sub(g, schema::GraphProto::kNode, [&](wire::Writer& n) {
          n.field_string(schema::NodeProto::kOpType, "Identity");
          n.field_string(schema::NodeProto::kInput, "w" + std::to_string(i));
        });
        std::vector<float> values(8 * (i + 1), static_cast<float>(i));
        sub(g, schema::GraphProto::kInitializer,
            test::raw_tensor("w" + std::to_string(i), DataType::float32, {8, i + 1},
                             test::float_bytes(values)));
      }
      sub(g, schema::GraphProto::kInitializer, [](wire::Writer& t) {
        t.field_int64(schema::TensorProto::kDims, 3);
        t.field_int32(schema::TensorProto::kDataType, static_cast<std::int32_t>(DataType::int64));
        t.field_string(schema::TensorProto::kName, "typed");
        for (int v = 0; v < 3; ++v) t.field_int64(schema::TensorProto::kInt64Data, v);
      });
    });
  });
  const Model model = Model::from_bytes(bytes);
  std::atomic<int> failures{0};
  std::vector<std::jthread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int round = 0; round < 300; ++round) {
        const int i = static_cast<int>(rng() % kTensors);
        const Tensor w = model.tensor("w" + std::to_string(i));
        const auto rows = w.slice_rows(2, 4);
        float first = 0;
        std::memcpy(&first, rows.data(), sizeof first);
        if (rows.size() != 2U * (i + 1) * 4 || first != static_cast<float>(i)) ++failures;
        if (model.tensor("typed").data().bytes().size() != 24) ++failures;
        const Node node = model.graph()->nodes()[static_cast<std::size_t>(i)];
        if (node.inputs().to_vector().at(0) != w.name()) ++failures;
      }
    });
  }
  threads.clear();
  EXPECT_EQ(failures.load(), 0);
}

TEST(Concurrency, SixteenThreadsWalkOneMappedModel) {
  // A mapped file this time, so prefetch and release really advise the kernel while other
  // threads read the same pages; every thread also walks every view (the fuzz targets' walk).
  const test::ScopedTestFolder folder;
  const auto path = folder.path() / "model.onnx";
  const auto bytes = message([](wire::Writer& m) {
    sub(m, schema::ModelProto::kGraph, [](wire::Writer& g) {
      for (int i = 0; i < 32; ++i) {
        sub(g, schema::GraphProto::kNode, [&](wire::Writer& n) {
          n.field_string(schema::NodeProto::kOpType, "If");
          sub(n, schema::NodeProto::kAttribute, [&](wire::Writer& a) {
            a.field_string(schema::AttributeProto::kName, "then_branch");
            sub(a, schema::AttributeProto::kG, [&](wire::Writer& inner) {
              sub(inner, schema::GraphProto::kInitializer,
                  test::raw_tensor("inner" + std::to_string(i), DataType::uint8, {4096},
                                   std::vector<std::byte>(4096, std::byte{7})));
            });
          });
        });
      }
    });
  });
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  const Model model = Model::open(path);
  std::filesystem::remove(path);  // the mapping keeps the file alive
  std::atomic<int> failures{0};
  std::vector<std::jthread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int round = 0; round < 40; ++round) {
        const Tensor w = model.tensor("inner" + std::to_string(rng() % 32));
        const auto rows = w.slice_rows(rng() % 2048, 4096);
        if (rows.empty() || rows.back() != std::byte{7}) ++failures;
        if (round % 2 == 0) w.release();
        if (round % 10 == 0) fuzz::walk_model(model);
      }
    });
  }
  threads.clear();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace onnxmap
