#include "remote/mirror_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "onnxmap/error.hpp"

namespace onnxmap::remote {

namespace {

Error io_error(const std::filesystem::path& path, const std::string& what) {
  return {ErrorKind::io, what + ": " + std::strerror(errno), Error::kNoOffset, {}, path.string()};
}

}  // namespace

MirrorFile::MirrorFile(std::filesystem::path path, Endpoint endpoint, const RemoteOptions& options,
                       const HttpSession& session)
    : path_(std::move(path)), client_(std::move(endpoint), options, session) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw io_error(path_, "cannot create the mirror file");
}

MirrorFile::~MirrorFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::span<const std::byte> MirrorFile::start(std::uint64_t length) {
  first_ = client_.probe(length);
  if (::ftruncate(fd_, static_cast<off_t>(size())) != 0) {
    throw io_error(path_, "cannot size the mirror");
  }
  write(0, first_);
  held_.add(0, first_.size());
  return first_;
}

void MirrorFile::restore(const Validators& known, const RangeSet& held) {
  if (validators().size == 0) client_.assume(known);
  for (const auto& [begin, end] : held.ranges()) held_.add(begin, end - begin);
  if (::ftruncate(fd_, static_cast<off_t>(size())) != 0) {
    throw io_error(path_, "cannot size the mirror");
  }
}

void MirrorFile::discard() {
  held_ = RangeSet();
  if (::ftruncate(fd_, 0) != 0 || ::ftruncate(fd_, static_cast<off_t>(size())) != 0) {
    throw io_error(path_, "cannot empty the mirror");
  }
  write(0, first_);
  held_.add(0, first_.size());
}

FetchStats MirrorFile::ensure(std::span<const ByteRange> ranges) {
  RangeSet asked;  // ranges may overlap: each missing byte is asked for once
  for (const ByteRange& range : ranges) {
    if (range.offset >= size()) continue;
    const std::uint64_t length = std::min(range.length, size() - range.offset);
    for (const ByteRange& gap : held_.missing(range.offset, length)) {
      asked.add(gap.offset, gap.length);
    }
  }
  // Held bytes between two missing pieces of one range are asked for again when that saves a
  // request (a payload range holds the tensor headers the metadata fetch brought in).
  std::vector<ByteRange> wanted;
  for (const auto& [begin, end] : asked.ranges()) {
    const std::uint64_t last_end = wanted.empty() ? 0 : wanted.back().offset + wanted.back().length;
    if (!wanted.empty() && begin - last_end <= kRefetchGap &&
        held_.missing(last_end, begin - last_end).empty()) {
      wanted.back().length = end - wanted.back().offset;
    } else {
      wanted.push_back({begin, end - begin});
    }
  }
  std::vector<ByteRange> parts;
  for (const ByteRange& w : wanted) {
    for (std::uint64_t at = 0; at < w.length; at += kPart) {
      parts.push_back({w.offset + at, std::min(kPart, w.length - at)});
    }
  }
  if (parts.empty()) return {};
  // Each finished part is recorded, so a failure midway keeps what arrived whole.
  std::vector<std::uint64_t> received(parts.size(), 0);
  FetchStats stats;
  try {
    stats = client_.fetch(parts,
                          [&](std::size_t i, std::uint64_t at, std::span<const std::byte> bytes) {
                            write(at, bytes);
                            received[i] += bytes.size();
                          });
  } catch (...) {
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (received[i] == parts[i].length) held_.add(parts[i].offset, parts[i].length);
    }
    throw;
  }
  for (const ByteRange& part : parts) held_.add(part.offset, part.length);
  return stats;
}

std::vector<std::byte> MirrorFile::read(std::uint64_t offset, std::uint64_t length) {
  ensure(offset, length);
  if (offset >= size()) return {};
  length = std::min(length, size() - offset);
  std::vector<std::byte> out(length);
  std::uint64_t done = 0;
  while (done < length) {
    const ssize_t got =
        ::pread(fd_, out.data() + done, length - done, static_cast<off_t>(offset + done));
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      throw io_error(path_, "cannot read the mirror");
    }
    done += static_cast<std::uint64_t>(got);
  }
  return out;
}

void MirrorFile::write(std::uint64_t offset, std::span<const std::byte> bytes) const {
  std::uint64_t done = 0;
  while (done < bytes.size()) {
    const ssize_t put =
        ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (put <= 0) {
      if (put < 0 && errno == EINTR) continue;
      throw io_error(path_, "cannot write the mirror");
    }
    done += static_cast<std::uint64_t>(put);
  }
}

}  // namespace onnxmap::remote
