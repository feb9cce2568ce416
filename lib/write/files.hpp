#pragma once
// The files the writer reads from and writes to.
//
// A SourceFile is bytes the writer copies: a mapped model or data file (then also an open file
// descriptor, so large ranges are copied by the kernel, file holes kept), or a buffer in memory.
// An OutputFile is written through Boost.Iostreams into an io::NewFile (beside its destination,
// renamed into place when the whole save is complete); destroyed before it is finished, it removes
// itself.

#include <boost/iostreams/device/file_descriptor.hpp>
#include <boost/iostreams/stream_buffer.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "io/file_reader.hpp"
#include "io/new_file.hpp"
#include "onnxmap/options.hpp"

namespace onnxmap::detail {

class SourceFile {
 public:
  // Bytes in memory only.
  explicit SourceFile(std::span<const std::byte> bytes) : bytes_(bytes) {}
  // The mapped bytes of the open `file`: large ranges are copied from it by the kernel.
  SourceFile(std::span<const std::byte> bytes, const io::FileReader& file)
      : bytes_(bytes), file_(&file) {}

  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return bytes_; }
  // A descriptor of the file for copying (the caller closes it), or -1 when there is no file or
  // it is no longer the size that was mapped; the bytes are then copied from memory. An
  // OutputFile keeps one open at a time, so a model with thousands of data files never runs out
  // of descriptors.
  [[nodiscard]] int open_for_copy() const;

 private:
  std::span<const std::byte> bytes_;
  const io::FileReader* file_ = nullptr;  // outlives the save (the model's)
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

class OutputFile {
 public:
  // Creates the file beside `final_path` (io::NewFile). `planned_size` (the file's size as
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

  // Flushes, sizes the file (trailing holes) and fsyncs it when `durable`: the complete file,
  // still unnamed (where the file system allows), for the caller to rename into place.
  [[nodiscard]] io::NewFile finish(bool durable);

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

  io::NewFile file_;
  int fd_ = -1;  // file_'s descriptor
  boost::iostreams::stream_buffer<boost::iostreams::file_descriptor_sink> stream_;
  std::uint64_t position_ = 0;
  CopySource copy_source_;
  Progress& progress_;
};

// Bytes written to memory, as an OutputFile writes them to a file: a model handed to a runtime
// rather than saved.
class MemoryOutput {
 public:
  explicit MemoryOutput(std::uint64_t planned_size) { bytes_.reserve(planned_size); }

  void write(std::span<const std::byte> bytes) {
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
  }
  void copy(const SourceFile& source, std::uint64_t offset, std::uint64_t length) {
    write(source.bytes().subspan(offset, length));
  }
  void skip_to(std::uint64_t position) { bytes_.resize(position); }
  [[nodiscard]] std::uint64_t position() const noexcept { return bytes_.size(); }
  [[nodiscard]] std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  std::vector<std::byte> bytes_;
};

}  // namespace onnxmap::detail
