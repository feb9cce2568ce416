#include "write/plan.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "io/digest.hpp"
#include "wire/wire.hpp"

namespace onnxmap::detail {

namespace {

std::uint64_t header_size(std::uint32_t field_number, std::uint64_t length) {
  return wire::varint_size(wire::make_tag(field_number, wire::WireType::len)) +
         wire::varint_size(length);
}

// Generated payloads are made and written this much at a time.
constexpr std::uint64_t kGenerateChunk = std::uint64_t{1} << 20U;

// An output that hashes what would be written (Plan::fill_checksums): the same calls as an
// OutputFile, a hole hashed as the zeros it reads as.
class DigestOutput {
 public:
  DigestOutput() : digest_(DigestAlgorithm::sha1) {}

  void write(std::span<const std::byte> bytes) {
    digest_.update(bytes);
    position_ += bytes.size();
  }
  void copy(const SourceFile& source, std::uint64_t offset, std::uint64_t length) {
    write(
        source.bytes().subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(length)));
  }
  void skip_to(std::uint64_t position) {
    static const std::vector<std::byte> zeros(kGenerateChunk);
    while (position_ < position) {
      write(std::span(zeros).first(
          static_cast<std::size_t>(std::min<std::uint64_t>(zeros.size(), position - position_))));
    }
  }
  [[nodiscard]] std::uint64_t position() const noexcept { return position_; }
  [[nodiscard]] std::string finish_hex() { return digest_.finish_hex(); }

 private:
  Digest digest_;
  std::uint64_t position_ = 0;
};

}  // namespace

Plan::Plan() : messages_(1) {}

std::uint32_t Plan::add_child(std::uint32_t parent, std::uint32_t field_number) {
  const auto id = static_cast<std::uint32_t>(messages_.size());
  messages_.push_back(PlannedMessage{field_number, {}, 0});
  messages_[parent].pieces.push_back(Piece{true, id});
  return id;
}

void Plan::add_chunk(std::uint32_t message, const Chunk& chunk) {
  if (chunk.size == 0) return;
  auto& pieces = messages_[message].pieces;
  // Adjacent ranges of one source become one piece: a message copied field by field is still
  // copied in one go where nothing was left out.
  if (!pieces.empty() && !pieces.back().is_message) {
    Chunk& last = chunks_[pieces.back().id];
    const bool same_bytes = (last.in_arena() && chunk.in_arena()) ||
                            (last.source != nullptr && last.source == chunk.source);
    if (same_bytes && last.offset + last.size == chunk.offset) {
      last.size += chunk.size;
      return;
    }
  }
  pieces.push_back(Piece{false, static_cast<std::uint32_t>(chunks_.size())});
  chunks_.push_back(chunk);
}

void Plan::add_bytes(std::uint32_t message, std::span<const std::byte> bytes) {
  add_chunk(message, own_bytes(bytes));
}

Chunk Plan::own_bytes(std::span<const std::byte> bytes) {
  const std::uint64_t offset = arena_.size();
  arena_.insert(arena_.end(), bytes.begin(), bytes.end());
  return Chunk{nullptr, offset, bytes.size()};
}

const SourceFile& Plan::own_source(std::unique_ptr<SourceFile> source) {
  sources_.push_back(std::move(source));
  return *sources_.back();
}

std::uint64_t Plan::compute_sizes() {
  // Children come after their parents, so one backward sweep sees every child before its parent.
  for (std::size_t i = messages_.size(); i-- > 0;) {
    PlannedMessage& m = messages_[i];
    m.size = 0;
    for (const Piece& piece : m.pieces) {
      if (piece.is_message) {
        const PlannedMessage& child = messages_[piece.id];
        m.size += header_size(child.field_number, child.size) + child.size;
      } else {
        m.size += chunks_[piece.id].size;
      }
    }
  }
  return messages_[0].size;
}

std::uint64_t Plan::data_bytes() const {
  std::uint64_t total = 0;
  for (const DataFilePlan& file : data_files) total += file.size;
  return total;
}

template <class Output>
void Plan::write_chunk(const Chunk& chunk, Output& out) const {
  if (chunk.hole) {
    out.skip_to(out.position() + chunk.size);
  } else if (chunk.generate != nullptr) {
    std::vector<std::byte> buffer(std::min<std::uint64_t>(chunk.size, kGenerateChunk));
    for (std::uint64_t done = 0; done < chunk.size;) {
      const auto n =
          static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), chunk.size - done));
      (*chunk.generate)(done, std::span(buffer).first(n));
      out.write(std::span(buffer).first(n));
      done += n;
    }
  } else if (chunk.source == nullptr) {
    out.write(std::span(arena_).subspan(chunk.offset, chunk.size));
  } else {
    out.copy(*chunk.source, chunk.offset, chunk.size);
  }
}

template <class Output>
void Plan::emit(std::uint32_t id, Output& out) const {
  for (const Piece& piece : messages_[id].pieces) {
    if (!piece.is_message) {
      write_chunk(chunks_[piece.id], out);
      continue;
    }
    const PlannedMessage& child = messages_[piece.id];
    wire::Writer header;
    header.field_len_header(child.field_number, child.size);
    out.write(header.bytes());
    emit(piece.id, out);  // nesting is bounded by the source's depth limit
  }
}

void Plan::fill_checksums() {
  std::vector<std::string> digests(data_files.size());
  for (const ChecksumSlot& slot : checksum_slots) {
    std::string& digest = digests[slot.data_file];
    if (digest.empty()) {
      DigestOutput out;
      emit_data_file(data_files[slot.data_file], out);
      digest = out.finish_hex();
    }
    std::memcpy(arena_.data() + slot.at, digest.data(), kChecksumDigits);
  }
}

template <class Output>
void Plan::emit_data_file(const DataFilePlan& file, Output& out) const {
  for (const DataFilePlan::Payload& payload : file.payloads) {
    out.skip_to(payload.offset);
    write_chunk(payload.chunk, out);
  }
  out.skip_to(file.size);
}

template void Plan::emit(std::uint32_t id, OutputFile& out) const;
template void Plan::emit_data_file(const DataFilePlan& file, OutputFile& out) const;
template void Plan::emit(std::uint32_t id, MemoryOutput& out) const;

}  // namespace onnxmap::detail
