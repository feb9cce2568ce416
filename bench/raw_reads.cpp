#include "raw_reads.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#ifdef ONNXMAP_BENCH_URING
#include <liburing.h>
#endif

namespace onnxmap::bench {

namespace {

struct FreeAligned {
  void operator()(std::byte* p) const noexcept { std::free(p); }
};
using Aligned = std::unique_ptr<std::byte[], FreeAligned>;

// A 16 MiB buffer; `pages` kHuge asks for transparent huge pages (as the loader's buffers
// do), whose contiguous 2 MiB let one direct read go to the device in a few large requests.
Aligned aligned_chunk(Pages pages) {
  constexpr std::size_t kHugePage = std::size_t{2} << 20U;
  Aligned buffer(static_cast<std::byte*>(
      std::aligned_alloc(pages == Pages::huge ? kHugePage : 4096, kRawChunk)));
  if (pages == Pages::huge) (void)::madvise(buffer.get(), kRawChunk, MADV_HUGEPAGE);
  return buffer;
}

// `threads` threads each reading chunks of `fd` in turn with pread into a buffer of their own.
std::uint64_t chunks_on_threads(int fd, std::uint64_t size, unsigned threads, Pages pages) {
  std::atomic<std::uint64_t> next{0};
  std::atomic<std::uint64_t> total{0};
  const auto reader = [&] {
    const Aligned buffer = aligned_chunk(pages);
    for (std::uint64_t at = next.fetch_add(kRawChunk); at < size; at = next.fetch_add(kRawChunk)) {
      const ssize_t got = ::pread(fd, buffer.get(), kRawChunk, static_cast<off_t>(at));
      if (got > 0) total += static_cast<std::uint64_t>(got);
    }
  };
  std::vector<std::jthread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(reader);
  reader();
  pool.clear();
  return total;
}

std::uint64_t each_file(const Files& files, int flags, unsigned threads, Pages pages) {
  std::uint64_t total = 0;
  for (const auto& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY | flags);
    if (fd < 0) continue;
    total += chunks_on_threads(fd, std::filesystem::file_size(f), threads, pages);
    ::close(fd);
  }
  return total;
}

}  // namespace

std::uint64_t pread_loop(const Files& files, unsigned threads) {
  return each_file(files, 0, threads, Pages::small);
}

std::uint64_t direct_pool(const Files& files, unsigned threads, Pages pages) {
  return each_file(files, O_DIRECT, threads, pages);
}

#ifdef ONNXMAP_BENCH_URING
std::optional<std::uint64_t> direct_uring(const Files& files, unsigned depth) {
  io_uring ring{};
  if (io_uring_queue_init(depth, &ring, 0) < 0) return std::nullopt;
  std::vector<Aligned> buffers;
  for (unsigned i = 0; i < depth; ++i) buffers.push_back(aligned_chunk(Pages::huge));
  std::uint64_t total = 0;
  for (const auto& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY | O_DIRECT);
    if (fd < 0) continue;
    const std::uint64_t size = std::filesystem::file_size(f);
    std::uint64_t next = 0;
    unsigned in_flight = 0;
    // Buffer i is free again when its completion (user data i) comes back.
    const auto submit = [&](unsigned slot) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      io_uring_prep_read(sqe, fd, buffers[slot].get(), kRawChunk, next);
      io_uring_sqe_set_data64(sqe, slot);
      next += kRawChunk;
      ++in_flight;
    };
    for (unsigned slot = 0; slot < depth && next < size; ++slot) submit(slot);
    while (in_flight > 0) {
      io_uring_submit(&ring);
      io_uring_cqe* cqe = nullptr;
      if (io_uring_wait_cqe(&ring, &cqe) < 0) break;
      const auto slot = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
      if (cqe->res > 0) total += static_cast<std::uint64_t>(cqe->res);
      io_uring_cqe_seen(&ring, cqe);
      --in_flight;
      if (next < size) submit(slot);
    }
    ::close(fd);
  }
  io_uring_queue_exit(&ring);
  return total;
}
#else
std::optional<std::uint64_t> direct_uring(const Files&, unsigned) {
  return std::nullopt;
}
#endif

std::optional<FioFigure> fio_read(const Files& files) {
  FioFigure out;
  for (const auto& f : files) {
    // --minimal: one line of ';'-separated fields; 6th: KiB read, 9th: run time in ms.
    const std::string command =
        "fio --name=limit --readonly --rw=read --bs=16m --iodepth=8 "
        "--ioengine=libaio --direct=1 --minimal --filename='" +
        f.string() + "' 2>/dev/null";
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return std::nullopt;
    std::array<char, 4096> line{};
    const bool got = std::fgets(line.data(), line.size(), pipe) != nullptr;
    if (::pclose(pipe) != 0 || !got) return std::nullopt;
    std::stringstream fields(line.data());
    std::string field;
    std::vector<std::string> all;
    while (std::getline(fields, field, ';')) all.push_back(field);
    if (all.size() < 9) return std::nullopt;
    out.bytes += std::stoull(all[5]) * 1024;
    out.seconds += std::stod(all[8]) / 1000;
  }
  return out;
}

}  // namespace onnxmap::bench
