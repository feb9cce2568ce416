// Direct loads into library buffers: a tensor of 1 MiB or more is read straight into a buffer of
// its own, laid out like the file around it, and handed out in place (no copy); smaller ones
// are read with their neighbours and copied, and LoadStats says how many bytes were. The
// library's buffers are bounded by max_in_flight_bytes.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <numeric>

#include "io/file_reader.hpp"
#include "load/buffer_pool.hpp"
#include "model_builder.hpp"
#include "onnxmap/builder.hpp"
#include "onnxmap/load.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/save.hpp"
#include "test_support.hpp"
#include "test_system_calls.hpp"

namespace onnxmap {
namespace {

namespace fs = std::filesystem;
constexpr std::uint64_t kMiB = std::uint64_t{1} << 20U;

class LoadDirect : public test::TempFolder {
 protected:
  // m.onnx, with float tensors of these byte counts (each a multiple of 4) packed one after
  // another in an external data file, so that they start at unaligned offsets of it. The data
  // file's bytes are kept (data_) for the checks, which never touch the mapping: each load
  // evicts the data file first, so that its reads are O_DIRECT ones (a resident page is read
  // buffered).
  fs::path write_model(const std::vector<std::uint64_t>& sizes) {
    ModelBuilder builder;
    GraphBuilder& graph = builder.graph("g");
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      std::vector<float> values(sizes[i] / 4);
      std::iota(values.begin(), values.end(), static_cast<float>(i * 7919));
      const std::int64_t rows = values.size() % 8 == 0 ? 8 : 1;
      graph.initializer(TensorBuilder("w" + std::to_string(i), DataType::float32,
                                      {rows, static_cast<std::int64_t>(values.size()) / rows},
                                      test::float_bytes(values)));
    }
    SaveOptions options;
    options.external_data = ExternalData::external;
    options.size_threshold = 1;
    options.align = 1;
    (void)save(builder, at("m.onnx"), options);
    for (const auto& entry : fs::directory_iterator(root_)) {
      if (entry.path() != at("m.onnx")) data_path_ = entry.path();
    }
    data_ = read(data_path_);
    return at("m.onnx");
  }

  // Where `item`'s bytes are in the data file.
  static std::uint64_t offset_of(const LoadItem& item) {
    if (item.row_end == kAllRows) return item.tensor.file_offset();
    return item.tensor.file_offset() + item.tensor.row_range(item.row_begin, item.row_end).offset;
  }

  // Every item of `plan` loaded direct from the data file (evicted first unless `warm`),
  // checked against the file's bytes; the stats returned.
  LoadStats load_and_check(const std::vector<LoadItem>& plan, const LoadOptions& options,
                           bool warm = false) {
    if (!warm) test::evict(data_path_);
    std::vector<int> calls(plan.size());
    const LoadStats stats = load(
        plan,
        [&](const LoadedTensor& t) {
          ++calls.at(t.item);
          const LoadItem& item = plan[t.item];
          ASSERT_EQ(t.bytes.size(), item.byte_size()) << item.tensor.path();
          const std::uint64_t offset = offset_of(item);
          EXPECT_TRUE(std::equal(t.bytes.begin(), t.bytes.end(),
                                 data_.begin() + static_cast<std::ptrdiff_t>(offset)))
              << item.tensor.path();
          if (t.bytes.size() >= kMiB) {
            // In place: at the same distance from a page boundary as in the file.
            EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.bytes.data()) % io::kDirectAlign,
                      offset % io::kDirectAlign);
          }
        },
        options);
    EXPECT_TRUE(std::all_of(calls.begin(), calls.end(), [](int c) { return c == 1; }));
    return stats;
  }

  fs::path data_path_;
  std::vector<std::byte> data_;
};

TEST_F(LoadDirect, LargeTensorsAreReadInPlaceAndSmallOnesCopied) {
  const std::vector<std::uint64_t> sizes{
      100 * 4, 3 * kMiB + 4096 * 3 + 12, kMiB, kMiB - 4, 64, 5 * kMiB + 36, 8};
  const Model model = Model::open(write_model(sizes));
  std::uint64_t small = 0;
  for (const std::uint64_t s : sizes) small += s < kMiB ? s : 0;
  for (const unsigned threads : {1U, 4U}) {
    LoadOptions options;
    options.mode = LoadMode::direct;
    options.threads = threads;
    options.request_bytes = kMiB;  // large tensors take several requests
    const LoadStats stats = load_and_check(plan(model), options);
    EXPECT_EQ(stats.bytes_copied, small) << threads << " threads";
    EXPECT_TRUE(stats.direct);
    // Each large tensor reads at most its two partial pages more; the small ones their gaps.
    EXPECT_LE(stats.bytes_read, data_.size() + 8 * io::kDirectAlign);
  }
}

// Pages in the page cache are read buffered (an O_DIRECT read would fetch them from the disk
// again), still in place: the seam counts O_DIRECT reads, and none is made.
TEST_F(LoadDirect, WarmPagesAreReadBufferedInPlace) {
  const std::vector<std::uint64_t> sizes{100 * 4, 3 * kMiB + 12, kMiB - 4, 64, 2 * kMiB + 36};
  const Model model = Model::open(write_model(sizes));  // read back: the pages are resident
  for (const unsigned threads : {1U, 4U}) {
    LoadOptions options;
    options.mode = LoadMode::direct;
    options.threads = threads;
    options.request_bytes = kMiB;
    (void)test::set_direct_refusal(test::DirectRefusal::refuse_read);
    const LoadStats stats = load_and_check(plan(model), options, true);
    EXPECT_EQ(test::set_direct_refusal(test::DirectRefusal::none), 0U) << threads;
    EXPECT_EQ(stats.bytes_copied, 0U);          // own buffers and scattered reads: all in place
    EXPECT_EQ(stats.bytes_read, data_.size());  // no alignment padding: buffered reads
  }
}

