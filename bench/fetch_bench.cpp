// Fetching one tensor's bytes the first time: pages in the page cache but not mapped into the
// process (first touch), or not in memory at all (cold), and a tensor-parallel row shard of it.
// Every variant reads every byte it fetches, with the loop limit_resident_read_* times on memory
// that needs no page fault, so the report can divide one by the other.

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "harness.hpp"

namespace onnxmap::bench {

namespace {

// First touch: Tensor::release() (MADV_DONTNEED) unmaps the pages before each timed read; they
// stay in the page cache, so the read costs page faults but no I/O.
void fetch_first_touch(benchmark::State& state, const std::filesystem::path& path,
                       const BenchModel& m) {
  const Model model = Model::open(path);
  const Tensor tensor = model.tensor(m.tensor);
  benchmark::DoNotOptimize(checksum(tensor.bytes()));  // into the page cache, once
  for (auto _ : state) {
    tensor.release();
    const auto start = Clock::now();
    benchmark::DoNotOptimize(checksum(tensor.bytes()));
    state.SetIterationTime(seconds_since(start));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * tensor.byte_size()));
  state.SetLabel(m.tensor);
  state.counters["bytes"] = static_cast<double>(tensor.byte_size());
}

// The file holding a tensor's bytes and where they are in it.
struct FileRange {
  std::filesystem::path file;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

FileRange file_range(const Model& model, const Tensor& tensor) {
  const std::string_view data_file = tensor.data_file();
  return {data_file.empty() ? model.path() : model.folder() / data_file, tensor.file_offset(),
          tensor.byte_size()};
}

// Evicts the pages of `range` from the page cache (they must not be mapped anywhere: release()
// them first). The range is widened to 2 MiB boundaries: the kernel keeps a large folio (up to
// 2 MiB) that straddles either end. Returns false when the file cannot be opened or advised.
bool drop_from_page_cache(const FileRange& range, bool sync_first) {
  const int fd = ::open(range.file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // Dirty pages (a model just written by `onnxmap synth`) are not dropped until written back.
  if (sync_first) (void)::fdatasync(fd);
  constexpr std::uint64_t kLargestFolio = std::uint64_t{2} << 20U;
  const std::uint64_t begin = range.offset / kLargestFolio * kLargestFolio;
  const std::uint64_t end =
      (range.offset + range.length + kLargestFolio - 1) / kLargestFolio * kLargestFolio;
  const bool ok = ::posix_fadvise(fd, static_cast<off_t>(begin), static_cast<off_t>(end - begin),
                                  POSIX_FADV_DONTNEED) == 0;
  ::close(fd);
  return ok;
}

// The share of `bytes`' pages the kernel holds in memory (mincore): near 0 proves a cold read
// really started cold, near 1 that the eviction did not happen.
double resident_share(std::span<const std::byte> bytes) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto first = reinterpret_cast<std::uintptr_t>(bytes.data()) / page * page;
  const auto last = reinterpret_cast<std::uintptr_t>(bytes.data() + bytes.size());
  std::vector<unsigned char> in_core((last - first + page - 1) / page);
  if (in_core.empty() ||
      ::mincore(reinterpret_cast<void*>(first), last - first, in_core.data()) != 0) {
    return -1;
  }
  std::size_t resident = 0;
  for (const unsigned char flag : in_core) resident += flag & 1U;
  return static_cast<double>(resident) / static_cast<double>(in_core.size());
}

// Cold: the tensor's pages evicted from the page cache before each timed read, so the bytes
// come from the disk (or, for a sparse file's holes, are zero-filled by the filesystem). With
// `prefetch`, Tensor::prefetch() (MADV_WILLNEED) starts the read-ahead inside the timed part;
// without it, the random-access mapping faults the tensor in page by page.
void fetch_cold(benchmark::State& state, const std::filesystem::path& path, const BenchModel& m,
                bool prefetch) {
  const Model model = Model::open(path);
  const Tensor tensor = model.tensor(m.tensor);
  const FileRange range = file_range(model, tensor);
  double resident_before = 0;
  bool first = true;
  for (auto _ : state) {
    tensor.release();
    if (!drop_from_page_cache(range, first)) {
      state.SkipWithError(("cannot evict " + range.file.filename().string()).c_str());
      return;
    }
    first = false;
    resident_before += resident_share(tensor.bytes());
    const auto start = Clock::now();
    if (prefetch) onnxmap::prefetch(tensor);
    benchmark::DoNotOptimize(checksum(tensor.bytes()));
    state.SetIterationTime(seconds_since(start));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * tensor.byte_size()));
  state.counters["resident_before"] =
      resident_before / static_cast<double>(std::max<std::int64_t>(1, state.iterations()));
}

// A tensor-parallel rank's shard: slice_rows of an eighth of the rows, every byte read, first
// touch (the whole tensor released before each iteration, so only the shard's pages fault in).
void slice_rows_first_touch(benchmark::State& state, const std::filesystem::path& path,
                            const BenchModel& m) {
  const Model model = Model::open(path);
  const Tensor tensor = model.tensor(m.tensor);
  const RowRange rows = tensor_parallel_shard(tensor);
  benchmark::DoNotOptimize(checksum(tensor.slice_rows(rows.begin, rows.end)));
  std::uint64_t sliced = 0;
  for (auto _ : state) {
    tensor.release();
    const auto start = Clock::now();
    const auto shard = tensor.slice_rows(rows.begin, rows.end);
    benchmark::DoNotOptimize(checksum(shard));
    state.SetIterationTime(seconds_since(start));
    sliced = shard.size();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * sliced));
  state.counters["bytes"] = static_cast<double>(sliced);
  state.counters["rows_begin"] = static_cast<double>(rows.begin);
  state.counters["rows_end"] = static_cast<double>(rows.end);
  state.counters["rows"] = static_cast<double>(tensor.row_count());
}

const bool registered = [] {
  per_model("onnxmap_fetch_first_touch", fetch_first_touch, Timing::manual);
  // Cold reads wait on the disk: few iterations keep the run short. Only where it means
  // something: llm-2g's real bytes, llm-7b-ext's sparse external data file.
  const std::vector<std::string> cold_models{"llm-7b-ext", "llm-2g"};
  for (const bool prefetch : {false, true}) {
    const auto registered = per_model(
        prefetch ? "onnxmap_fetch_cold_prefetch" : "onnxmap_fetch_cold",
        [prefetch](benchmark::State& state, const std::filesystem::path& path,
                   const BenchModel& m) { fetch_cold(state, path, m, prefetch); },
        Timing::manual, cold_models);
    for (const Registered& r : registered) r.bench->Iterations(2)->Repetitions(3);
  }
  per_model("onnxmap_slice_rows_first_touch", slice_rows_first_touch, Timing::manual);
  return true;
}();

}  // namespace

}  // namespace onnxmap::bench
