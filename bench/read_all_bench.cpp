// Reading every tensor's bytes once, from the path, as a runtime loading all its weights does:
// each iteration opens the model afresh (so no page is mapped yet; the page cache is warm) and
// closes it untimed. Against python's onnx.load materialising the same tensors
// (bench/python_load.py --materialise) and the same bytes at memcpy or read bandwidth.
//
// Bounded, to keep tools/bench.sh short: the leading tensors whose bytes add up to at most
// kReadBudgetBytes (llm-2g and graph-heavy whole, llm-7b-ext's first 2 GiB of 12.6; python
// materialising all of it takes a minute and 13 GiB here). Not run on llm-320g: its first tensor
// alone is 3.9 GiB of holes, and python cannot open the file.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "harness.hpp"

namespace onnxmap::bench {

namespace {

const std::vector<std::string> kReadAllModels{"llm-7b-ext", "llm-2g", "graph-heavy"};

// The same budget as python_load.py's READ_BUDGET_BYTES.
constexpr std::uint64_t kReadBudgetBytes = std::uint64_t{2} << 30U;

// Copies go through one reused staging buffer, a batch of tensors at a time, as a runtime
// streaming weights to a device does.
constexpr std::uint64_t kStagingBytes = std::uint64_t{1} << 30U;

// The tensors read: in model order, holding bytes, up to the first that would exceed the budget.
std::vector<Tensor> tensors_to_read(const Model& model) {
  std::vector<Tensor> tensors;
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < model.tensor_count(); ++i) {
    const Tensor tensor = model.tensor_at(i);
    const TensorStorage storage = tensor.storage();
    if (storage == TensorStorage::none || storage == TensorStorage::invalid) continue;
    if (total + tensor.byte_size() > kReadBudgetBytes) break;
    total += tensor.byte_size();
    tensors.push_back(tensor);
  }
  return tensors;
}

std::uint64_t total_bytes(std::span<const Tensor> tensors) {
  std::uint64_t total = 0;
  for (const Tensor& tensor : tensors) total += tensor.byte_size();
  return total;
}

// Zero-copy, one thread: every tensor's bytes read where they are mapped.
std::uint64_t sum_every_tensor(const Model& model, const LoadOptions&,
                               std::span<std::byte> /*staging*/) {
  std::uint64_t sum = 0;
  for (const Tensor& tensor : tensors_to_read(model)) sum += checksum(tensor.data().bytes());
  return sum;
}

std::vector<LoadItem> plan_of(std::span<const Tensor> tensors) {
  std::vector<LoadItem> plan;
  plan.reserve(tensors.size());
  for (const Tensor& tensor : tensors) plan.push_back({tensor});
  return plan;
}

// The loader's pool reads the pages into the page cache (prefetch: large reads in file order),
// then one thread reads the bytes, now cached, through the map.
std::uint64_t prefetch_then_sum(const Model& model, const LoadOptions& options,
                                std::span<std::byte> /*staging*/) {
  const std::vector<Tensor> tensors = tensors_to_read(model);
  prefetch(plan_of(tensors), options);
  std::uint64_t sum = 0;
  for (const Tensor& tensor : tensors) sum += checksum(tensor.data().bytes());
  return sum;
}

// load_into, batch by batch through the staging buffer (a tensor larger than it gets a batch of
// its own and a buffer of its own). Returns the bytes copied.
std::uint64_t copy_every_tensor(const Model& model, const LoadOptions& options,
                                std::span<std::byte> staging) {
  const std::vector<Tensor> tensors = tensors_to_read(model);
  std::vector<std::byte> oversized;
  std::uint64_t copied = 0;
  for (std::size_t first = 0; first < tensors.size();) {
    std::vector<std::span<std::byte>> buffers;
    std::uint64_t used = 0;
    std::size_t last = first;
    for (; last < tensors.size(); ++last) {
      const std::uint64_t size = tensors[last].byte_size();
      if (used + size > staging.size()) break;
      buffers.push_back(staging.subspan(used, size));
      used += size;
    }
    if (last == first) {
      oversized.resize(tensors[first].byte_size());
      buffers.emplace_back(oversized);
      used = oversized.size();
      ++last;
    }
    const auto batch = plan_of(std::span(tensors).subspan(first, last - first));
    (void)load_into(batch, buffers, {}, options);
    copied += used;
    first = last;
  }
  return copied;
}

using ReadAll = std::uint64_t (*)(const Model&, const LoadOptions&, std::span<std::byte>);

// Times open + `read_all`; the close after it is not timed (onnxmap_close measures it).
void read_all(benchmark::State& state, const std::filesystem::path& path, ReadAll read,
              unsigned threads, bool needs_staging) {
  LoadOptions options;
  options.threads = threads;
  std::uint64_t tensor_count = 0;
  std::uint64_t read_per_iteration = 0;
  {
    const Model model = Model::open(path);
    const std::vector<Tensor> tensors = tensors_to_read(model);
    read_per_iteration = total_bytes(tensors);
    tensor_count = model.tensor_count();
    state.counters["tensors_read"] = static_cast<double>(tensors.size());
  }
  std::vector<std::byte> staging;
  // Filled once, so the timed copies never fault on fresh anonymous pages.
  if (needs_staging) staging.assign(std::min(kStagingBytes, read_per_iteration), std::byte{1});
  for (auto _ : state) {
    double seconds = 0;
    {
      const auto start = Clock::now();
      const Model model = Model::open(path);
      benchmark::DoNotOptimize(read(model, options, staging));
      seconds = seconds_since(start);
    }  // closed here, untimed
    state.SetIterationTime(seconds);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * read_per_iteration));
  state.counters["bytes_read"] = static_cast<double>(read_per_iteration);
  state.counters["tensors"] = static_cast<double>(tensor_count);
  state.counters["threads"] = threads;
}

void register_read_all(const std::string& name, ReadAll read, unsigned threads,
                       bool needs_staging) {
  per_model(
      name,
      [=](benchmark::State& state, const std::filesystem::path& path, const BenchModel&) {
        read_all(state, path, read, threads, needs_staging);
      },
      Timing::manual, kReadAllModels);
}

const bool registered = [] {
  const unsigned pool = LoadOptions{}.threads;
  register_read_all("onnxmap_read_all_sum_1thread", sum_every_tensor, 1, false);
  register_read_all("onnxmap_read_all_prefetch_pool", prefetch_then_sum, pool, false);
  register_read_all("onnxmap_read_all_copy_1thread", copy_every_tensor, 1, true);
  register_read_all("onnxmap_read_all_copy_pool", copy_every_tensor, pool, true);
  return true;
}();

}  // namespace

}  // namespace onnxmap::bench
