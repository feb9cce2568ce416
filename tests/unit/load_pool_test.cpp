// The loader's pool: every byte lands where it belongs in many small requests, typed tensors
// included, and prefetch (of a plan or of one tensor) leaves every payload page in the page cache.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fstream>
#include <numeric>

#include "model_builder.hpp"
#include "onnxmap/load.hpp"
#include "onnxmap/model.hpp"
#include "test_support.hpp"

namespace onnxmap {
namespace {

using test::message;
using test::sub;

TEST(LoadPool, LoadIntoCopiesEveryTensorInSmallRequests) {
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
  std::vector<LoadItem> plan;
  for (std::size_t i = 0; i < model.tensor_count(); ++i) {
    tensors.push_back(model.tensor_at(i));
    plan.push_back({tensors.back()});
  }
  std::vector<std::vector<std::byte>> storage;
  std::vector<std::span<std::byte>> buffers;
  for (const Tensor& t : tensors) storage.emplace_back(t.byte_size());
  for (auto& s : storage) buffers.emplace_back(s);

  LoadOptions options;
  options.threads = 4;
  // Many requests per tensor, so threads interleave; then requests holding many tensors.
  for (const std::uint64_t request_bytes : {64, 1000, 1 << 20}) {
    options.request_bytes = request_bytes;
    for (auto& s : storage) std::fill(s.begin(), s.end(), std::byte{0xEE});
    (void)load_into(plan, buffers, {}, options);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const TensorData expected = tensors[i].data();
      ASSERT_TRUE(std::equal(storage[i].begin(), storage[i].end(), expected.bytes().begin(),
                             expected.bytes().end()))
          << tensors[i].path() << " in requests of " << request_bytes;
    }
  }

  buffers[0] = buffers[0].subspan(1);
  EXPECT_THROW((void)load_into(plan, buffers, {}, options), Error);
}

// How many of the pages under `bytes` are in the page cache (mincore).
std::size_t resident_pages(std::span<const std::byte> bytes) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(bytes.data()) / page * page;
  const auto end = reinterpret_cast<std::uintptr_t>(bytes.data()) + bytes.size();
  std::vector<unsigned char> flags((end - begin + page - 1) / page);
  EXPECT_EQ(::mincore(reinterpret_cast<void*>(begin), end - begin, flags.data()), 0);
  return static_cast<std::size_t>(
      std::count_if(flags.begin(), flags.end(), [](unsigned char f) { return (f & 1U) != 0; }));
}

// Writes `bytes` to `path`, flushed, and asks the kernel to drop its pages from the page cache.
void write_evicted(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  test::evict(path);
}

// Writes a model of four 1 MiB tensors to `path`, its pages evicted, and opens it.
Model open_evicted(const std::filesystem::path& path) {
  write_evicted(path, message([](wire::Writer& m) {
                  sub(m, schema::ModelProto::kGraph, [](wire::Writer& g) {
                    for (int i = 0; i < 4; ++i) {
                      sub(g, schema::GraphProto::kInitializer,
                          test::raw_tensor("w" + std::to_string(i), DataType::uint8, {1 << 20},
                                           std::vector<std::byte>(1 << 20, std::byte{3})));
                    }
                  });
                }));
  return Model::open(path);
}

// Whether the kernel dropped most of the payload pages when asked (it may keep them).
bool evicted(std::span<const Tensor> tensors) {
  std::size_t pages = 0;
  std::size_t resident = 0;
  for (const Tensor& t : tensors) {
    pages += t.byte_size() / static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    resident += resident_pages(t.bytes());
  }
  return resident <= pages / 2;
}

void expect_resident(std::span<const Tensor> tensors, const std::string& after) {
  for (const Tensor& t : tensors) {
    const auto bytes = t.bytes();
    EXPECT_GE(resident_pages(bytes),
              bytes.size() / static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)))
        << t.path() << " is not resident after " << after;
  }
}

TEST(LoadPool, PrefetchMakesEveryPayloadPageResident) {
  const test::ScopedTestFolder folder;
  const Model model = open_evicted(folder.path() / "model.onnx");
  std::vector<Tensor> tensors;
  std::vector<LoadItem> plan;
  for (std::size_t i = 0; i < model.tensor_count(); ++i) {
    tensors.push_back(model.tensor_at(i));
    plan.push_back({tensors.back()});
  }
  if (!evicted(tensors)) GTEST_SKIP() << "the kernel kept the pages after POSIX_FADV_DONTNEED";
  LoadOptions options;
  options.threads = 2;
  options.request_bytes = 256 << 10;
  prefetch(plan, options);
  expect_resident(tensors, "prefetch");
}

TEST(LoadPool, TensorPrefetchMakesItsPayloadResident) {
  const test::ScopedTestFolder folder;
  const Model model = open_evicted(folder.path() / "model.onnx");
  const Tensor tensor = model.tensor_at(2);
  if (!evicted(std::span(&tensor, 1))) {
    GTEST_SKIP() << "the kernel kept the pages after POSIX_FADV_DONTNEED";
  }
  prefetch(tensor);
  expect_resident(std::span(&tensor, 1), "Tensor::prefetch");
}

}  // namespace
}  // namespace onnxmap
