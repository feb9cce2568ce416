#pragma once
// A write plan: the output model as a tree of messages made of pieces (byte ranges to copy from a
// source file, bytes the plan encoded itself, nested messages), plus the data files and the
// payloads they hold. Sizes are computed bottom-up with 64-bit arithmetic before anything is
// written; emitting is then one streaming pass per file.

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "onnxmap/builder.hpp"
#include "write/files.hpp"

namespace onnxmap::detail {

// Bytes to write: [offset, offset + size) of `source`, or of the plan's own encoded bytes when
// `source` is null; or `size` bytes made by `generate`, or zeros left as a hole.
struct Chunk {
  const SourceFile* source = nullptr;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  const PayloadGenerator* generate = nullptr;
  bool hole = false;

  [[nodiscard]] bool in_arena() const noexcept {
    return source == nullptr && generate == nullptr && !hole;
  }
};

struct Piece {
  bool is_message = false;
  std::uint32_t id = 0;  // into Plan's chunks or messages
};

struct PlannedMessage {
  std::uint32_t field_number = 0;  // the field of its parent that holds it
  std::vector<Piece> pieces;
  std::uint64_t size = 0;  // of the body, once computed
};

// An external data file: payloads at planned offsets.
struct DataFilePlan {
  std::string location;  // relative to the model's folder, '/'-separated
  struct Payload {
    std::uint64_t offset;
    Chunk chunk;
  };
  std::vector<Payload> payloads;
  std::uint64_t size = 0;
};

class Plan {
 public:
  // Message 0 is the root; every other message is added as a child after its parent.
  Plan();

  [[nodiscard]] std::uint32_t add_child(std::uint32_t parent, std::uint32_t field_number);
  void add_chunk(std::uint32_t message, const Chunk& chunk);
  // Bytes the plan keeps itself (tags, lengths, re-encoded fields).
  void add_bytes(std::uint32_t message, std::span<const std::byte> bytes);
  // Bytes the plan keeps itself, as a chunk of a data file (a safetensors header, an index).
  [[nodiscard]] Chunk own_bytes(std::span<const std::byte> bytes);
  // A source the plan owns (a file reopened for copying, a caller's buffer).
  const SourceFile& own_source(std::unique_ptr<SourceFile> source);
  // Keeps `owner` alive as long as the plan (buffers a builder handed over).
  void keep(std::shared_ptr<const void> owner) { kept_.push_back(std::move(owner)); }

  std::vector<DataFilePlan> data_files;

  // ONNX's checksum values to fill (SaveOptions::checksum): kChecksumDigits bytes of the plan's
  // own bytes at `at`, for the SHA-1 of data_files[data_file].
  static constexpr std::size_t kChecksumDigits = 40;
  struct ChecksumSlot {
    std::size_t data_file;
    std::uint64_t at;
  };
  std::vector<ChecksumSlot> checksum_slots;
  // Hashes each data file a slot names from its planned bytes (as emit_data_file would write
  // them) and writes the digest into its slots. Throws onnxmap::Error (io) for a source that
  // cannot be read (a file that shrank).
  void fill_checksums();

  // Sizes every message bottom-up; returns the root's size.
  std::uint64_t compute_sizes();
  [[nodiscard]] std::uint64_t data_bytes() const;
  // Writes message `id`'s body (the root: the whole model file) to `out`: an OutputFile, or a
  // MemoryOutput (files.hpp).
  template <class Output>
  void emit(std::uint32_t id, Output& out) const;
  template <class Output>
  void emit_data_file(const DataFilePlan& file, Output& out) const;

  [[nodiscard]] std::size_t message_count() const noexcept { return messages_.size(); }

 private:
  template <class Output>
  void write_chunk(const Chunk& chunk, Output& out) const;

  std::vector<PlannedMessage> messages_;
  std::vector<Chunk> chunks_;
  std::vector<std::byte> arena_;
  std::deque<std::unique_ptr<SourceFile>> sources_;
  std::vector<std::shared_ptr<const void>> kept_;
};

}  // namespace onnxmap::detail
