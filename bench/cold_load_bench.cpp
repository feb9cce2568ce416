// Cold loads against the disk's own limit, all in one run: the model's files are evicted from
// the page cache (posix_fadvise DONTNEED) before each case, cases alternate round by round, and
// the limit is the faster of a plain loop of 16 MiB preads and fio (O_DIRECT, 16 MiB, queue
// depth 8) over the same files, cold. Beside each case's rate: the CPU time it took per GB
// (every thread, user + system) and its peak resident memory. Prints one markdown table of
// medians, with every run's rate beside it (the disk is noisy).
//
//   cold_load_bench MODEL [--runs N] [--only TEXT]
// MODEL holds real bytes (holes do not touch the disk); --only keeps the cases naming TEXT.
// Tensors are touched once per 4 KiB page (as `onnxmap load` does): enough to fault a mapped
// page in, and no per-byte work of the bench's own in the CPU figures.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
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
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "onnxmap/onnxmap.hpp"
#include "raw_reads.hpp"

namespace {

namespace fs = std::filesystem;
using onnxmap::LoadMode;

struct Figure {
  double seconds = 0;
  std::uint64_t bytes = 0;      // bytes the case delivers
  std::uint64_t from_disk = 0;  // /proc/self/io read_bytes during the case
  double cpu_seconds = 0;       // user + system, every thread
  double peak_rss_mib = 0;      // the process's peak resident memory during the case, less
                                // what was resident when it began (the bench's own)
  double resident = -1;         // share of the files' pages in the page cache afterwards
};

double cpu_seconds() {
  rusage usage{};
  (void)getrusage(RUSAGE_SELF, &usage);
  const auto of = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return of(usage.ru_utime) + of(usage.ru_stime);
}

// Peak resident memory since the last reset_peak_rss() (VmHWM), or the current (VmRSS), from
// /proc/self/status.
void reset_peak_rss() {
  std::ofstream("/proc/self/clear_refs") << "5";
}
double rss_mib(const std::string& which) {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == which + ":") {
      double kib = 0;
      status >> kib;
      return kib / 1024;
    }
    status.ignore(1 << 20, '\n');
  }
  return 0;
}

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

// One byte of every 4 KiB page, so a view's pages are really fetched.
std::uint64_t touch_pages(std::span<const std::byte> bytes) {
  std::uint64_t s = 0;
  for (std::size_t at = 0; at < bytes.size(); at += 4096)
    s += static_cast<std::uint64_t>(bytes[at]);
  return s;
}

volatile std::uint64_t g_sink = 0;

// What a case delivered; a tool that times itself (fio) says in how long.
struct Delivered {
  Delivered(std::uint64_t delivered) : bytes(delivered) {}  // NOLINT: cases return byte counts
  Delivered(std::uint64_t delivered, double took) : bytes(delivered), seconds(took) {}
  std::uint64_t bytes;
  std::optional<double> seconds;
};

template <class F>
Figure timed(const std::vector<fs::path>& files, F&& body) {
  evict(files);
  reset_peak_rss();
  const double rss0 = rss_mib("VmRSS");
  const std::uint64_t disk0 = disk_read_bytes();
  const double cpu0 = cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  Figure f;
  const Delivered got = body();
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  f.bytes = got.bytes;
  if (got.seconds) f.seconds = *got.seconds;
  f.cpu_seconds = cpu_seconds() - cpu0;
  f.from_disk = disk_read_bytes() - disk0;
  f.peak_rss_mib = rss_mib("VmHWM") - rss0;
  return f;
}

std::uint64_t load_model(const fs::path& path, LoadMode mode, bool shard,
                         std::uint64_t max_in_flight = onnxmap::LoadOptions{}.max_in_flight_bytes) {
  const onnxmap::Model model = onnxmap::Model::open(path);
  onnxmap::LoadOptions options;
  options.mode = mode;
  options.max_in_flight_bytes = max_in_flight;
  const auto plan =
      shard ? onnxmap::plan(model, onnxmap::PlanOptions::shard(3, 8)) : onnxmap::plan(model);
  std::uint64_t sum = 0;
  const auto stats = onnxmap::load(
      plan, [&](const onnxmap::LoadedTensor& t) { sum += touch_pages(t.bytes); }, options);
  g_sink = g_sink + sum;
  return stats.bytes;
}

