// Work on the loader's threads: the loader's on_piece and on_landed (every byte of every item
// passes on_piece once, then on_landed, before the callback), plan_stats and compare_plans,
// whose results equal tensor_stats' and compare_values' on each item's bytes exactly, however
// the reads cut the items and whichever threads count them.

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "model_builder.hpp"
#include "onnxmap/load.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/stats.hpp"
#include "test_support.hpp"

namespace onnxmap {
namespace {

using test::message;
using test::sub;

// Random bytes: every bit pattern, NaNs and infinities among them.
std::vector<std::byte> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<std::byte> out(n);
  for (std::byte& b : out) b = static_cast<std::byte>(random() & 0xFFU);
  return out;
}

// A model whose payloads lie at odd and even offsets, large enough to take many requests of a
// few KiB: float16 (2-D, for rows), bfloat16, float32, INT4, UINT8, a small float16, a typed
// tensor and a STRING; `seed` picks the bytes.
std::vector<std::byte> model_bytes(std::uint32_t seed) {
  return message([seed](wire::Writer& m) {
    sub(m, schema::ModelProto::kGraph, [seed](wire::Writer& g) {
      const auto add = [&](const std::string& name, DataType type, std::vector<std::int64_t> dims,
                           std::size_t bytes) {
        sub(g, schema::GraphProto::kInitializer,
            test::raw_tensor(name, type, std::move(dims), random_bytes(bytes, seed + bytes)));
      };
      add("h", DataType::float16, {200, 1001}, 400400);
      add("bf", DataType::bfloat16, {150001}, 300002);
      add("f32", DataType::float32, {50001}, 200004);
      add("q", DataType::int4, {90001}, 45001);
      add("u8", DataType::uint8, {70001}, 70001);
      add("small", DataType::float16, {100}, 200);
      sub(g, schema::GraphProto::kInitializer, [](wire::Writer& t) {
        t.field_int64(schema::TensorProto::kDims, 3);
        t.field_int32(schema::TensorProto::kDataType, static_cast<std::int32_t>(DataType::float32));
        t.field_string(schema::TensorProto::kName, "typed");
        for (const float v : {1.5F, -2.0F, 0.0F}) t.field_float(schema::TensorProto::kFloatData, v);
      });
      sub(g, schema::GraphProto::kInitializer, [](wire::Writer& t) {
        t.field_int64(schema::TensorProto::kDims, 1);
        t.field_int32(schema::TensorProto::kDataType, static_cast<std::int32_t>(DataType::string));
        t.field_string(schema::TensorProto::kName, "text");
        t.field_string(schema::TensorProto::kStringData, "cat");
      });
    });
  });
}

std::filesystem::path write_model(const std::filesystem::path& path,
                                  const std::vector<std::byte>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  return path;
}

// Every tensor whole, and rows [17, 181) of "h", which overlap "h" (a plan may hold both).
std::vector<LoadItem> items_of(const Model& model) {
  std::vector<LoadItem> out = plan(model);
  out.push_back({model.tensor("h"), 17, 181});
  return out;
}

// The bytes an item delivers, decoded for typed storage.
std::vector<std::byte> item_bytes(const LoadItem& item) {
  const TensorData data = item.tensor.data();
  const auto whole = data.bytes();
  if (item.row_end == kAllRows) return {whole.begin(), whole.end()};
  const ByteRange range = item.tensor.row_range(item.row_begin, item.row_end);
  const auto rows = whole.subspan(range.offset, range.length);
  return {rows.begin(), rows.end()};
}

std::uint64_t elements_of(const LoadItem& item) {
  return item.row_end == kAllRows ? item.tensor.element_count()
                                  : (item.row_end - item.row_begin) * item.tensor.row_elements();
}

// Equal, NaN equal to NaN: the same bits of every number.
bool same(double a, double b) {
  return std::isnan(a) ? std::isnan(b) : a == b;
}

void expect_same(const TensorStats& got, const TensorStats& want, const std::string& what) {
  EXPECT_EQ(got.count, want.count) << what;
  EXPECT_EQ(got.zeros, want.zeros) << what;
  EXPECT_EQ(got.nans, want.nans) << what;
  EXPECT_EQ(got.infinities, want.infinities) << what;
  EXPECT_TRUE(same(got.min, want.min) && same(got.max, want.max)) << what;
  EXPECT_TRUE(same(got.mean, want.mean)) << what << ": " << got.mean << " " << want.mean;
  EXPECT_TRUE(same(got.stddev, want.stddev)) << what << ": " << got.stddev << " " << want.stddev;
  EXPECT_EQ(got.histogram, want.histogram) << what;
}

// Requests of 4 KiB (items cut into many pieces, odd cuts through float16 elements), of 36 KiB
// (pieces large enough to be counted where they land), and of 16 MiB (every item in one piece).
constexpr std::uint64_t kRequestSizes[] = {4096, 36864, std::uint64_t{16} << 20U};

TEST(LoadHooks, EveryByteOncePerPieceThenLandedBeforeTheCallback) {
  const test::ScopedTestFolder folder;
  const Model model = Model::open(write_model(folder.path() / "m.onnx", model_bytes(1)));
  const std::vector<LoadItem> items = items_of(model);
  std::vector<std::vector<std::byte>> expected;
  for (const LoadItem& item : items) {
    expected.push_back(has_stats(item.tensor.data_type()) ? item_bytes(item)
                                                          : std::vector<std::byte>());
  }
  for (const LoadMode mode : {LoadMode::map, LoadMode::read, LoadMode::direct}) {
    std::vector<std::vector<int>> seen(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) seen[i].assign(items[i].byte_size(), 0);
    std::vector<std::atomic<int>> landed(items.size());
    std::mutex mutex;
    LoadOptions options;
    options.mode = mode;
    options.request_bytes = 4096;
    options.on_piece = [&](const LoadedPiece& piece) {
      EXPECT_EQ(landed[piece.item].load(), 0);
      if (piece.bytes.empty()) return;  // STRING: no raw layout
      const std::vector<std::byte>& want = expected[piece.item];
      EXPECT_TRUE(std::equal(piece.bytes.begin(), piece.bytes.end(),
                             want.begin() + static_cast<std::ptrdiff_t>(piece.offset)))
          << items[piece.item].tensor.path() << " at " << piece.offset << ", " << to_string(mode);
      const std::lock_guard lock(mutex);
      for (std::size_t k = 0; k < piece.bytes.size(); ++k) ++seen[piece.item][piece.offset + k];
    };
    options.on_landed = [&](const LoadedTensor& t) {
      ++landed[t.item];
      EXPECT_EQ(t.bytes.size(), items[t.item].byte_size());
    };
    (void)load(
        items, [&](const LoadedTensor& t) { EXPECT_EQ(landed[t.item].load(), 1); }, options);
    for (std::size_t i = 0; i < items.size(); ++i) {
      EXPECT_EQ(landed[i].load(), 1) << items[i].tensor.path();
      EXPECT_TRUE(std::all_of(seen[i].begin(), seen[i].end(), [](int n) { return n == 1; }))
          << items[i].tensor.path() << " in mode " << to_string(mode);
    }
  }
}

TEST(PlanStats, AsTensorStatsOfEachItemHoweverTheReadsCutIt) {
  const test::ScopedTestFolder folder;
  const Model model = Model::open(write_model(folder.path() / "m.onnx", model_bytes(2)));
  const std::vector<LoadItem> items = items_of(model);
  for (const LoadMode mode : {LoadMode::map, LoadMode::read}) {
    for (const std::uint64_t request_bytes : kRequestSizes) {
      LoadOptions options;
      options.mode = mode;
      options.request_bytes = request_bytes;
      options.threads = 4;
      const auto got = plan_stats(items, 7, options);
      ASSERT_EQ(got.size(), items.size());
      for (std::size_t i = 0; i < items.size(); ++i) {
        const std::string what = items[i].tensor.path() + " in requests of " +
                                 std::to_string(request_bytes) + ", " +
                                 std::string(to_string(mode));
        const DataType type = items[i].tensor.data_type();
        ASSERT_EQ(got[i].has_value(), has_stats(type)) << what;
        if (!got[i]) continue;
        expect_same(*got[i], tensor_stats(item_bytes(items[i]), type, elements_of(items[i]), 7),
                    what);
      }
    }
  }
  EXPECT_TRUE(test::error_of([&] { (void)plan_stats(items, 0); }));
}

TEST(PlanStats, CancelledStopsTheLoad) {
  const test::ScopedTestFolder folder;
  const Model model = Model::open(write_model(folder.path() / "m.onnx", model_bytes(3)));
  LoadOptions options;
  options.request_bytes = 4096;
  std::uint64_t reported = 0;
  options.progress = [&](std::uint64_t done, std::uint64_t) { reported = done; };
  options.cancelled = [&] { return reported > 0; };
  const auto error = test::error_of([&] { (void)plan_stats(items_of(model), 32, options); });
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->kind(), ErrorKind::cancelled);
}

