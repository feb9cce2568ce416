// load_to_device through the host copy engine (CI has no GPU): every tensor's device bytes are
// the file's for raw, external, typed and sub-byte tensors and shards, on each path, within the
// ring's bound; cancellation and failures leave nothing pinned or registered. And the CUDA
// engine's failure where no runtime is found.

#include <gtest/gtest.h>
#include <stdlib.h>  // setenv, unsetenv

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "device/cuda_runtime.hpp"
#include "device/device_load.hpp"
#include "device/ring_memory.hpp"
#include "instrumented_engine.hpp"
#include "io/file_reader.hpp"
#include "model_builder.hpp"
#include "onnxmap/device.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/synth.hpp"
#include "test_support.hpp"
#include "test_system_calls.hpp"

namespace onnxmap {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;

class DeviceLoad : public test::TempFolder {
 protected:
  fs::path synth_model(bool external) {
    SynthOptions options;
    options.layers = 2;
    options.hidden = 64;
    options.vocab = 1000;
    options.external_data = external;
    const fs::path path = at(external ? "ext.onnx" : "inline.onnx");
    (void)synth(path, options);
    return path;
  }

  // A raw float tensor, a raw int4 one (sub-byte, odd count), a typed int64 one and a typed
  // int4 one (int32_data): every storage kind the loader decodes.
  fs::path storage_model() {
    const auto bytes = test::message([](wire::Writer& m) {
      test::sub(m, schema::ModelProto::kGraph, [](wire::Writer& g) {
        using TP = schema::TensorProto;
        test::sub(g, schema::GraphProto::kInitializer,
                  test::raw_tensor("w", DataType::float32, {4, 2},
                                   test::float_bytes({1, 2, 3, 4, 5, 6, 7, 8})));
        test::sub(g, schema::GraphProto::kInitializer,
                  test::raw_tensor("q", DataType::int4, {5},
                                   {std::byte{0x21}, std::byte{0x43}, std::byte{0x05}}));
        test::sub(g, schema::GraphProto::kInitializer, [](wire::Writer& t) {
          t.field_int64(TP::kDims, 2);
          t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::int64));
          t.field_string(TP::kName, "typed");
          t.field_int64(TP::kInt64Data, -1);
          t.field_int64(TP::kInt64Data, 7);
        });
        test::sub(g, schema::GraphProto::kInitializer, [](wire::Writer& t) {
          t.field_int64(TP::kDims, 3);
          t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::int4));
          t.field_string(TP::kName, "typed4");
          for (const int v : {0x21, 0x07}) t.field_int32(TP::kInt32Data, v);  // two a field
        });
      });
    });
    write(at("storage.onnx"), bytes);
    return at("storage.onnx");
  }

  // What the file holds for each item: its rows' bytes, or the decoded tensor.
  static std::vector<Bytes> expected(std::span<const LoadItem> items) {
    std::vector<Bytes> out;
    for (const LoadItem& item : items) {
      if (item.row_end != kAllRows) {
        const auto rows = item.tensor.slice_rows(item.row_begin, item.row_end);
        out.emplace_back(rows.begin(), rows.end());
      } else {
        const TensorData data = item.tensor.data();
        out.emplace_back(data.bytes().begin(), data.bytes().end());
      }
    }
    return out;
  }

  // A buffer of each item's size (0xEE bytes) and the pointers load_to_device takes.
  struct Destinations {
    std::vector<Bytes> buffers;
    std::vector<void*> pointers;
    explicit Destinations(std::span<const LoadItem> items) {
      for (const LoadItem& item : items) buffers.emplace_back(item.byte_size(), std::byte{0xEE});
      for (Bytes& b : buffers) pointers.push_back(b.empty() ? nullptr : b.data());
    }
  };

  // Loads `items` through a fresh host engine into buffers of their sizes; returns the buffers.
  std::vector<Bytes> load(std::span<const LoadItem> items, const DeviceLoadOptions& options,
                          DeviceLoadStats* stats = nullptr) {
    Destinations to(items);
    std::vector<Bytes>& buffers = to.buffers;
    std::vector<void*>& pointers = to.pointers;
    test::InstrumentedEngine engine;
    const DeviceLoadStats got = detail::load_to_device(items, {pointers, nullptr}, options, engine);
    if (stats != nullptr) *stats = got;
    EXPECT_EQ(engine.pinned_now(), 0U);
    EXPECT_EQ(engine.registered_now(), 0U);
    EXPECT_LE(engine.pinned_peak(), options.load.max_in_flight_bytes);
    EXPECT_LE(engine.registered_peak(), options.load.max_in_flight_bytes);
    return buffers;
  }

  static DeviceLoadOptions small(DevicePath path, LoadMode mode) {
    DeviceLoadOptions options;
    options.device = "host";
    options.path = path;
    options.load.mode = mode;
    options.load.max_in_flight_bytes = 64 << 10;  // 16 KiB chunks: tensors cut across chunks
    return options;
  }
};

