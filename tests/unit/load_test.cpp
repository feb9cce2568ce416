// Load strategies and the streaming bulk loader: every mode gives the same bytes as the map
// (which the conformance tests hold against numpy_helper), bad input the same errors, and the
// loader delivers every tensor, its row shard or its typed fields, within its memory bound.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <numeric>

#include "model_builder.hpp"
#include "onnxmap/load.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/synth.hpp"
#include "schema/fields.hpp"
#include "test_support.hpp"

namespace onnxmap {
namespace {

namespace fs = std::filesystem;
constexpr LoadMode kModes[] = {LoadMode::map, LoadMode::read, LoadMode::direct};

class Load : public test::TempFolder {
 protected:
  // An inline model and one with external data (both patterned bytes, a few MB).
  fs::path synth_model(bool external, std::int64_t hidden = 128) {
    SynthOptions options;
    options.layers = 2;
    options.hidden = hidden;
    options.vocab = 3000;
    options.external_data = external;
    const fs::path path = at(external ? "ext.onnx" : "inline.onnx");
    (void)synth(path, options);
    return path;
  }

  static std::map<std::string, std::vector<std::byte>> bytes_by_name(const Model& model) {
    std::map<std::string, std::vector<std::byte>> out;
    for (std::size_t i = 0; i < model.tensor_count(); ++i) {
      const Tensor t = model.tensor_at(i);
      const TensorData data = t.data();
      out[t.path()] = {data.bytes().begin(), data.bytes().end()};
    }
    return out;
  }
};

TEST_F(Load, ModeNamesRoundTrip) {
  for (const LoadMode mode : kModes) EXPECT_EQ(parse_load_mode(to_string(mode)), mode);
  EXPECT_FALSE(parse_load_mode("mmap").has_value());
}

TEST_F(Load, EveryOpenModeGivesTheMapsBytes) {
  for (const bool external : {false, true}) {
    const fs::path path = synth_model(external);
    const auto expected = bytes_by_name(Model::open(path));
    for (const LoadMode mode : {LoadMode::read, LoadMode::direct}) {
      OpenOptions options;
      options.mode = mode;
      const Model model = Model::open(path, options);
      EXPECT_EQ(bytes_by_name(model), expected) << to_string(mode) << " external " << external;
      EXPECT_FALSE(model.tensor_at(0).bytes().empty());
    }
  }
}

// The message of the Error `call()` throws, or "" when it returns.
template <class Call>
std::string message_of(Call&& call) {
  const auto error = test::error_of(call);
  return error ? error->what() : "";
}

// The message of the error `open` throws, or "" when it opens.
std::string open_error(const fs::path& path, LoadMode mode) {
  OpenOptions options;
  options.mode = mode;
  return message_of([&] { (void)Model::open(path, options); });
}

TEST_F(Load, BadInputFailsAlikeInEveryMode) {
  const fs::path ext = synth_model(true);
  const fs::path inl = synth_model(false);
  // A truncated model, a short data file, a folder, a missing file.
  const auto whole = read(inl);
  write(at("cut.onnx"), std::span(whole).first(whole.size() / 2));
  fs::resize_file(at("ext.onnx.data"), fs::file_size(at("ext.onnx.data")) - 100);
  fs::create_directory(at("folder.onnx"));
  for (const fs::path& bad : {at("cut.onnx"), ext, at("folder.onnx"), at("missing.onnx")}) {
    const std::string expected = open_error(bad, LoadMode::map);
    EXPECT_FALSE(expected.empty()) << bad;
    for (const LoadMode mode : {LoadMode::read, LoadMode::direct}) {
      EXPECT_EQ(open_error(bad, mode), expected) << to_string(mode);
    }
  }
}

// tmpfs refused O_DIRECT before Linux 6.6; there the reads fall back to buffered ones.
TEST_F(Load, DirectOnTmpfs) {
  const fs::path shm = "/dev/shm";
  if (!fs::is_directory(shm)) GTEST_SKIP() << "no /dev/shm (tmpfs)";
  const fs::path source = synth_model(false);
  const fs::path path = shm / ("onnxmap-load-" + std::to_string(::getpid()) + ".onnx");
  fs::copy_file(source, path, fs::copy_options::overwrite_existing);
  OpenOptions options;
  options.mode = LoadMode::direct;
  const auto copied = bytes_by_name(Model::open(path, options));
  const Model model = Model::open(path);
  LoadOptions load_options;
  load_options.mode = LoadMode::direct;
  std::size_t delivered = 0;
  const LoadStats stats = load(
      plan(model), [&](const LoadedTensor&) { ++delivered; }, load_options);
  fs::remove(path);
  EXPECT_EQ(copied, bytes_by_name(Model::open(source)));
  EXPECT_EQ(delivered, model.tensor_count());
  EXPECT_GE(stats.bytes_read, stats.bytes);
}

// Loads `plan` in `options` and returns each item's bytes, checking the callback's contract.
std::vector<std::vector<std::byte>> load_all(std::span<const LoadItem> plan,
                                             const LoadOptions& options) {
  std::vector<std::vector<std::byte>> out(plan.size());
  std::vector<int> calls(plan.size());
  std::uint64_t last_done = 0;
  LoadOptions with_progress = options;
  with_progress.progress = [&](std::uint64_t done, std::uint64_t total) {
    EXPECT_GE(done, last_done);
    EXPECT_LE(done, total);
    last_done = done;
  };
  const LoadStats stats = load(
      plan,
      [&](const LoadedTensor& t) {
        ++calls.at(t.item);
        out[t.item].assign(t.bytes.begin(), t.bytes.end());
      },
      with_progress);
  EXPECT_EQ(stats.tensors, plan.size());
  EXPECT_TRUE(std::all_of(calls.begin(), calls.end(), [](int c) { return c == 1; }));
  return out;
}

std::vector<std::vector<std::byte>> expected_bytes(std::span<const LoadItem> plan) {
  std::vector<std::vector<std::byte>> out;
  for (const LoadItem& item : plan) {
    if (item.row_end == kAllRows) {
      const TensorData data = item.tensor.data();
      out.emplace_back(data.bytes().begin(), data.bytes().end());
    } else {
      const auto rows = item.tensor.slice_rows(item.row_begin, item.row_end);
      out.emplace_back(rows.begin(), rows.end());
    }
  }
  return out;
}

TEST_F(Load, LoaderDeliversEveryTensorAndShardInEveryMode) {
  for (const bool external : {false, true}) {
    const Model model = Model::open(synth_model(external));
    for (const auto& plan : {plan(model), plan(model, PlanOptions::shard(3, 8)),
                             plan(model, PlanOptions::matching("*.norm*"))}) {
      ASSERT_FALSE(plan.empty());
      const auto expected = expected_bytes(plan);
      for (const LoadMode mode : kModes) {
        LoadOptions options;
        options.mode = mode;
        // Small requests and a small bound: tensors split over requests, requests holding
        // many tensors, and threads waiting for the callback to free memory.
        for (const auto& [request, in_flight, threads] :
             {std::tuple{std::uint64_t{5000}, std::uint64_t{1} << 16U, 4U},
              std::tuple{std::uint64_t{1} << 20U, std::uint64_t{1} << 30U, 1U},
              std::tuple{std::uint64_t{16} << 20U, std::uint64_t{300000}, 3U}}) {
          options.request_bytes = request;
          options.max_in_flight_bytes = in_flight;
          options.threads = threads;
          EXPECT_EQ(load_all(plan, options), expected) << to_string(mode) << " " << request;
        }
      }
    }
  }
}

TEST_F(Load, LoadIntoCallerBuffersAndTypedFields) {
  const auto bytes = test::message([](wire::Writer& m) {
    test::sub(m, schema::ModelProto::kGraph, [](wire::Writer& g) {
      test::sub(g, schema::GraphProto::kInitializer,
                test::raw_tensor("w", DataType::float32, {3}, test::float_bytes({1, 2, 3})));
      test::sub(g, schema::GraphProto::kInitializer, [](wire::Writer& t) {
        t.field_int64(schema::TensorProto::kDims, 2);
        t.field_int32(schema::TensorProto::kDataType, static_cast<std::int32_t>(DataType::int64));
        t.field_string(schema::TensorProto::kName, "typed");
        t.field_int64(schema::TensorProto::kInt64Data, -1);
        t.field_int64(schema::TensorProto::kInt64Data, 7);
      });
      test::sub(g, schema::GraphProto::kInitializer, [](wire::Writer& t) {
        // Empty and typed: its decoded bytes are an empty span whose pointer may be null.
        t.field_int64(schema::TensorProto::kDims, 0);
        t.field_int32(schema::TensorProto::kDataType, static_cast<std::int32_t>(DataType::int64));
        t.field_string(schema::TensorProto::kName, "empty");
      });
    });
  });
  write(at("m.onnx"), bytes);
  for (const LoadMode open_mode : kModes) {
    OpenOptions open_options;
    open_options.mode = open_mode;
    const Model model = Model::open(at("m.onnx"), open_options);
    const auto plan = onnxmap::plan(model);
    const auto expected = expected_bytes(plan);
    for (const LoadMode mode : kModes) {
      std::vector<std::vector<std::byte>> storage;
      std::vector<std::span<std::byte>> buffers;
      for (const auto& e : expected) storage.emplace_back(e.size(), std::byte{0xEE});
      for (auto& s : storage) buffers.emplace_back(s);
      LoadOptions options;
      options.mode = mode;
      (void)load_into(plan, buffers, {}, options);
      EXPECT_EQ(storage, expected) << to_string(open_mode) << " " << to_string(mode);
      EXPECT_EQ(load_all(plan, options), expected);
    }
    std::vector<std::byte> small(4);
    const std::vector<std::span<std::byte>> wrong{small, small, small};
    EXPECT_THROW((void)load_into(plan, wrong, {}), Error);
  }
}

// Buffers asked for when each read is scheduled: every tensor lands in its own, the buffers
// alive at once (asked for, not yet handed to the callback) stay within max_in_flight_bytes
// (plus one tensor), and a provider that fails or answers with the wrong size stops the load.
TEST_F(Load, LoadIntoBuffersAskedForOnSchedule) {
  SynthOptions synth_options;
  synth_options.layers = 16;
  synth_options.hidden = 128;
  synth_options.vocab = 256;
  synth_options.external_data = true;
  (void)synth(at("layers.onnx"), synth_options);
  const Model model = Model::open(at("layers.onnx"));
  const auto plan = onnxmap::plan(model);
  const auto expected = expected_bytes(plan);
  std::uint64_t largest = 0;
  std::uint64_t total = 0;
  for (const auto& e : expected) {
    largest = std::max<std::uint64_t>(largest, e.size());
    total += e.size();
  }
  for (const LoadMode mode : kModes) {
    LoadOptions options;
    options.mode = mode;
    options.max_in_flight_bytes = 2 * largest;
    // A request may start tensors beyond the budget when none in flight can finish first.
    options.request_bytes = largest;
    std::mutex lock;
    std::vector<std::vector<std::byte>> storage(plan.size());
    std::uint64_t held = 0;
    std::uint64_t most_held = 0;
    const BufferFor buffer_for = [&](std::size_t item) {
      const std::lock_guard guard(lock);
      storage[item].assign(expected[item].size(), std::byte{0xEE});
      held += storage[item].size();
      most_held = std::max(most_held, held);
      return std::span<std::byte>(storage[item]);
    };
    std::vector<std::vector<std::byte>> delivered(plan.size());
    const LoadCallback on_tensor = [&](const LoadedTensor& t) {
      const std::lock_guard guard(lock);
      EXPECT_EQ(t.bytes.data(), storage[t.item].data());
      delivered[t.item] = std::move(storage[t.item]);  // the caller lets it go
      held -= delivered[t.item].size();
    };
    (void)load_into(plan, buffer_for, on_tensor, options);
    EXPECT_EQ(delivered, expected) << to_string(mode);
    EXPECT_LE(most_held, options.max_in_flight_bytes + options.request_bytes) << to_string(mode);
    EXPECT_LT(most_held, total / 4) << to_string(mode);  // not every buffer at once
  }
  const BufferFor refusing = [](std::size_t) -> std::span<std::byte> {
    throw Error(ErrorKind::io, "no memory for it");
  };
  EXPECT_THROW((void)load_into(plan, refusing, {}), Error);
  std::vector<std::byte> small(1);
  const BufferFor wrong = [&](std::size_t) { return std::span<std::byte>(small); };
  try {
    (void)load_into(plan, wrong, {});
    ADD_FAILURE() << "a buffer of the wrong size was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << e.what();
  }
}

// A tensor handed over gives its library buffer back for the next: a load allocates fresh
// buffers for what is in flight at once, not for every tensor.
TEST_F(Load, LibraryBuffersAreReused) {
  SynthOptions synth_options;
  synth_options.layers = 16;
  synth_options.hidden = 128;
  synth_options.vocab = 256;
  (void)synth(at("reuse.onnx"), synth_options);
  const Model model = Model::open(at("reuse.onnx"));
  const auto plan = onnxmap::plan(model);
  const auto expected = expected_bytes(plan);
  std::uint64_t total = 0;
  for (const auto& e : expected) total += e.size();
  for (const LoadMode mode : {LoadMode::read, LoadMode::direct}) {
    LoadOptions options;
    options.mode = mode;
    options.threads = 1;
    options.max_in_flight_bytes = total / 8;
    options.request_bytes = 64 << 10;  // one request of the whole model would take every buffer
    std::vector<std::vector<std::byte>> delivered(plan.size());
    const LoadStats stats = load(
        plan,
        [&](const LoadedTensor& t) { delivered[t.item].assign(t.bytes.begin(), t.bytes.end()); },
        options);
    EXPECT_EQ(delivered, expected) << to_string(mode);  // reused buffers hold the right bytes
    EXPECT_GT(stats.fresh_buffer_bytes, 0U) << to_string(mode);
    EXPECT_LT(stats.fresh_buffer_bytes, total / 2) << to_string(mode);
  }
}

TEST_F(Load, EveryPlanOfStringAndTypedTensorsLoads) {
  // A 2-D raw tensor (cut by shards), a 2-D typed one and a STRING one (both whole).
  const auto bytes = test::message([](wire::Writer& m) {
    test::sub(m, schema::ModelProto::kGraph, [](wire::Writer& g) {
      test::sub(g, schema::GraphProto::kInitializer,
                test::raw_tensor("w", DataType::float32, {4, 2},
                                 test::float_bytes({1, 2, 3, 4, 5, 6, 7, 8})));
      test::sub(g, schema::GraphProto::kInitializer, [](wire::Writer& t) {
        t.field_int64(schema::TensorProto::kDims, 2);
        t.field_int64(schema::TensorProto::kDims, 1);
        t.field_int32(schema::TensorProto::kDataType, static_cast<std::int32_t>(DataType::int64));
        t.field_string(schema::TensorProto::kName, "typed");
        t.field_int64(schema::TensorProto::kInt64Data, -1);
        t.field_int64(schema::TensorProto::kInt64Data, 7);
      });
      test::sub(g, schema::GraphProto::kInitializer, [](wire::Writer& t) {
        t.field_int64(schema::TensorProto::kDims, 2);
        t.field_int32(schema::TensorProto::kDataType, static_cast<std::int32_t>(DataType::string));
        t.field_string(schema::TensorProto::kName, "text");
        t.field_string(schema::TensorProto::kStringData, "ab");
        t.field_string(schema::TensorProto::kStringData, "");
      });
    });
  });
  write(at("m.onnx"), bytes);
  const Model model = Model::open(at("m.onnx"));
  const auto shard = plan(model, PlanOptions::shard(1, 2));
  ASSERT_EQ(shard.size(), 3U);
  EXPECT_EQ(shard[0].row_begin, 2U);
  EXPECT_EQ(shard[1].row_end, kAllRows);
  EXPECT_EQ(shard[2].row_end, kAllRows);
  for (const auto& plan : {plan(model), shard, plan(model, PlanOptions::shard(0, 2))}) {
    auto expected = expected_bytes(std::span(plan).first(2));
    expected.emplace_back();  // STRING: no bytes
    for (const LoadMode mode : kModes) {
      LoadOptions options;
      options.mode = mode;
      EXPECT_EQ(load_all(plan, options), expected) << to_string(mode);
      prefetch(plan, options);
    }
  }
}

TEST_F(Load, LoaderErrorsAreTheViewsErrors) {
  const Model model = Model::open(synth_model(false));
  const Tensor t = model.tensor_at(model.tensor_count() - 1);
  const LoadItem bad_rows{t, 5, 1 << 30};
  const std::string expected = message_of([&] { (void)t.slice_rows(5, 1 << 30); });
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(message_of([&] { (void)load(std::span(&bad_rows, 1), {}); }), expected);
  // A callback that throws stops the load with its error.
  const auto plan = onnxmap::plan(model);
  EXPECT_EQ(message_of([&] {
              (void)load(plan, [](const LoadedTensor&) {
                throw Error(ErrorKind::invalid_argument, "stop");
              });
            }),
            Error(ErrorKind::invalid_argument, "stop").what());
}

TEST_F(Load, AFileThatShrankAfterOpenIsAnErrorNotACrash) {
  const fs::path path = synth_model(true);
  const Model model = Model::open(path);
  fs::resize_file(at("ext.onnx.data"), 4096);
  for (const LoadMode mode : {LoadMode::read, LoadMode::direct}) {
    LoadOptions options;
    options.mode = mode;
    const std::string error = message_of([&] { (void)load(plan(model), {}, options); });
    EXPECT_NE(error.find("ext.onnx.data"), std::string::npos) << error;
    EXPECT_NE(error.find("shrink"), std::string::npos) << error;
  }
}

TEST_F(Load, DirectLeavesThePageCacheAlone) {
  // Tensors of 2 MiB, so the metadata the index reads through the map is a small share.
  const fs::path path = synth_model(false, 512);
  // Evict the file, open it, load it direct, and count its pages in the page cache.
  test::evict(path);
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const Model model = Model::open(path);
  LoadOptions options;
  options.mode = LoadMode::direct;
  const LoadStats stats = load(plan(model), {}, options);
  const auto size = static_cast<std::size_t>(fs::file_size(path));
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(map, MAP_FAILED);
  const long page = ::sysconf(_SC_PAGESIZE);
  std::vector<unsigned char> resident((size + page - 1) / page);
  ASSERT_EQ(::mincore(map, size, resident.data()), 0);
  const auto in_cache =
      std::count_if(resident.begin(), resident.end(), [](unsigned char r) { return r & 1; });
  ::munmap(map, size);
  ::close(fd);
  if (!stats.direct) GTEST_SKIP() << "this file system refuses O_DIRECT";
  // The metadata the index read through the map stays; the payloads do not come in.
  EXPECT_LT(static_cast<double>(in_cache) / static_cast<double>(resident.size()), 0.05)
      << in_cache << " of " << resident.size();
}

}  // namespace
}  // namespace onnxmap
