#include "onnxmap/mapped_file.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <boost/interprocess/file_mapping.hpp>
#include <boost/iostreams/device/file_descriptor.hpp>
#include <boost/iostreams/read.hpp>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

#include "onnxmap/error.hpp"

namespace onnxmap {

namespace {

Error io_error(const std::filesystem::path& path, const std::string& what) {
  return {ErrorKind::io, what, Error::kNoOffset, {}, path.string()};
}

// Reads a whole stream (a regular file, a pipe, stdin) through Boost.Iostreams. `expected` is a
// regular file's size (0 when unknown): it is read in one go, and a file that grew meanwhile in
// chunks after it. Chunks start small, so a small model costs no megabyte buffer.
std::vector<std::byte> read_all(boost::iostreams::file_descriptor_source& source,
                                std::uint64_t expected) {
  std::vector<std::byte> out;
  constexpr std::size_t kFirstChunk = std::size_t{64} << 10U;
  constexpr std::size_t kMaxChunk = std::size_t{1} << 20U;
  std::size_t chunk = expected > 0 ? static_cast<std::size_t>(expected) : kFirstChunk;
  std::size_t next_chunk = kFirstChunk;
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
    chunk = next_chunk;
    next_chunk = std::min(next_chunk * 2, kMaxChunk);
  }
}

// The page-aligned range covering [offset, offset+length) of a mapping of `size` bytes.
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

}  // namespace

MappedFile MappedFile::open(const std::filesystem::path& path, LoadMode mode) {
  namespace bip = boost::interprocess;
  MappedFile file;
  file.path_ = path;
  try {
    if (path == "-") {
      boost::iostreams::file_descriptor_source in(STDIN_FILENO,
                                                  boost::iostreams::never_close_handle);
      file.owned_ = read_all(in, 0);
      file.bytes_ = file.owned_;
      return file;
    }
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (ec) throw io_error(path, "cannot open: " + ec.message());
    if (std::filesystem::is_directory(status)) throw io_error(path, "is a directory");
    if (mode == LoadMode::read || !std::filesystem::is_regular_file(status)) {
      boost::iostreams::file_descriptor_source in(path.string());
      const bool regular = std::filesystem::is_regular_file(status);
      file.owned_ = read_all(in, regular ? std::filesystem::file_size(path) : 0);
      file.bytes_ = file.owned_;
      return file;
    }
    if (std::filesystem::file_size(path) == 0) return file;  // nothing to map
    const bip::file_mapping mapping(path.c_str(), bip::read_only);
    file.region_ = bip::mapped_region(mapping, bip::read_only);
    // Random access: without this the kernel reads ahead into tensor payloads nobody asked for.
    (void)file.region_.advise(bip::mapped_region::advice_random);
    // No huge mappings: a fault in a 2 MiB page-cache folio would map all of it with one entry,
    // and unmapping part of such an entry (index/payload_trim.hpp) unmaps all of it, the
    // metadata beside the payload too, whose next touch maps it all again.
    (void)::madvise(file.region_.get_address(), file.region_.get_size(), MADV_NOHUGEPAGE);
    file.bytes_ = {static_cast<const std::byte*>(file.region_.get_address()),
                   file.region_.get_size()};
    return file;
  } catch (const bip::interprocess_exception& e) {
    throw io_error(path, std::string("cannot map: ") + e.what());
  } catch (const std::ios_base::failure& e) {
    throw io_error(path, std::string("cannot read: ") + e.what());
  } catch (const std::filesystem::filesystem_error& e) {
    throw io_error(path, e.code().message());
  }
}

MappedFile MappedFile::from_bytes(std::span<const std::byte> bytes) {
  MappedFile file;
  file.owned_.assign(bytes.begin(), bytes.end());
  file.bytes_ = file.owned_;
  return file;
}

void MappedFile::prefetch(std::uint64_t offset, std::uint64_t length) const noexcept {
  if (!is_mapped()) return;
  const auto range = page_range(bytes_, offset, length);
  if (!range.empty()) (void)::madvise(range.data(), range.size(), MADV_WILLNEED);
}

void MappedFile::release(std::uint64_t offset, std::uint64_t length) const noexcept {
  if (!is_mapped()) return;
  const auto range = page_range(bytes_, offset, length);
  if (!range.empty()) (void)::madvise(range.data(), range.size(), MADV_DONTNEED);
}

std::uint64_t MappedFile::page_size() noexcept {
  static const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

void MappedFile::release_interior(std::uint64_t offset, std::uint64_t length) const noexcept {
  if (!is_mapped() || offset >= bytes_.size()) return;
  length = std::min<std::uint64_t>(length, bytes_.size() - offset);
  const auto page = static_cast<std::uintptr_t>(MappedFile::page_size());
  const auto begin = reinterpret_cast<std::uintptr_t>(bytes_.data()) + offset;
  const std::uintptr_t first = (begin + page - 1) / page * page;
  const std::uintptr_t last = (begin + length) / page * page;
  if (first < last) (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace onnxmap
