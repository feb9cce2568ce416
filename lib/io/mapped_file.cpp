#include "io/mapped_file.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/interprocess/mapped_region.hpp>
#include <boost/iostreams/device/file_descriptor.hpp>
#include <boost/iostreams/read.hpp>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "io/file_reader.hpp"
#include "io/file_version.hpp"
#include "io/mapped_files.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap {

namespace {

Error io_error(const std::filesystem::path& path, const std::string& what) {
  return {ErrorKind::io, what, Error::kNoOffset, {}, path.string()};
}

// Threads of a whole-file read: a few requests in flight keep a device's queue busy.
constexpr unsigned kWholeFileThreads = 4;
// The granule of MappedFile::advise_sequential.
constexpr std::uint64_t kAdviceGranule = std::uint64_t{2} << 20U;
// The request size of read_ahead: a device streams at this size, and the scratch buffer the
// bytes pass through stays small.
constexpr std::uint64_t kReadAheadChunk = std::uint64_t{8} << 20U;

// Reads a whole stream (a pipe, stdin, a device) through Boost.Iostreams, in chunks that start
// small, so a small model costs no megabyte buffer.
std::vector<std::byte> read_stream(boost::iostreams::file_descriptor_source& source) {
  std::vector<std::byte> out;
  constexpr std::size_t kFirstChunk = std::size_t{64} << 10U;
  constexpr std::size_t kMaxChunk = std::size_t{1} << 20U;
  std::size_t chunk = kFirstChunk;
  while (true) {
    const std::size_t used = out.size();
    out.resize(used + chunk);
    const std::streamsize got = boost::iostreams::read(
        source, reinterpret_cast<char*>(out.data() + used), static_cast<std::streamsize>(chunk));
    if (got <= 0) {
      out.resize(used);
      return out;
    }
    out.resize(used + static_cast<std::size_t>(got));
    chunk = std::min(chunk * 2, kMaxChunk);
  }
}

namespace ipc = boost::interprocess;

// An open file as Boost.Interprocess maps it (its MemoryMappable concept): the descriptor of the
// FileReader that serves the positioned reads and fstat. Written here because Boost's own
// file_mapping opens a path again, which may name another file by then.
class OpenFile {
 public:
  explicit OpenFile(int fd) noexcept : fd_(fd) {}
  [[nodiscard]] ipc::mapping_handle_t get_mapping_handle() const noexcept {
    return ipc::ipcdetail::mapping_handle_from_file_handle(fd_);
  }
  [[nodiscard]] static ipc::mode_t get_mode() noexcept { return ipc::read_only; }

 private:
  int fd_;
};

// A whole file mapped read-only, with the open file behind it (kept open while mapped: a fault's
// error fstats it), in the table of maps (mapped_files.hpp) from making to unmapping.
class WholeMap {
 public:
  WholeMap(std::shared_ptr<const io::FileReader> file, std::uint64_t size)
      : file_(std::move(file)), region_(OpenFile(file_->fd()), ipc::read_only, 0, size) {
    // Random access: without this the kernel reads ahead into tensor payloads nobody asked for.
    (void)region_.advise(ipc::mapped_region::advice_random);
    // No huge mappings (Boost has no advice for it): a fault in a 2 MiB page-cache folio would
    // map all of it with one entry, and unmapping part of such an entry (index/payload_trim.hpp)
    // unmaps all of it, the metadata beside the payload too, whose next touch maps it all again.
    (void)::madvise(region_.get_address(), region_.get_size(), MADV_NOHUGEPAGE);
    detail::register_mapping(bytes(), file_->path(), file_->fd());
  }
  WholeMap(const WholeMap&) = delete;
  WholeMap& operator=(const WholeMap&) = delete;
  WholeMap(WholeMap&&) = delete;
  WholeMap& operator=(WholeMap&&) = delete;
  ~WholeMap() { detail::unregister_mapping(bytes().data()); }  // before the region unmaps

  [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
    return {static_cast<const std::byte*>(region_.get_address()), region_.get_size()};
  }