constexpr DevicePath kDevicePaths[] = {DevicePath::automatic, DevicePath::registered,
                                       DevicePath::pinned};
constexpr LoadMode kDeviceModes[] = {LoadMode::map, LoadMode::read, LoadMode::direct};

TEST_F(DeviceLoad, EveryPathGivesTheFilesBytes) {
  for (const bool external : {false, true}) {
    const Model model = Model::open(synth_model(external));
    const auto items = plan(model);
    const auto want = expected(items);
    for (const DevicePath path : kDevicePaths) {
      for (const LoadMode mode : kDeviceModes) {
        DeviceLoadStats stats;
        EXPECT_EQ(load(items, small(path, mode), &stats), want)
            << external << " " << static_cast<int>(path) << " " << to_string(mode);
        EXPECT_EQ(stats.tensors, items.size());
        EXPECT_EQ(stats.bytes_staged + stats.bytes_registered, stats.bytes);
        EXPECT_EQ(stats.registrations_refused, 0U);
        if (path == DevicePath::pinned) {
          EXPECT_EQ(stats.path(), "pinned");
        }
        if (external && path != DevicePath::pinned &&
            (path == DevicePath::registered || mode == LoadMode::map)) {
          EXPECT_EQ(stats.path(), "registered");
          EXPECT_EQ(stats.pinned_bytes, 0U);
          EXPECT_GT(stats.registrations, 1U);
        }
      }
    }
  }
}

// With CUDA's choices, warm pages go through the ring from the page cache in every mode but
// map: O_DIRECT would read them from the disk again, and registering them was slower than
// copying them out (an H100's figures, bench/gpu-sweep.md). The seam counts O_DIRECT reads:
// none is made. Into host memory, where registering is free, they are copied from the mapping.
TEST_F(DeviceLoad, AutomaticStagesWarmPagesFromThePageCache) {
  const Model model = Model::open(synth_model(true));
  const auto items = plan(model);
  const auto want = expected(items);  // reads every byte: the pages are in the page cache
  const auto load_warm = [&](LoadMode mode, bool as_cuda) {
    Destinations to(items);
    test::InstrumentedEngine engine;
    engine.prefer_registration(!as_cuda);
    (void)test::set_direct_refusal(test::DirectRefusal::refuse_read);
    const DeviceLoadStats stats = detail::load_to_device(
        items, {to.pointers, nullptr}, small(DevicePath::automatic, mode), engine);
    EXPECT_EQ(test::set_direct_refusal(test::DirectRefusal::none), 0U) << to_string(mode);
    EXPECT_EQ(to.buffers, want) << to_string(mode);
    return stats;
  };
  for (const LoadMode mode : {LoadMode::direct, LoadMode::read}) {
    const DeviceLoadStats stats = load_warm(mode, true);
    EXPECT_EQ(stats.path(), "pinned") << to_string(mode);
    EXPECT_EQ(stats.registrations, 0U);
    // Warm: a worker per core (16 KiB chunks make more units than that).
    EXPECT_EQ(stats.threads,
              std::clamp(std::thread::hardware_concurrency(), 1U, kMaxDeviceThreads));
    EXPECT_EQ(load_warm(mode, false).path(), "registered") << to_string(mode);
  }
  EXPECT_EQ(load_warm(LoadMode::map, true).path(), "registered");
}

TEST_F(DeviceLoad, ShardsAndEveryStorageKind) {
  const Model synthetic = Model::open(synth_model(true));
  const Model storage = Model::open(storage_model());
  for (const Model* model : {&synthetic, &storage}) {
    for (const auto& items : {plan(*model, PlanOptions::shard(1, 3)), plan(*model)}) {
      for (const DevicePath path : kDevicePaths) {
        EXPECT_EQ(load(items, small(path, LoadMode::read)), expected(items));
      }
    }
  }
  // A model in memory (opened in read mode) goes through the ring.
  OpenOptions read;
  read.mode = LoadMode::read;
  const Model in_memory = Model::open(at("storage.onnx"), read);
  const auto items = plan(in_memory);
  DeviceLoadStats stats;
  EXPECT_EQ(load(items, small(DevicePath::automatic, LoadMode::read), &stats), expected(items));
  EXPECT_EQ(stats.path(), "pinned");
}