TEST(ComparePlans, AsCompareValuesOfEachPair) {
  const test::ScopedTestFolder folder;
  std::vector<std::byte> changed = model_bytes(4);
  // Bytes changed here and there, some of them where 4 KiB requests cut the payloads.
  for (std::size_t at = 3000; at < changed.size(); at += 4093) changed[at] ^= std::byte{0x5A};
  const Model a = Model::open(write_model(folder.path() / "a.onnx", model_bytes(4)));
  const Model b = Model::open(write_model(folder.path() / "b.onnx", changed));
  std::vector<LoadItem> a_items;
  std::vector<LoadItem> b_items;
  for (const LoadItem& item : items_of(a)) {
    if (!has_stats(item.tensor.data_type())) continue;
    a_items.push_back(item);
    b_items.push_back({b.tensor(item.tensor.lookup_name()), item.row_begin, item.row_end});
  }
  for (const std::uint64_t request_bytes : kRequestSizes) {
    for (const double tolerance : {0.0, 0.25}) {
      LoadOptions options;
      options.mode = LoadMode::map;
      options.request_bytes = request_bytes;
      const auto got = compare_plans(a_items, b_items, tolerance, options);
      ASSERT_EQ(got.size(), a_items.size());
      for (std::size_t i = 0; i < a_items.size(); ++i) {
        const ValuesDiff want =
            compare_values(item_bytes(a_items[i]), item_bytes(b_items[i]),
                           a_items[i].tensor.data_type(), elements_of(a_items[i]), tolerance);
        const std::string what =
            a_items[i].tensor.path() + " in requests of " + std::to_string(request_bytes);
        EXPECT_EQ(got[i].differing, want.differing) << what;
        EXPECT_EQ(got[i].max_abs, want.max_abs) << what;
        EXPECT_EQ(got[i].max_rel, want.max_rel) << what;
      }
    }
  }
  EXPECT_GT(compare_plans(a_items, b_items)[0].differing, 0U);
  // Refused before any read: plans of different lengths, different types or sizes.
  const auto refused = [&](std::vector<LoadItem> x, std::vector<LoadItem> y) {
    const auto error = test::error_of([&] { (void)compare_plans(x, y); });
    return error && error->kind() == ErrorKind::invalid_argument;
  };
  EXPECT_TRUE(refused(a_items, {}));
  EXPECT_TRUE(refused({{a.tensor("h")}}, {{b.tensor("bf")}}));
  EXPECT_TRUE(refused({{a.tensor("h")}}, {{b.tensor("h"), 0, 10}}));
  EXPECT_TRUE(refused({{a.tensor("text")}}, {{b.tensor("text")}}));
}

}  // namespace
}  // namespace onnxmap
