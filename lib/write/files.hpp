#pragma once
// The files the writer reads from and writes to.
//
// A SourceFile is bytes the writer copies: a mapped model or data file (then also an open file
// descriptor, so large ranges are copied by the kernel, file holes kept), or a buffer in memory.
// An OutputFile is written through Boost.Iostreams under a temporary name in its final folder and
// renamed into place by commit(); destroyed before that, it removes itself.

#include <boost/iostreams/device/file_descriptor.hpp>
#include <boost/iostreams/stream_buffer.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <utility>

#include "onnxmap/options.hpp"

namespace onnxmap::detail {

class SourceFile {
 public:
  // Bytes in memory only.
  explicit SourceFile(std::span<const std::byte> bytes) : bytes_(bytes) {}
  // The mapped bytes of `path`: large ranges are copied from the file by the kernel.
  SourceFile(std::span<const std::byte> bytes, std::filesystem::path path)
      : bytes_(bytes), path_(std::move(path)) {}

  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return bytes_; }
  // A descriptor of the file for copying (the caller closes it), or -1 when there is no file or
  // it is no longer the size that was mapped; the bytes are then copied from memory. An
  // OutputFile keeps one open at a time, so a model with thousands of data files never runs out
  // of descriptors.
  [[nodiscard]] int open_for_copy() const;

 private:
  std::span<const std::byte> bytes_;
  std::filesystem::path path_;
};

// Bytes written so far over all files of one save, reported to the caller now and then.
class Progress {
 public:
  Progress(std::uint64_t total, ProgressCallback callback)
      : total_(total), callback_(std::move(callback)) {}
  void advance(std::uint64_t bytes);
  void finish();

 private:
  std::uint64_t total_;
  std::uint64_t done_ = 0;
  std::uint64_t reported_ = 0;
  ProgressCallback callback_;
};

// A complete file under its temporary name, waiting to be renamed into place; removed if it
// never is.
class FinishedFile {
 public:
  FinishedFile(std::filesystem::path temp_path, std::filesystem::path final_path)
      : temp_path_(std::move(temp_path)), final_path_(std::move(final_path)) {}
  ~FinishedFile();
  FinishedFile(FinishedFile&& other) noexcept;
  FinishedFile& operator=(FinishedFile&&) = delete;
  FinishedFile(const FinishedFile&) = delete;
  FinishedFile& operator=(const FinishedFile&) = delete;

  // Renames the file to its final name (atomically replacing a file there, never writing into
  // it). Throws onnxmap::Error (io).
  void commit();

 private:
  std::filesystem::path temp_path_;
  std::filesystem::path final_path_;
  bool pending_ = true;
};

class OutputFile {
 public:
  // Creates a temporary file in the folder of `final_path`: unnamed where the file system
  // allows (O_TMPFILE), else under a hidden temporary name. `planned_size` (the file's size as
  // planned, an upper bound is fine) sizes the write buffer. Throws onnxmap::Error (io).
  OutputFile(std::filesystem::path final_path, Progress& progress, std::uint64_t planned_size);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::span<const std::byte> bytes);
  // Copies [offset, offset + length) of `source`: by the kernel for large ranges of a file,
  // leaving the source's holes as holes; from memory otherwise. The source's descriptor stays
  // open for the next copy from it (until another source is copied, or finish()).
  void copy(const SourceFile& source, std::uint64_t offset, std::uint64_t length);
  // Moves forward to `position`, leaving a hole (padding reads as zeros).
  void skip_to(std::uint64_t position);
  [[nodiscard]] std::uint64_t position() const noexcept { return position_; }

  // Flushes, sizes the file (trailing holes), fsyncs when `durable`, gives it its temporary
  // name, and closes it.
  [[nodiscard]] FinishedFile finish(bool durable);

 private:
  // The source copied from last, kept open for the copies after it, and the last extent its
  // SEEK_DATA / SEEK_HOLE walk found: [hole_from, data_from) a hole, [data_from, data_to) data.
  struct CopySource {
    const SourceFile* source = nullptr;
    int fd = -1;
    std::uint64_t hole_from = 0;
    std::uint64_t data_from = 0;
    std::uint64_t data_to = 0;
  };

  void flush();
  int source_fd(const SourceFile& source);
  void close_source();
  // The first data extent of the open source in [at, end), clipped to end; {end, end} if none.
  std::pair<std::uint64_t, std::uint64_t> next_data(std::uint64_t at, std::uint64_t end);
  void copy_in_kernel(int source_fd, std::uint64_t offset, std::uint64_t length);
  void write_fd(const char* bytes, std::size_t length);
  [[noreturn]] void fail(const char* what) const;
  [[nodiscard]] std::filesystem::path folder() const;
  [[nodiscard]] int open_named();
  void link_name();

  std::filesystem::path final_path_;
  std::filesystem::path temp_path_;  // empty while the file has no name
  int fd_ = -1;
  boost::iostreams::stream_buffer<boost::iostreams::file_descriptor_sink> stream_;
  std::uint64_t position_ = 0;
  CopySource copy_source_;
  Progress& progress_;
  bool finished_ = false;
};

}  // namespace onnxmap::detail
