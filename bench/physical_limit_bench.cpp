// The physical limits onnxmap's figures are divided by, measured in the same run on the same
// machine: memcpy and read bandwidth of 1 GiB buffers already faulted in (the floor for open is
// the metadata bytes at memcpy speed; for reading every tensor, the tensor bytes at those speeds),
// and the page-fault-free read of exactly as many bytes as each fetch reads.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "harness.hpp"

namespace onnxmap::bench {

namespace {

// Four times this machine's L3 (260 MiB): with 256 MiB buffers the source stayed in L3 between
// iterations (glibc's memcpy streams large stores past the cache), and memcpy looked faster than
// reading memory.
constexpr std::size_t kBandwidthBufferBytes = std::size_t{1} << 30U;

// A buffer whose pages are all faulted in and hold non-zero bytes (the untouched pages of a fresh
// allocation all map one shared zero page, which would make reads look faster than memory).
std::vector<std::byte> resident_buffer(std::size_t size) {
  return std::vector<std::byte>(size, std::byte{0x5a});
}

void memcpy_bandwidth(benchmark::State& state) {
  const std::vector<std::byte> source = resident_buffer(kBandwidthBufferBytes);
  std::vector<std::byte> target = resident_buffer(kBandwidthBufferBytes);
  for (auto _ : state) {
    std::memcpy(target.data(), source.data(), kBandwidthBufferBytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kBandwidthBufferBytes));
}

void read_bandwidth(benchmark::State& state) {
  const std::vector<std::byte> source = resident_buffer(kBandwidthBufferBytes);
  for (auto _ : state) benchmark::DoNotOptimize(checksum(source));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kBandwidthBufferBytes));
}

// The checksum of a resident buffer of `size` bytes: what a fetch of that many bytes would cost
// if the kernel had nothing to do.
void resident_read(benchmark::State& state, std::uint64_t size) {
  const std::vector<std::byte> buffer = resident_buffer(size);
  for (auto _ : state) benchmark::DoNotOptimize(checksum(buffer));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
}

// As many bytes as onnxmap_fetch_* read of the model's bench tensor.
void resident_read_tensor(benchmark::State& state, const std::filesystem::path& path,
                          const BenchModel& m) {
  resident_read(state, Model::open(path).tensor(m.tensor).byte_size());
}

// As many bytes as onnxmap_slice_rows_first_touch reads.
void resident_read_slice(benchmark::State& state, const std::filesystem::path& path,
                         const BenchModel& m) {
  const Model model = Model::open(path);
  const Tensor tensor = model.tensor(m.tensor);
  const RowRange rows = tensor_parallel_shard(tensor);
  resident_read(state, tensor.slice_rows(rows.begin, rows.end).size());
}

const bool registered = [] {
  benchmark::RegisterBenchmark("limit_memcpy_bandwidth", memcpy_bandwidth)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("limit_read_bandwidth", read_bandwidth)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  per_model("limit_resident_read_tensor", resident_read_tensor);
  per_model("limit_resident_read_slice", resident_read_slice);
  return true;
}();

}  // namespace

}  // namespace onnxmap::bench