TEST_F(LoadDirect, ShardsOfLargeTensorsAreReadInPlace) {
  const Model model = Model::open(write_model({16 * kMiB + 96, 12 * kMiB, 40}));
  for (unsigned rank = 0; rank < 2; ++rank) {
    LoadOptions options;
    options.mode = LoadMode::direct;
    options.request_bytes = 3 * kMiB;
    const LoadStats stats = load_and_check(plan(model, PlanOptions::shard(rank, 2)), options);
    EXPECT_EQ(stats.bytes_copied, 40U);  // the 1-row tensor, whole
  }
}

// Where the system refuses direct reads, the buffered ones land where direct ones would have.
TEST_F(LoadDirect, RefusedDirectReadsStillLandInPlace) {
  const Model model = Model::open(write_model({2 * kMiB + 20, 24, 3 * kMiB + 4}));
  (void)test::set_direct_refusal(test::DirectRefusal::refuse_read);
  LoadOptions options;
  options.mode = LoadMode::direct;
  options.request_bytes = kMiB;
  options.threads = 1;  // in file order: the first read is refused, the rest are buffered
  const LoadStats stats = load_and_check(plan(model), options);
  EXPECT_GT(test::set_direct_refusal(test::DirectRefusal::none), 0U);
  EXPECT_FALSE(stats.direct);
  EXPECT_EQ(stats.bytes_copied, 0U);  // buffered reads go straight into every buffer
}

// Into caller buffers every direct read (of pages not in the page cache) is staged and copied,
// and counted.
TEST_F(LoadDirect, CallerBuffersAreCopiedInto) {
  const Model model = Model::open(write_model({2 * kMiB + 20, 24}));
  const auto plan = onnxmap::plan(model);
  std::vector<std::vector<std::byte>> storage;
  std::vector<std::span<std::byte>> buffers;
  for (const LoadItem& item : plan) storage.emplace_back(item.tensor.byte_size());
  for (auto& s : storage) buffers.emplace_back(s);
  LoadOptions options;
  options.mode = LoadMode::direct;
  test::evict(data_path_);
  const LoadStats stats = load_into(plan, buffers, {}, options);
  EXPECT_EQ(stats.bytes_copied, 2 * kMiB + 20 + 24);
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const auto want = plan[i].tensor.bytes();
    EXPECT_TRUE(std::equal(want.begin(), want.end(), storage[i].begin()));
  }
}

// A callback that keeps a tensor's owner keeps its bytes: the loader reuses only the others.
TEST_F(LoadDirect, KeptBuffersAreTheCallersAndNotReused) {
  const std::vector<std::uint64_t> sizes{2 * kMiB + 20, 24, 2 * kMiB + 4, 40, 2 * kMiB};
  const Model model = Model::open(write_model(sizes));
  const auto plan = onnxmap::plan(model);
  for (const LoadMode mode : {LoadMode::read, LoadMode::direct}) {
    LoadOptions options;
    options.mode = mode;
    options.threads = 1;
    options.max_in_flight_bytes = 3 * kMiB;  // buffers would be reused
    std::vector<LoadedTensor> kept;
    (void)load(
        plan,
        [&](const LoadedTensor& t) {
          ASSERT_NE(t.owner, nullptr);
          if (t.item % 2 == 0) kept.push_back(t);
        },
        options);
    ASSERT_EQ(kept.size(), 3U);
    for (const LoadedTensor& t : kept) {
      const auto want = plan[t.item].tensor.bytes();
      EXPECT_TRUE(std::equal(want.begin(), want.end(), t.bytes.begin(), t.bytes.end()))
          << to_string(mode) << " item " << t.item;
    }
  }
}

TEST(BufferPool, HoldsAtMostItsLimitAndReusesTheBestFit) {
  detail::BufferPool pool(10 * kMiB);
  std::uint64_t fresh = 0;
  auto a = pool.take(4 * kMiB, fresh);
  auto b = pool.take(2 * kMiB, fresh);
  EXPECT_EQ(fresh, 6 * kMiB);
  const std::byte* b_data = b.data();
  pool.give(std::move(a));
  pool.give(std::move(b));
  auto c = pool.take(kMiB, fresh);  // the smallest that fits: b's
  EXPECT_EQ(c.data(), b_data);
  EXPECT_EQ(fresh, 6 * kMiB);
  // 2 MiB out and 4 MiB free: a new 6 MiB buffer fits the limit only once a's 4 MiB is let go.
  auto d = pool.take(6 * kMiB, fresh);
  EXPECT_EQ(fresh, 12 * kMiB);
  pool.give(std::move(c));
  pool.give(std::move(d));
  auto e = pool.take(5 * kMiB, fresh);  // d's: a's went
  EXPECT_EQ(e.size(), 6 * kMiB);
  EXPECT_EQ(fresh, 12 * kMiB);
  // A kept buffer leaves the count: 6 MiB out, 2 MiB free; forgetting e makes room for 8 MiB.
  pool.forget(e.size());
  auto f = pool.take(8 * kMiB, fresh);
  EXPECT_EQ(fresh, 20 * kMiB);
  auto g = pool.take(2 * kMiB, fresh);  // c's, still free
  EXPECT_EQ(fresh, 20 * kMiB);
}

}  // namespace
}  // namespace onnxmap