TEST_F(DeviceLoad, RefusedRegistrationsAreStaged) {
  const Model model = Model::open(synth_model(true));
  const auto items = plan(model);
  Destinations to(items);
  std::vector<Bytes>& buffers = to.buffers;
  std::vector<void*>& pointers = to.pointers;
  test::InstrumentedEngine engine;
  engine.refuse_registration(true);
  const DeviceLoadStats stats = detail::load_to_device(
      items, {pointers, nullptr}, small(DevicePath::registered, LoadMode::direct), engine);
  EXPECT_EQ(buffers, expected(items));
  EXPECT_GT(stats.registrations_refused, 0U);
  EXPECT_EQ(stats.bytes_registered, 0U);
  EXPECT_EQ(stats.path(), "pinned");
}

TEST_F(DeviceLoad, CancelledLeavesNothingPinnedOrRegistered) {
  const Model model = Model::open(synth_model(false));
  const auto items = plan(model);
  for (const DevicePath path : {DevicePath::registered, DevicePath::pinned}) {
    Destinations to(items);
    std::vector<void*>& pointers = to.pointers;
    test::InstrumentedEngine engine;
    DeviceLoadOptions options = small(path, LoadMode::read);
    options.load.threads = 1;
    options.load.max_in_flight_bytes = 8 << 10;
    std::uint64_t seen = 0;
    options.load.progress = [&](std::uint64_t done, std::uint64_t) { seen = done; };
    options.load.cancelled = [&] { return seen > 0; };
    // Slow enough that the calling thread sees progress long before the last copy.
    const DeviceBufferFor buffer_for = [&](std::size_t i) -> void* {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      return pointers[i];
    };
    const std::string what = test::expect_error(
        [&] {
          (void)detail::load_to_device(items, {{}, &buffer_for}, options, engine);
        },
        ErrorKind::cancelled);
    // The loaders' one cancellation: the load named, the tensors and bytes done of the total.
    EXPECT_NE(what.find("the load to host was cancelled after "), std::string::npos) << what;
    EXPECT_NE(what.find(" tensors, "), std::string::npos) << what;
    std::uint64_t total = 0;
    for (const LoadItem& item : items) total += item.byte_size();
    EXPECT_NE(what.find(" of " + std::to_string(total) + " bytes"), std::string::npos) << what;
    EXPECT_EQ(engine.pinned_now(), 0U);
    EXPECT_EQ(engine.registered_now(), 0U);
  }
}

TEST_F(DeviceLoad, CopyFailureNamesTheDeviceAndTensor) {
  const Model model = Model::open(synth_model(true));
  const auto items = plan(model);
  Destinations to(items);
  std::vector<void*>& pointers = to.pointers;
  for (const DevicePath path : {DevicePath::registered, DevicePath::pinned}) {
    test::InstrumentedEngine engine;
    engine.fail_copy_at(3);
    const std::string message = test::expect_error(
        [&] {
          (void)detail::load_to_device(items, {pointers, nullptr}, small(path, LoadMode::read),
                                       engine);
        },
        ErrorKind::device);
    EXPECT_NE(message.find("injected copy failure on host"), std::string::npos) << message;
    EXPECT_NE(message.find("initializer"), std::string::npos) << message;
    EXPECT_EQ(engine.pinned_now(), 0U);
    EXPECT_EQ(engine.registered_now(), 0U);
  }
}

TEST_F(DeviceLoad, BufferForAndTooLittleDeviceMemory) {
  const Model model = Model::open(synth_model(false));
  const auto items = plan(model);
  std::vector<Bytes> buffers(items.size());
  const DeviceBufferFor buffer_for = [&](std::size_t i) -> void* {
    buffers[i].resize(items[i].byte_size());
    return buffers[i].data();
  };
  {
    test::InstrumentedEngine engine;
    (void)detail::load_to_device(items, {{}, &buffer_for},
                                 small(DevicePath::automatic, LoadMode::direct), engine);
    EXPECT_EQ(buffers, expected(items));
  }
  std::vector<Bytes>(items.size()).swap(buffers);
  test::InstrumentedEngine engine;
  engine.set_free_device_bytes(1000);
  const std::string message = test::expect_error(
      [&] {
        (void)detail::load_to_device(items, {{}, &buffer_for},
                                     small(DevicePath::automatic, LoadMode::read), engine);
      },
      ErrorKind::device);
  EXPECT_NE(message.find("too little memory on host"), std::string::npos) << message;
  for (const Bytes& b : buffers) EXPECT_TRUE(b.empty());  // checked before anything was asked
}

