// Cold loads against the disk's own limit, all in one run: the model's files are evicted from
// the page cache (posix_fadvise DONTNEED) before each case, cases alternate round by round, and
// the limit is a plain loop of 16 MiB preads over the same files, cold. Prints one markdown
// table of medians, with every run's figure beside it (the disk is noisy).
//
//   cold_load_bench MODEL [--runs N] [--only TEXT]
// MODEL holds real bytes (holes do not touch the disk); --only keeps the cases naming TEXT.

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "onnxmap/onnxmap.hpp"

namespace {

namespace fs = std::filesystem;
using onnxmap::LoadMode;

struct Figure {
  double seconds = 0;
  std::uint64_t bytes = 0;      // bytes the case delivers
  std::uint64_t from_disk = 0;  // /proc/self/io read_bytes during the case
  double resident = -1;         // share of the files' pages in the page cache afterwards
};

std::uint64_t disk_read_bytes() {
  std::ifstream io("/proc/self/io");
  std::string key;
  std::uint64_t value = 0;
  while (io >> key >> value) {
    if (key == "read_bytes:") return value;
  }
  return 0;
}

// The model file and its external data files.
std::vector<fs::path> files_of(const fs::path& model_path) {
  const onnxmap::Model model = onnxmap::Model::open(model_path);
  std::set<fs::path> files{model_path};
  for (std::size_t i = 0; i < model.tensor_count(); ++i) {
    const auto t = model.tensor_at(i);
    if (t.storage() == onnxmap::TensorStorage::external)
      files.insert(model.folder() / t.data_file());
  }
  return {files.begin(), files.end()};
}

void evict(const std::vector<fs::path>& files) {
  for (const auto& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY);
    (void)::fdatasync(fd);
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

double resident_share(const std::vector<fs::path>& files) {
  std::uint64_t pages = 0;
  std::uint64_t in = 0;
  for (const auto& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY);
    const auto size = static_cast<std::size_t>(fs::file_size(f));
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    std::vector<unsigned char> v((size + 4095) / 4096);
    (void)::mincore(map, size, v.data());
    pages += v.size();
    in += static_cast<std::uint64_t>(
        std::count_if(v.begin(), v.end(), [](unsigned char c) { return (c & 1) != 0; }));
    ::munmap(map, size);
    ::close(fd);
  }
  return pages == 0 ? 0 : static_cast<double>(in) / static_cast<double>(pages);
}

// Reads every byte (words summed), so a view's pages are really fetched.
std::uint64_t sum_all(std::span<const std::byte> bytes) {
  std::uint64_t s = 0;
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    s += w;
  }
  for (; i < bytes.size(); ++i) s += static_cast<std::uint64_t>(bytes[i]);
  return s;
}

volatile std::uint64_t g_sink = 0;

template <class F>
Figure timed(const std::vector<fs::path>& files, F&& body) {
  evict(files);
  const std::uint64_t disk0 = disk_read_bytes();
  const auto start = std::chrono::steady_clock::now();
  Figure f;
  f.bytes = body();
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  f.from_disk = disk_read_bytes() - disk0;
  return f;
}

// A plain loop of 16 MiB preads over the files, on `threads` threads taking chunks in turn.
std::uint64_t pread_limit(const std::vector<fs::path>& files, unsigned threads) {
  constexpr std::size_t kChunk = std::size_t{16} << 20U;
  std::atomic<std::uint64_t> total{0};
  for (const auto& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY);
    const auto size = static_cast<std::uint64_t>(fs::file_size(f));
    std::atomic<std::uint64_t> next{0};
    const auto reader = [&] {
      std::vector<std::byte> buffer(kChunk);
      for (std::uint64_t at = next.fetch_add(kChunk); at < size; at = next.fetch_add(kChunk)) {
        const ssize_t got = ::pread(fd, buffer.data(), kChunk, static_cast<off_t>(at));
        if (got > 0) total += static_cast<std::uint64_t>(got);
      }
    };
    std::vector<std::jthread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(reader);
    reader();
    pool.clear();
    ::close(fd);
  }
  return total;
}

std::uint64_t load_model(const fs::path& path, LoadMode mode, bool shard) {
  const onnxmap::Model model = onnxmap::Model::open(path);
  onnxmap::LoadOptions options;
  options.mode = mode;
  const auto plan = shard ? onnxmap::plan_shard(model, 3, 8) : onnxmap::plan_all(model);
  std::uint64_t sum = 0;
  const auto stats = onnxmap::load(
      plan, [&](const onnxmap::LoadedTensor& t) { sum += sum_all(t.bytes); }, options);
  g_sink = g_sink + sum;
  return stats.bytes;
}

// Through the map as a new user would: each tensor's bytes() (or its shard's slice_rows), read.
std::uint64_t touch_model(const fs::path& path, bool shard, bool prefetch_first) {
  const onnxmap::Model model = onnxmap::Model::open(path);
  const auto plan = shard ? onnxmap::plan_shard(model, 3, 8) : onnxmap::plan_all(model);
  if (prefetch_first) onnxmap::prefetch(plan);
  std::uint64_t bytes = 0;
  std::uint64_t sum = 0;
  for (const auto& item : plan) {
    if (item.tensor.storage() == onnxmap::TensorStorage::typed) continue;
    const auto view = item.row_end == onnxmap::kAllRows
                          ? item.tensor.bytes()
                          : item.tensor.slice_rows(item.row_begin, item.row_end);
    sum += sum_all(view);
    bytes += view.size();
  }
  g_sink = g_sink + sum;
  return bytes;
}

