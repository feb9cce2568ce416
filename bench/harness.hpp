#pragma once
// What the benchmark files share: registration once per bench model on disk, the clock for
// manually timed loops, the byte checksum every "read the bytes" benchmark runs (so a fetch and
// its physical limit execute the same loop), and the byte counts the report derives limits from.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "models.hpp"
#include "onnxmap/onnxmap.hpp"

namespace onnxmap::bench {

// How a benchmark is timed: the whole loop body in wall-clock time, or only the part the body
// reports with SetIterationTime (opening without the closing that follows it, and the reverse).
enum class Timing { real, manual };

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

using ModelBenchmark =
    std::function<void(benchmark::State&, const std::filesystem::path&, const BenchModel&)>;

// One benchmark registered for one model, for settings that depend on the model.
struct Registered {
  const BenchModel* model;
  std::filesystem::path path;
  benchmark::internal::Benchmark* bench;
};

// Registers `fn` as "what/model" once per bench model present on disk and accepted by `wanted`
// (all of them when empty).
inline std::vector<Registered> per_model(const std::string& what, const ModelBenchmark& fn,
                                         Timing timing = Timing::real,
                                         const std::vector<std::string>& wanted = {}) {
  std::vector<Registered> registered;
  for (const BenchModel& model : bench_models()) {
    const auto path = bench_dir() / model.file;
    if (!std::filesystem::exists(path)) continue;
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), model.name) == wanted.end()) {
      continue;
    }
    auto* bench =
        benchmark::RegisterBenchmark((what + "/" + model.name).c_str(),
                                     [=](benchmark::State& state) { fn(state, path, model); });
    bench->Unit(benchmark::kMillisecond);
    if (timing == Timing::manual) {
      bench->UseManualTime();
    } else {
      bench->UseRealTime();
    }
    registered.push_back({&model, path, bench});
  }
  return registered;
}

// Reads every byte of `bytes` and folds them into a sum, eight at a time so the loop runs at
// memory speed (the compiler vectorises it); the result only keeps the reads from being dropped.
inline std::uint64_t checksum(std::span<const std::byte> bytes) {
  std::uint64_t sum = 0;
  std::size_t i = 0;
  for (; i + sizeof(std::uint64_t) <= bytes.size(); i += sizeof(std::uint64_t)) {
    std::uint64_t word = 0;
    std::memcpy(&word, bytes.data() + i, sizeof word);
    sum += word;
  }
  for (; i < bytes.size(); ++i) sum += static_cast<std::uint64_t>(bytes[i]);
  return sum;
}

// The byte counts the floor for open is computed from: the file, and the tensor bytes stored in
// it (raw or typed); the rest of the file is metadata an open must step over.
struct ModelBytes {
  std::uint64_t file = 0;
  std::uint64_t inline_payload = 0;
};

inline ModelBytes model_bytes(const Model& model) {
  ModelBytes counts;
  counts.file = model.file_size();
  for (std::size_t i = 0; i < model.tensor_count(); ++i) {
    const Tensor tensor = model.tensor_at(i);
    const TensorStorage storage = tensor.storage();
    if (storage == TensorStorage::raw || storage == TensorStorage::typed) {
      counts.inline_payload += tensor.byte_size();
    }
  }
  return counts;
}

// Rows [begin, end) of a tensor-parallel shard: the fourth of eight, of a tensor's first axis.
struct RowRange {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

inline RowRange tensor_parallel_shard(const Tensor& tensor) {
  const std::uint64_t rows = tensor.row_count();
  return {rows * 3 / 8, rows * 4 / 8};
}

}  // namespace onnxmap::bench
