// The physical limits onnxmap's figures are divided by, measured in the same run on the same
// machine: memcpy and read bandwidth of 1 GiB buffers already faulted in (the floor for open is
// the metadata bytes at memcpy speed; for reading every tensor, the tensor bytes at those speeds),
// the page-fault-free read of exactly as many bytes as each fetch reads, and the kernel's part of
// an open: mapping the file and faulting in the pages that hold its metadata.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "io/mapped_file.hpp"

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
  const Model model = Model::open(path);
  resident_read(state, model.tensor(m.tensor).byte_size());
}

// As many bytes as onnxmap_slice_rows_first_touch reads.
void resident_read_slice(benchmark::State& state, const std::filesystem::path& path,
                         const BenchModel& m) {
  const Model model = Model::open(path);
  const Tensor tensor = model.tensor(m.tensor);
  const RowRange rows = tensor_parallel_shard(tensor);
  resident_read(state, tensor.slice_rows(rows.begin, rows.end).size());
}

// The first byte of every page an open reads: each page not wholly inside one tensor's raw
// payload in the model file.
std::vector<std::uint64_t> metadata_pages(const std::filesystem::path& path) {
  const Model model = Model::open(path);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> payloads;  // [begin, end), sorted
  for (std::size_t i = 0; i < model.tensor_count(); ++i) {
    const Tensor tensor = model.tensor_at(i);
    if (tensor.storage() != TensorStorage::raw) continue;
    payloads.emplace_back(tensor.file_offset(), tensor.file_offset() + tensor.byte_size());
  }
  std::sort(payloads.begin(), payloads.end());
  payloads.emplace_back(model.file_size(), model.file_size());
  const std::uint64_t page = MappedFile::page_size();
  std::vector<std::uint64_t> pages;
  std::uint64_t metadata_begin = 0;
  for (const auto& [begin, end] : payloads) {
    // Metadata lies in [metadata_begin, begin): its pages, including those it shares at its ends.
    for (std::uint64_t p = metadata_begin / page * page; p < begin; p += page) {
      if (pages.empty() || pages.back() != p) pages.push_back(p);
    }
    metadata_begin = std::max(metadata_begin, end);
  }
  return pages;
}

// Map the model file and read one byte of each page holding metadata: no open of a mapped file
// can take less (the unmapping, like onnxmap_open's, is not timed).
void map_metadata(benchmark::State& state, const std::filesystem::path& path, const BenchModel&) {
  const std::vector<std::uint64_t> pages = metadata_pages(path);
  for (auto _ : state) {
    const auto start = Clock::now();
    std::optional<MappedFile> file(MappedFile::open(path));
    const std::byte* bytes = file->bytes().data();
    unsigned sum = 0;
    for (const std::uint64_t p : pages) sum += static_cast<unsigned>(bytes[p]);
    benchmark::DoNotOptimize(sum);
    state.SetIterationTime(seconds_since(start));
  }
  state.counters["pages"] = static_cast<double>(pages.size());
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
  per_model("limit_map_metadata", map_metadata, Timing::manual);
  return true;
}();

}  // namespace

}  // namespace onnxmap::bench