 private:
  std::shared_ptr<const io::FileReader> file_;
  ipc::mapped_region region_;
};

// Keeps `holder` alive for as long as the returned bytes are used.
template <class Holder>
std::shared_ptr<const std::byte> own(std::shared_ptr<Holder> holder, const std::byte* bytes) {
  return {std::move(holder), bytes};
}

// The page-aligned range covering [offset, offset+length) of a mapping.
std::span<std::byte> page_range(std::span<const std::byte> map, std::uint64_t offset,
                                std::uint64_t length) {
  if (offset >= map.size()) return {};
  length = std::min<std::uint64_t>(length, map.size() - offset);
  const auto page = static_cast<std::uintptr_t>(MappedFile::page_size());
  const auto begin = reinterpret_cast<std::uintptr_t>(map.data()) + offset;
  const std::uintptr_t aligned = begin - begin % page;
  return {reinterpret_cast<std::byte*>(aligned),
          static_cast<std::size_t>(begin + length - aligned)};
}

// Whether every page of [offset, offset+length) of the file is in the page cache, counted by
// the kernel with cachestat (Linux 6.5), which walks the cache's folios: 1 ms for a 1.8 GB
// file, where mincore looks each page up (30 ms). Nullopt where the kernel has no cachestat.
std::optional<bool> all_cached(int fd, std::uint64_t offset, std::uint64_t length) {
  constexpr long kCachestat = 451;  // as on x86-64 and arm64 (glibc 2.36 names none)
  struct Range {
    std::uint64_t off, len;
  } range{offset, length};
  struct Counts {
    std::uint64_t cache, dirty, writeback, evicted, recently_evicted;
  } counts{};
  static std::atomic<bool> missing{false};
  if (length == 0) return true;
  if (missing.load(std::memory_order_relaxed)) return std::nullopt;
  if (::syscall(kCachestat, fd, &range, &counts, 0U) != 0) {
    if (errno == ENOSYS) missing.store(true, std::memory_order_relaxed);
    return std::nullopt;
  }
  const std::uint64_t page = MappedFile::page_size();
  return counts.cache == (offset + length - 1) / page - offset / page + 1;
}

}  // namespace

std::string_view to_string(LoadMode mode) noexcept {
  switch (mode) {
    case LoadMode::map: return "map";
    case LoadMode::read: return "read";
    case LoadMode::direct: return "direct";
  }
  return "?";
}

std::optional<LoadMode> parse_load_mode(std::string_view name) noexcept {
  for (const LoadMode mode : {LoadMode::map, LoadMode::read, LoadMode::direct}) {
    if (name == to_string(mode)) return mode;
  }
  return std::nullopt;
}

MappedFile MappedFile::open(const std::filesystem::path& path, LoadMode mode) {
  MappedFile file;
  file.path_ = path;
  try {
    std::error_code ec;
    const auto status =
        path == "-" ? std::filesystem::file_status() : std::filesystem::status(path, ec);
    if (ec) throw io_error(path, "cannot open: " + ec.message());
    if (std::filesystem::is_directory(status)) throw io_error(path, "is a directory");
    if (path == "-" || !std::filesystem::is_regular_file(status)) {
      // Pipes, standard input and devices cannot be mapped or read at offsets: read them whole.
      auto in = path == "-" ? boost::iostreams::file_descriptor_source(
                                  STDIN_FILENO, boost::iostreams::never_close_handle)
                            : boost::iostreams::file_descriptor_source(path.string());
      auto copy = std::make_shared<std::vector<std::byte>>(read_stream(in));
      file.bytes_ = *copy;
      file.storage_ = own(std::move(copy), file.bytes_.data());
      return file;
    }
    auto reader = std::make_shared<io::FileReader>(path, mode);
    file.version_ = io::open_file_version(reader->fd());
    const std::uint64_t size = reader->size();
    if (mode != LoadMode::map) {
      auto copy = std::make_shared<io::AlignedBuffer>(
          io::read_whole_file(*reader, size, kWholeFileThreads));
      file.bytes_ = {copy->data(), static_cast<std::size_t>(size)};
      file.storage_ = own(std::move(copy), file.bytes_.data());
      return file;
    }
    if (size == 0) return file;  // nothing to map
    auto map = std::make_shared<const WholeMap>(reader, size);
    file.bytes_ = map->bytes();
    file.storage_ = own(std::move(map), file.bytes_.data());
    file.mapped_ = true;
    // Opened on the first read_ahead, not here: most mapped files (a model's many external data
    // files) are never read ahead, and each would hold a second descriptor for nothing.
    file.read_ahead_reader_ = std::make_shared<io::LazyReopen>(reader);
    file.reader_ = std::move(reader);
    const auto granules = static_cast<std::size_t>((size + kAdviceGranule - 1) / kAdviceGranule);
    // calloc, not new[](): a large table comes zeroed from the kernel and only the pages of
    // granules ever advised are touched (a 263 GiB file's table is 132 KiB, mostly never used).
    auto* flags = static_cast<std::uint8_t*>(std::calloc(granules, 1));
    if (flags == nullptr) throw std::bad_alloc();
    file.advised_ = std::shared_ptr<std::uint8_t[]>(flags, [](std::uint8_t* p) { std::free(p); });
    return file;
  } catch (const ipc::interprocess_exception& e) {
    throw io_error(path, std::string("cannot map: ") + e.what());
  } catch (const std::ios_base::failure& e) {
    throw io_error(path, std::string("cannot read: ") + e.what());
  } catch (const std::filesystem::filesystem_error& e) {
    throw io_error(path, e.code().message());
  } catch (const std::bad_alloc&) {
    throw io_error(path, "cannot read: not enough memory for a copy of the file");
  }
}