// Through the map as a new user would: each tensor's bytes() (or its shard's slice_rows), read.
std::uint64_t touch_model(const fs::path& path, bool shard, bool prefetch_first) {
  const onnxmap::Model model = onnxmap::Model::open(path);
  const auto plan =
      shard ? onnxmap::plan(model, onnxmap::PlanOptions::shard(3, 8)) : onnxmap::plan(model);
  if (prefetch_first) onnxmap::prefetch(plan);
  std::uint64_t bytes = 0;
  std::uint64_t sum = 0;
  for (const auto& item : plan) {
    if (item.tensor.storage() == onnxmap::TensorStorage::typed) continue;
    const auto view = item.row_end == onnxmap::kAllRows
                          ? item.tensor.bytes()
                          : item.tensor.slice_rows(item.row_begin, item.row_end);
    sum += touch_pages(view);
    bytes += view.size();
  }
  g_sink = g_sink + sum;
  return bytes;
}

std::uint64_t one_tensor(const fs::path& path, const std::string& name, bool prefetch_first) {
  const onnxmap::Model model = onnxmap::Model::open(path);
  const onnxmap::Tensor t = model.tensor(name);
  if (prefetch_first) onnxmap::prefetch(t);
  const auto bytes = t.bytes();
  g_sink = g_sink + touch_pages(bytes);
  return bytes.size();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// A plain reader of the files, no loader: the device's limit is the fastest of them, the
// buffered limit (reads through the page cache, as the read and map modes) the fastest
// buffered one.
enum class Anchor : std::uint8_t { none, buffered, device };

struct Case {
  std::string name;
  std::function<Delivered()> run;
  Anchor anchor = Anchor::none;
  bool measure_resident = false;
  std::vector<Figure> figures;
};

// The plain readers first (the anchors), then the loader's ways.
std::vector<Case> make_cases(const fs::path& path, const std::vector<fs::path>& files,
                             const std::string& largest) {
  std::vector<Case> cases;
  const auto anchor = [&](std::string name, std::function<Delivered()> run, Anchor kind) {
    cases.push_back({std::move(name), std::move(run), kind, false, {}});
  };
  const auto add = [&](std::string name, std::function<Delivered()> run, bool resident = false) {
    cases.push_back({std::move(name), std::move(run), Anchor::none, resident, {}});
  };
  using namespace onnxmap::bench;
  anchor(
      "16 MiB preads, 1 thread", [&] { return pread_loop(files, 1); }, Anchor::buffered);
  anchor(
      "16 MiB preads, 4 threads", [&] { return pread_loop(files, 4); }, Anchor::buffered);
  anchor(
      "fio: O_DIRECT, 16 MiB, queue depth 8",
      [&]() -> Delivered {
        const auto f = fio_read(files);
        return f ? Delivered(f->bytes, f->seconds) : Delivered(0, 1);
      },
      Anchor::device);
  anchor(
      "O_DIRECT 16 MiB preads, 4 threads, 4 KiB pages",
      [&] { return direct_pool(files, 4, Pages::small); }, Anchor::device);
  anchor(
      "O_DIRECT 16 MiB preads, 4 threads, huge pages",
      [&] { return direct_pool(files, 4, Pages::huge); }, Anchor::device);
  for (const unsigned depth : {4U, 8U}) {
    anchor(
        "O_DIRECT 16 MiB, io_uring depth " + std::to_string(depth),
        [&, depth] { return Delivered(direct_uring(files, depth).value_or(0)); }, Anchor::device);
  }
  add("all tensors, load read", [&] { return load_model(path, LoadMode::read, false); });
  add(
      "all tensors, load direct", [&] { return load_model(path, LoadMode::direct, false); }, true);
  add("all tensors, load direct, 256 MiB in flight",
      [&] { return load_model(path, LoadMode::direct, false, std::uint64_t{256} << 20U); });
  add("all tensors, load map", [&] { return load_model(path, LoadMode::map, false); });
  add("all tensors, bytes() + read", [&] { return touch_model(path, false, false); });
  add("one tensor, bytes() + read", [&] { return one_tensor(path, largest, false); });
  add("one tensor, prefetch() + bytes() + read", [&] { return one_tensor(path, largest, true); });
  add("shard 3/8, load read", [&] { return load_model(path, LoadMode::read, true); });
  add("shard 3/8, load direct", [&] { return load_model(path, LoadMode::direct, true); });
  add("shard 3/8, slice_rows + read", [&] { return touch_model(path, true, false); });
  add("shard 3/8, prefetch(plan) + slice_rows + read",
      [&] { return touch_model(path, true, true); });
  return cases;
}

double median_rate(const Case& c) {
  std::vector<double> rates;
  for (const auto& f : c.figures) rates.push_back(static_cast<double>(f.bytes) / f.seconds);
  return median(rates);
}

struct Limits {
  double device = 0;
  double buffered = 0;
};

void print_row(const Case& c, const Limits& limits) {
  std::vector<double> seconds;
  std::vector<double> cpu_per_gb;
  std::vector<double> peaks;
  std::string all;
  for (const auto& f : c.figures) {
    seconds.push_back(f.seconds);
    cpu_per_gb.push_back(f.cpu_seconds /
                         (static_cast<double>(std::max<std::uint64_t>(f.bytes, 1)) / 1e9));
    peaks.push_back(f.peak_rss_mib);
    char one[32];
    std::snprintf(one, sizeof one, "%s%.2f", all.empty() ? "" : " ",
                  static_cast<double>(f.bytes) / f.seconds / 1e9);
    all += one;
  }
  const Figure& last = c.figures.back();
  char resident[32] = "-";
  if (last.resident >= 0) std::snprintf(resident, sizeof resident, "%.2f%%", last.resident * 100);
  const double rate = median_rate(c);
  std::printf("| %s | %.2f | %.2f | %.2f | %.2fx | %.2fx | %s | %.3f | %.0f | %.2fx | %s |\n",
              c.name.c_str(), static_cast<double>(last.bytes) / (1U << 30U), median(seconds),
              rate / 1e9, rate / limits.device, rate / limits.buffered, all.c_str(),
              median(cpu_per_gb), median(peaks),
              static_cast<double>(last.from_disk) /
                  static_cast<double>(std::max<std::uint64_t>(last.bytes, 1)),
              resident);
}

// The largest tensor, for the single cold fetch.
std::string largest_tensor(const fs::path& path) {
  const onnxmap::Model model = onnxmap::Model::open(path);
  std::string largest;
  std::uint64_t size = 0;
  for (std::size_t i = 0; i < model.tensor_count(); ++i) {
    const auto t = model.tensor_at(i);
    if (t.byte_size() > size && t.storage() != onnxmap::TensorStorage::typed) {
      size = t.byte_size();
      largest = std::string(t.lookup_name());
    }
  }
  return largest;
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
  const std::string largest = largest_tensor(path);
  std::vector<Case> cases = make_cases(path, files, largest);
  // --only TEXT keeps the cases whose name holds TEXT, and the anchors.
  std::erase_if(cases, [&](const Case& c) {
    return !only.empty() && c.anchor == Anchor::none && c.name.find(only) == std::string::npos;
  });
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
  Limits limits;
  for (const Case& c : cases) {
    if (c.anchor != Anchor::none) limits.device = std::max(limits.device, median_rate(c));
    if (c.anchor == Anchor::buffered) limits.buffered = std::max(limits.buffered, median_rate(c));
  }
  std::printf(
      "model %s: %.2f GiB in %zu file(s); largest tensor %s; %d runs; device limit "
      "%.2f GB/s (the fastest plain reader), buffered limit %.2f GB/s (the fastest "
      "through the page cache)\n\n",
      path.filename().c_str(), static_cast<double>(file_bytes) / (1U << 30U), files.size(),
      largest.c_str(), runs, limits.device / 1e9, limits.buffered / 1e9);
  std::printf(
      "| case | GiB | median s | median GB/s | / device limit | / buffered limit | runs GB/s | "
      "CPU s/GB | peak RSS growth MiB | read from disk / delivered | resident after |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Case& c : cases) print_row(c, limits);
  return 0;
}