std::uint64_t one_tensor(const fs::path& path, const std::string& name, bool prefetch_first) {
  const onnxmap::Model model = onnxmap::Model::open(path);
  const onnxmap::Tensor t = model.tensor(name);
  if (prefetch_first) t.prefetch();
  const auto bytes = t.bytes();
  g_sink = g_sink + sum_all(bytes);
  return bytes.size();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: cold_load_bench MODEL [--runs N] [--only TEXT]\n";
    return 2;
  }
  const fs::path path = argv[1];
  int runs = 3;
  std::string only;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--runs") runs = std::stoi(argv[i + 1]);
    if (std::string(argv[i]) == "--only") only = argv[i + 1];
  }
  const auto files = files_of(path);
  // The largest tensor, for the single cold fetch.
  std::string largest;
  {
    const onnxmap::Model model = onnxmap::Model::open(path);
    std::uint64_t size = 0;
    for (std::size_t i = 0; i < model.tensor_count(); ++i) {
      const auto t = model.tensor_at(i);
      if (t.byte_size() > size && t.storage() != onnxmap::TensorStorage::typed) {
        size = t.byte_size();
        largest = std::string(t.lookup_name());
      }
    }
  }
  struct Case {
    std::string name;
    std::function<std::uint64_t()> run;
    bool measure_resident = false;
    std::vector<Figure> figures;
  };
  std::vector<Case> cases;
  const auto add = [&](std::string name, std::function<std::uint64_t()> run,
                       bool resident = false) {
    cases.push_back({std::move(name), std::move(run), resident, {}});
  };
  add("limit: 16 MiB preads, 1 thread", [&] { return pread_limit(files, 1); });
  add("16 MiB preads, 4 threads", [&] { return pread_limit(files, 4); });
  add("all tensors, load read", [&] { return load_model(path, LoadMode::read, false); });
  add(
      "all tensors, load direct", [&] { return load_model(path, LoadMode::direct, false); }, true);
  add("all tensors, load map", [&] { return load_model(path, LoadMode::map, false); });
  add("all tensors, bytes() + read", [&] { return touch_model(path, false, false); });
  add("one tensor, bytes() + read", [&] { return one_tensor(path, largest, false); });
  add("one tensor, prefetch() + bytes() + read", [&] { return one_tensor(path, largest, true); });
  add("shard 3/8, load read", [&] { return load_model(path, LoadMode::read, true); });
  add("shard 3/8, load direct", [&] { return load_model(path, LoadMode::direct, true); });
  add("shard 3/8, slice_rows + read", [&] { return touch_model(path, true, false); });
  add("shard 3/8, prefetch(plan) + slice_rows + read",
      [&] { return touch_model(path, true, true); });
  // --only TEXT keeps the cases whose name holds TEXT (and the limit, the first case).
  if (!only.empty()) {
    std::vector<Case> kept;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (i == 0 || cases[i].name.find(only) != std::string::npos) {
        kept.push_back(std::move(cases[i]));
      }
    }
    cases = std::move(kept);
  }
  for (int r = 0; r < runs; ++r) {
    // Rotate the order each round, so no case always runs after the same neighbour.
    for (std::size_t k = 0; k < cases.size(); ++k) {
      Case& c = cases[(k + static_cast<std::size_t>(r) * 3) % cases.size()];
      Figure f = timed(files, c.run);
      if (c.measure_resident) f.resident = resident_share(files);
      c.figures.push_back(f);
      std::cerr << c.name << ": " << f.seconds << " s\n";
    }
  }
  std::uint64_t file_bytes = 0;
  for (const auto& f : files) file_bytes += fs::file_size(f);
  std::vector<double> limit_rates;
  for (const auto& f : cases[0].figures)
    limit_rates.push_back(static_cast<double>(f.bytes) / f.seconds);
  const double limit = median(limit_rates);
  std::printf("model %s: %.2f GiB in %zu file(s); largest tensor %s; %d runs\n\n",
              path.filename().c_str(), static_cast<double>(file_bytes) / (1U << 30U), files.size(),
              largest.c_str(), runs);
  std::printf(
      "| case | GiB | median s | median GB/s | / limit | runs GB/s | read from disk / delivered | "
      "resident after |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (const Case& c : cases) {
    std::vector<double> rates;
    std::vector<double> seconds;
    std::string all;
    for (const auto& f : c.figures) {
      rates.push_back(static_cast<double>(f.bytes) / f.seconds);
      seconds.push_back(f.seconds);
      char one[32];
      std::snprintf(one, sizeof one, "%s%.2f", all.empty() ? "" : " ", rates.back() / 1e9);
      all += one;
    }
    const Figure& last = c.figures.back();
    char resident[32] = "-";
    if (last.resident >= 0) std::snprintf(resident, sizeof resident, "%.2f%%", last.resident * 100);
    std::printf("| %s | %.2f | %.2f | %.2f | %.2fx | %s | %.2fx | %s |\n", c.name.c_str(),
                static_cast<double>(last.bytes) / (1U << 30U), median(seconds), median(rates) / 1e9,
                median(rates) / limit, all.c_str(),
                static_cast<double>(last.from_disk) /
                    static_cast<double>(std::max<std::uint64_t>(last.bytes, 1)),
                resident);
  }
  return 0;
}
