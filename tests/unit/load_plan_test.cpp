// The one plan of reads every load takes (load/load_plan.hpp): requests cut from the streamed
// items in file order, each one's aligned range within the cut's size (so that a direct read of
// it fits a buffer, or a ring slot, of that size), neighbours joined across gaps smaller than
// the cut's, every item's bytes covered once and in order, also where items overlap (a tensor
// and rows of it); the device's units are those requests; the page cache is counted once, per
// request, by the plan.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "device/device_units.hpp"
#include "io/file_reader.hpp"
#include "load/load_plan.hpp"
#include "model_builder.hpp"
#include "onnxmap/builder.hpp"
#include "onnxmap/load.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/save.hpp"
#include "test_support.hpp"

namespace onnxmap {
namespace {

namespace fs = std::filesystem;
using detail::Buffers;
using detail::LoadPlan;
using detail::ReadCut;
using detail::ReadPiece;
using detail::Request;

constexpr std::uint64_t kKiB = 1024;

class LoadPlanTest : public test::TempFolder {
 protected:
  // Float tensors [8, n] of these byte counts (multiples of 32) in an external data file, each
  // payload starting at a multiple of `align` (1: packed, at unaligned offsets).
  Model open_model(const std::vector<std::uint64_t>& sizes, std::uint64_t align) {
    ModelBuilder builder;
    GraphBuilder& graph = builder.graph("g");
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      std::vector<float> values(sizes[i] / 4);
      std::iota(values.begin(), values.end(), static_cast<float>(i));
      graph.initializer(TensorBuilder("t" + std::to_string(i), DataType::float32,
                                      {8, static_cast<std::int64_t>(values.size() / 8)},
                                      test::float_bytes(values)));
    }
    SaveOptions options;
    options.external_data = ExternalData::external;
    options.size_threshold = 1;
    options.align = align;
    (void)save(builder, at("m.onnx"), options);
    for (const auto& entry : fs::directory_iterator(root_)) {
      if (entry.path() != at("m.onnx")) data_path_ = entry.path();
    }
    return Model::open(at("m.onnx"));
  }

  fs::path data_path_;
};

// Every request's aligned range within the cap, its pieces inside it, the requests in file
// order, and each item's pieces tiling its bytes in order.
void expect_well_cut(const LoadPlan& plan, std::uint64_t cap) {
  for (std::size_t r = 0; r < plan.requests.size(); ++r) {
    const Request& request = plan.requests[r];
    EXPECT_LE(io::align_up(request.end) - io::align_down(request.begin), cap) << r;
    ASSERT_GE(request.piece_count, 1U);
    if (request.own_buffer) {
      EXPECT_EQ(request.piece_count, 1U);
    }
    for (const ReadPiece& piece : detail::pieces_of(plan, request)) {
      EXPECT_GE(piece.offset, request.begin);
      EXPECT_LE(piece.offset + piece.length, request.end);
    }
    if (r > 0) {
      EXPECT_LE(plan.requests[r - 1].file, request.file);
    }
  }
  std::vector<std::uint64_t> covered(plan.items.size(), 0);
  for (std::size_t r = 0; r < plan.requests.size(); ++r) {
    for (const ReadPiece& piece : detail::pieces_of(plan, plan.requests[r])) {
      const detail::ResolvedItem& item = plan.items[piece.item];
      EXPECT_EQ(piece.item_offset, covered[piece.item]) << "item " << piece.item;
      EXPECT_EQ(piece.offset, item.offset + piece.item_offset);
      EXPECT_GE(r, item.first_request);
      EXPECT_LE(r, item.last_request);
      covered[piece.item] += piece.length;
    }
  }
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    EXPECT_EQ(covered[i], plan.items[i].length) << "item " << i;
  }
}

TEST_F(LoadPlanTest, RequestsFitTheCutAndCoverEveryItemOnce) {
  const Model model = open_model({4 * kKiB + 32, 64, 64 * kKiB + 96, 32 * 3, 300 * kKiB + 64}, 1);
  auto items = plan(model);
  // Overlapping items: rows of a tensor beside the whole tensor.
  items.push_back({model.tensor("t2"), 2, 5});
  items.push_back({model.tensor("t4"), 0, 3});
  for (const LoadMode mode : {LoadMode::read, LoadMode::direct}) {
    LoadOptions options;
    options.mode = mode;
    for (const std::uint64_t cap : {4 * kKiB, 12 * kKiB, 64 * kKiB, 1024 * kKiB}) {
      for (const Buffers buffers : {Buffers::library, Buffers::caller}) {
        LoadPlan plan = detail::resolve_plan(items, options.mode, buffers);
        detail::cut_reads(plan, {cap + 100, 1 << 20U, false});  // the cap: aligned down
        SCOPED_TRACE(std::to_string(cap) + " " + std::string(to_string(mode)));
        expect_well_cut(plan, cap);
        // The device takes the requests as they are, one path each, staged by default.
        const auto paths = detail::request_paths(plan, {});
        ASSERT_EQ(paths.size(), plan.requests.size());
        for (const detail::RequestPath path : paths) {
          EXPECT_EQ(path, detail::RequestPath::staged);
        }
      }
    }
  }
}

TEST_F(LoadPlanTest, ItemsCloserThanTheGapShareARequest) {
  // Payloads at multiples of 4096: 4 KiB gaps at most between them.
  const Model model = open_model({64, 416, 4000, 64}, 4096);
  const auto items = plan(model);
  const LoadOptions options;
  for (const auto& [gap, requests] : {std::pair<std::uint64_t, std::size_t>{0, 4},
                                      std::pair<std::uint64_t, std::size_t>{8 * kKiB, 1}}) {
    LoadPlan plan = detail::resolve_plan(items, options.mode, Buffers::library);
    detail::cut_reads(plan, {1 << 20U, gap, false});
    expect_well_cut(plan, 1 << 20U);
    EXPECT_EQ(plan.requests.size(), requests) << gap;
  }
}

// The plan counts the page cache under each request once, and both loaders take its answer:
// the device registers resident requests where the engine prefers it.
TEST_F(LoadPlanTest, ResidencyIsCountedPerRequest) {
  const Model model = open_model({64 * kKiB, 64 * kKiB, 128 * kKiB}, 1);
  const auto items = plan(model);
  const LoadOptions options;
  const auto resident_requests = [&] {
    LoadPlan plan = detail::resolve_plan(items, options.mode, Buffers::caller);
    detail::cut_reads(plan, {16 * kKiB, 0, true});
    std::size_t resident = 0;
    for (const Request& r : plan.requests) resident += r.resident ? 1 : 0;
    const auto paths = detail::request_paths(plan, {DevicePath::automatic, LoadMode::read, true});
    for (std::size_t r = 0; r < paths.size(); ++r) {
      EXPECT_EQ(paths[r] == detail::RequestPath::registered, plan.requests[r].resident);
    }
    return std::pair(resident, plan.requests.size());
  };
  (void)read(data_path_);  // every page in the page cache
  const auto [warm, count] = resident_requests();
  EXPECT_EQ(warm, count);
  EXPECT_GT(count, 1U);
  test::evict(data_path_);
  const auto [cold, again] = resident_requests();
  if (cold == again) GTEST_SKIP() << "the kernel kept the pages after POSIX_FADV_DONTNEED";
  EXPECT_EQ(cold, 0U);
}

}  // namespace
}  // namespace onnxmap
