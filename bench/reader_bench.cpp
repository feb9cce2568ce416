// Reader benchmarks: onnxmap's open, peek, lookup, fetch and walk, against libprotobuf's
// ParseFromArray of the same mapped bytes (Debian's libonnx_proto, linked by the bench only).
// The same binary runs fetch_bench.cpp (first touch, cold, slice_rows), read_all_bench.cpp
// (every tensor once) and physical_limit_bench.cpp (what each is divided by); main is here.

#include <benchmark/benchmark.h>
#include <onnx/onnx_pb.h>
#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <random>
#include <vector>

#include "harness.hpp"
#include "io/mapped_file.hpp"
#include "onnxmap/onnxmap.hpp"

namespace onnxmap::bench {

namespace {

// The process's CPU time, every thread's: user and kernel ms, so that the open's counters can say
// how much thread time an open took beside its wall time, and how much of that was the kernel's
// (page faults: zeroing the tables' fresh memory, mapping the file's pages).
struct ProcessCpu {
  double user_ms = 0;
  double kernel_ms = 0;

  static ProcessCpu now() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return {ms_of(usage.ru_utime), ms_of(usage.ru_stime)};
  }
  static double ms_of(const timeval& t) {
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) / 1e3;
  }
};

// Opens `path` each iteration, timing the open alone (without the unmapping), and reports per
// open the CPU time of every thread (cpu_ms) and the kernel's part of it (kernel_ms). getrusage
// counts in scheduler ticks on some kernels, so these are means over many opens.
void time_opens(benchmark::State& state, const std::filesystem::path& path,
                const OpenOptions& options) {
  ProcessCpu spent;
  for (auto _ : state) {
    const ProcessCpu before = ProcessCpu::now();
    const auto start = Clock::now();
    std::optional<Model> model(Model::open(path, options));
    state.SetIterationTime(seconds_since(start));
    const ProcessCpu after = ProcessCpu::now();
    spent.user_ms += after.user_ms - before.user_ms;
    spent.kernel_ms += after.kernel_ms - before.kernel_ms;
    benchmark::DoNotOptimize(model->tensor_count());
  }
  state.counters["cpu_ms"] =
      benchmark::Counter(spent.user_ms + spent.kernel_ms, benchmark::Counter::kAvgIterations);
  state.counters["kernel_ms"] =
      benchmark::Counter(spent.kernel_ms, benchmark::Counter::kAvgIterations);
}

// Map and index, without the unmapping: closing a 282 GB mapping takes time of its own, which
// onnxmap_close reports. The byte counts ride along as counters: the report's floor for open is
// the metadata bytes (file minus inline payload) copied at the memcpy bandwidth of the same run.
void open(benchmark::State& state, const std::filesystem::path& path, const BenchModel&) {
  time_opens(state, path, OpenOptions{});
  const ModelBytes counts = model_bytes(Model::open(path));
  state.counters["file_bytes"] = static_cast<double>(counts.file);
  state.counters["inline_payload_bytes"] = static_cast<double>(counts.inline_payload);
}

// Dropping the last reference: the index freed, the file unmapped.
void close(benchmark::State& state, const std::filesystem::path& path, const BenchModel&) {
  for (auto _ : state) {
    std::optional<Model> model(Model::open(path));
    benchmark::DoNotOptimize(model->tensor_count());
    const auto start = Clock::now();
    model.reset();
    state.SetIterationTime(seconds_since(start));
  }
}

void peek_model(benchmark::State& state, const std::filesystem::path& path, const BenchModel&) {
  for (auto _ : state) {
    const auto start = Clock::now();
    std::optional<ModelSummary> summary(peek(path));
    state.SetIterationTime(seconds_since(start));
    benchmark::DoNotOptimize(summary->ir_version());
  }
}

void lookup(benchmark::State& state, const std::filesystem::path& path, const BenchModel&) {
  const Model model = Model::open(path);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < model.tensor_count(); ++i) {
    names.emplace_back(model.tensor_at(i).lookup_name());
  }
  std::mt19937 rng(1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(model.find_tensor(names[rng() % names.size()]));
  }
  state.counters["ns_per_lookup"] =
      benchmark::Counter(static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Reads every byte of one tensor whose pages are already mapped into the process (after the
// first iteration): the same loop limit_resident_read runs on an anonymous buffer. The first
// touch of unmapped pages is onnxmap_fetch_first_touch.
void fetch_warm(benchmark::State& state, const std::filesystem::path& path, const BenchModel& m) {
  const Model model = Model::open(path);
  const Tensor t = model.tensor(m.tensor);
  for (auto _ : state) {
    benchmark::DoNotOptimize(checksum(t.bytes()));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * t.byte_size()));
}

void walk_nodes(benchmark::State& state, const std::filesystem::path& path, const BenchModel&) {
  const Model model = Model::open(path);
  for (auto _ : state) {
    std::size_t total = 0;
    for (const Node node : model.graph()->nodes()) {
      total += node.op_type().size() + node.inputs().size();
    }
    benchmark::DoNotOptimize(total);
  }
  state.counters["nodes"] = static_cast<double>(model.graph()->nodes().size());
}

void protobuf_parse(benchmark::State& state, const std::filesystem::path& path, const BenchModel&) {
  const MappedFile file = MappedFile::open(path);
  if (file.size() > static_cast<std::uint64_t>(INT32_MAX)) {
    state.SkipWithError("cannot open: libprotobuf stops at 2 GB");
    return;
  }
  // Timed like onnxmap_open: the parse, without freeing the message afterwards.
  for (auto _ : state) {
    std::optional<onnx::ModelProto> proto(std::in_place);
    const auto start = Clock::now();
    const bool ok = proto->ParseFromArray(file.bytes().data(), static_cast<int>(file.size()));
    state.SetIterationTime(seconds_since(start));
    if (!ok) state.SkipWithError("ParseFromArray failed");
    benchmark::DoNotOptimize(proto->graph().initializer_size());
  }
}

const bool registered = [] {
  per_model("onnxmap_open", open, Timing::manual);
  per_model("onnxmap_close", close, Timing::manual);
  per_model("onnxmap_peek", peek_model, Timing::manual);
  per_model("onnxmap_lookup", lookup);
  per_model("onnxmap_fetch_warm", fetch_warm);
  per_model("onnxmap_walk_nodes", walk_nodes);
  per_model("protobuf_parse", protobuf_parse, Timing::manual);
  return true;
}();

}  // namespace

}  // namespace onnxmap::bench

BENCHMARK_MAIN();