TEST_F(DeviceLoad, PublicCallsAndBadArguments) {
  const Model model = Model::open(synth_model(false));
  const auto items = plan(model);
  Destinations to(items);
  std::vector<Bytes>& buffers = to.buffers;
  std::vector<void*>& pointers = to.pointers;
  DeviceLoadOptions options;
  options.device = "host";
  const DeviceLoadStats stats = load_to_device(items, pointers, options);
  EXPECT_EQ(buffers, expected(items));
  EXPECT_EQ(stats.bytes, stats.bytes_staged + stats.bytes_registered);
  EXPECT_LE(stats.pinned_bytes, options.load.max_in_flight_bytes);
  options.device = "tpu:0";
  test::expect_error([&] { (void)load_to_device(items, pointers, options); },
                     ErrorKind::invalid_argument);
  options.device = "host";
  pointers[1] = nullptr;
  test::expect_error([&] { (void)load_to_device(items, pointers, options); },
                     ErrorKind::invalid_argument, items[1].tensor.path());
  pointers.pop_back();
  test::expect_error([&] { (void)load_to_device(items, pointers, options); },
                     ErrorKind::invalid_argument);
}

TEST(CudaRuntime, NoRuntimeIsAClearError) {
  const std::string missing = "/nonexistent/onnxmap-test/libcudart.so.12";
  const std::vector<std::string> candidates = {missing};
  const std::string message =
      test::expect_error([&] { (void)detail::load_cudart(candidates); }, ErrorKind::device);
  EXPECT_NE(message.find("no CUDA runtime found"), std::string::npos) << message;
  EXPECT_NE(message.find(missing), std::string::npos) << message;
  EXPECT_NE(message.find("ONNXMAP_CUDART"), std::string::npos) << message;

  ::setenv("ONNXMAP_CUDART", missing.c_str(), 1);
  const auto listed = detail::cudart_candidates();
  ::unsetenv("ONNXMAP_CUDART");
  ASSERT_GE(listed.size(), 3U);
  EXPECT_EQ(listed[0], missing);
  EXPECT_EQ(listed[1], "libcudart.so.13");
  EXPECT_EQ(listed[2], "libcudart.so.12");
  // Where no candidate loads (CI), "cuda:0" fails with that error before anything is read.
  if (test::error_of([&] { (void)detail::load_cudart(listed); })) {
    EXPECT_NE(detail::make_copy_engine("host"), nullptr);
    test::expect_error([] { (void)detail::make_copy_engine("cuda:0"); }, ErrorKind::device);
  }
}

// PyTorch's wheels bundle the runtime in a virtual environment's site-packages: CUDA 13's in
// nvidia/cu13/lib, CUDA 12's in nvidia/cuda_runtime/lib. Both are listed, after the system's.
TEST(CudaRuntime, WheelRuntimesAreCandidates) {
  const test::ScopedTestFolder folder;
  const fs::path packages = folder.path() / "lib" / "python3.12" / "site-packages" / "nvidia";
  const fs::path cu13 = packages / "cu13" / "lib" / "libcudart.so.13";
  const fs::path cu12 = packages / "cuda_runtime" / "lib" / "libcudart.so.12";
  for (const fs::path& file : {cu13, cu12}) {
    fs::create_directories(file.parent_path());
    std::ofstream(file).put(0);  // not a library: found, not opened
  }
  const char* before = std::getenv("VIRTUAL_ENV");
  const std::string saved = before != nullptr ? before : "";
  ::setenv("VIRTUAL_ENV", folder.path().c_str(), 1);
  const auto listed = detail::cudart_candidates();
  before != nullptr ? ::setenv("VIRTUAL_ENV", saved.c_str(), 1) : ::unsetenv("VIRTUAL_ENV");
  const auto at = [&](const fs::path& file) {
    return std::find(listed.begin(), listed.end(), file.string()) - listed.begin();
  };
  EXPECT_LT(at(cu13), static_cast<std::ptrdiff_t>(listed.size()));
  EXPECT_LT(at(cu13), at(cu12));
  EXPECT_LT(at(cu12), static_cast<std::ptrdiff_t>(listed.size()));
  EXPECT_GT(at(cu13), at("/usr/local/cuda/lib64/libcudart.so.12"));
}

// The ring's memory: whole huge pages, 2 MiB aligned, zeroed and writable, for any size.
TEST(RingMemory, AlignedZeroedWritable) {
  for (const std::size_t bytes :
       {std::size_t{0}, std::size_t{1}, detail::kHugePage, detail::kHugePage * 3 + 4096}) {
    auto* memory = static_cast<std::byte*>(detail::map_ring_memory(bytes));
    ASSERT_NE(memory, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(memory) % detail::kHugePage, 0U) << bytes;
    const std::size_t usable = std::max(bytes, std::size_t{1});
    EXPECT_EQ(memory[0], std::byte{0});
    EXPECT_EQ(memory[usable - 1], std::byte{0});
    std::memset(memory, 0x5a, usable);
    EXPECT_EQ(memory[usable - 1], std::byte{0x5a});
    detail::unmap_ring_memory(memory, bytes);
  }
}

}  // namespace
}  // namespace onnxmap