MappedFile MappedFile::from_bytes(std::span<const std::byte> bytes) {
  MappedFile file;
  auto copy = std::make_shared<std::vector<std::byte>>(bytes.begin(), bytes.end());
  file.bytes_ = *copy;
  file.storage_ = own(std::move(copy), file.bytes_.data());
  return file;
}

void MappedFile::read_ahead(std::uint64_t offset, std::uint64_t length) const noexcept {
  if (!mapped_ || offset >= bytes_.size() || length == 0) return;
  length = std::min<std::uint64_t>(length, bytes_.size() - offset);
  try {
    // A description of its own, advised POSIX_FADV_RANDOM: the kernel reads no further than
    // asked (a rank's slice, not the next rank's rows), and the map's read-ahead state is kept.
    const io::FileReader& exact = read_ahead_reader_->get();
    const io::AlignedBuffer scratch(static_cast<std::size_t>(std::min(length, kReadAheadChunk)));
    for (std::uint64_t at = offset; at < offset + length; at += kReadAheadChunk) {
      const std::uint64_t n = std::min(kReadAheadChunk, offset + length - at);
      (void)io::pread_full(exact.fd(), at, scratch.span().first(static_cast<std::size_t>(n)),
                           path_);
    }
  } catch (...) {  // NOLINT(bugprone-empty-catch): advice; the touch reports a real problem
  }
}

void MappedFile::advise_sequential(std::uint64_t offset, std::uint64_t length) const noexcept {
  if (!mapped_ || offset >= bytes_.size() || length == 0) return;
  length = std::min<std::uint64_t>(length, bytes_.size() - offset);
  const std::uint64_t first = offset / kAdviceGranule;
  const std::uint64_t last = (offset + length - 1) / kAdviceGranule;
  const auto flag = [this](std::uint64_t g) { return std::atomic_ref<std::uint8_t>(advised_[g]); };
  if (flag(first).load(std::memory_order_relaxed) != 0 &&
      flag(last).load(std::memory_order_relaxed) != 0) {
    return;
  }
  const auto range = page_range(bytes_, offset, length);
  (void)::madvise(range.data(), range.size(), MADV_SEQUENTIAL);
  allow_huge_pages(offset, length);
  // Granules shared with a neighbour are marked too: a neighbour whose both ends are marked
  // already is skipped (left to random-access faults), a rare and harmless loss.
  for (std::uint64_t g = first; g <= last; ++g) flag(g).store(1, std::memory_order_relaxed);
}

void MappedFile::allow_huge_pages(std::uint64_t offset, std::uint64_t length) const noexcept {
  if (!mapped_ || offset >= bytes_.size()) return;
  length = std::min<std::uint64_t>(length, bytes_.size() - offset);
  const auto begin = reinterpret_cast<std::uintptr_t>(bytes_.data()) + offset;
  const std::uintptr_t first = (begin + kAdviceGranule - 1) & ~(kAdviceGranule - 1);
  const std::uintptr_t last = (begin + length) & ~(kAdviceGranule - 1);
  if (first < last) (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

void MappedFile::map_cached(std::uint64_t offset, std::uint64_t length) const noexcept {
  if (!mapped_) return;
  const auto range = page_range(bytes_, offset, length);
  if (!range.empty()) (void)::madvise(range.data(), range.size(), MADV_POPULATE_READ);
}

bool MappedFile::resident(std::uint64_t offset, std::uint64_t length) const {
  if (!mapped_) return true;
  if (const std::optional<bool> counted = all_cached(reader_->fd(), offset, length)) {
    return *counted;
  }
  const auto range = page_range(bytes_, offset, length);
  std::vector<unsigned char> pages((range.size() + page_size() - 1) / page_size());
  if (pages.empty()) return true;
  if (::mincore(range.data(), range.size(), pages.data()) != 0) return false;
  return std::all_of(pages.begin(), pages.end(), [](unsigned char p) { return (p & 1U) != 0; });
}

void MappedFile::release(std::uint64_t offset, std::uint64_t length) const noexcept {
  if (!mapped_) return;
  const auto range = page_range(bytes_, offset, length);
  if (!range.empty()) (void)::madvise(range.data(), range.size(), MADV_DONTNEED);
}

std::uint64_t MappedFile::page_size() noexcept {
  static const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

void MappedFile::release_interior(std::uint64_t offset, std::uint64_t length) const noexcept {
  if (!mapped_ || offset >= bytes_.size()) return;
  length = std::min<std::uint64_t>(length, bytes_.size() - offset);
  const auto page = static_cast<std::uintptr_t>(MappedFile::page_size());
  const auto begin = reinterpret_cast<std::uintptr_t>(bytes_.data()) + offset;
  const std::uintptr_t first = (begin + page - 1) / page * page;
  const std::uintptr_t last = (begin + length) / page * page;
  if (first < last) (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace onnxmap
