#include "remote/metadata_fetch.hpp"

#include <algorithm>
#include <optional>

#include "onnxmap/error.hpp"
#include "schema/descriptors.hpp"
#include "wire/wire.hpp"

namespace onnxmap::remote {

namespace {

using schema::MessageKind;
using wire::WireType;
using TP = schema::TensorProto;

// Read-ahead: the first chunk after a jump, and the most one chunk grows to.
constexpr std::uint64_t kMinChunk = std::uint64_t{4} << 10U;
constexpr std::uint64_t kMaxChunk = std::uint64_t{4} << 20U;
// A tag and a length: at most 5 + 10 bytes.
constexpr std::uint64_t kHeadBytes = 16;

// A window of fetched bytes over the mirror, moved forward as the walk reads.
class Cursor {
 public:
  Cursor(MirrorFile& file, std::span<const std::byte> first)
      : file_(file), window_(first.begin(), first.end()) {}

  // Bytes [offset, offset + n); n must stay within the file.
  std::span<const std::byte> bytes(std::uint64_t offset, std::uint64_t n) {
    const std::uint64_t end = begin_ + window_.size();
    if (offset >= begin_ && offset + n <= end) {
      return std::span(window_).subspan(offset - begin_, n);
    }
    // Reading on from the window doubles the chunk; a jump (a skipped payload) starts small.
    chunk_ = offset >= begin_ && offset <= end ? std::min(chunk_ * 2, kMaxChunk) : kMinChunk;
    const std::uint64_t want = std::min(std::max(n, chunk_), file_.size() - offset);
    window_ = file_.read(offset, want);
    begin_ = offset;
    return std::span(window_).subspan(0, n);
  }

  MirrorFile& file() { return file_; }

 private:
  MirrorFile& file_;
  std::vector<std::byte> window_;
  std::uint64_t begin_ = 0;
  std::uint64_t chunk_ = kMinChunk;
};

class Walker {
 public:
  Walker(Cursor& cursor, int max_depth) : cursor_(cursor), max_depth_(max_depth) {}

  // Walks the fields in [begin, end) of a message of `kind` (nullopt: unknown, fetched whole
  // field by field). For a group, `group` is its field number and the walk returns the offset
  // after its end tag; otherwise it returns `end`.
  std::uint64_t walk(std::optional<MessageKind> kind, std::uint64_t begin, std::uint64_t end,
                     int depth, std::uint32_t group = 0) {
    if (depth > max_depth_) {
      throw Error(ErrorKind::depth_limit,
                  "messages nested deeper than max_depth " + std::to_string(max_depth_), begin, {},
                  cursor_.file().url());
    }
    std::uint64_t pos = begin;
    while (pos < end) {
      const auto head = cursor_.bytes(pos, std::min(kHeadBytes, end - pos));
      std::size_t used = 0;
      const std::uint64_t tag = wire::read_varint(head, used, pos);
      const auto number = static_cast<std::uint32_t>(tag >> 3U);
      const auto type = static_cast<WireType>(tag & 7U);
      if (number == 0 || number > wire::kMaxFieldNumber) fail("bad field number", pos);
      switch (type) {
        case WireType::varint: (void)wire::read_varint(head, used, pos); break;
        case WireType::i64: used += 8; break;
        case WireType::i32: used += 4; break;
        case WireType::len: {
          const std::uint64_t length = wire::read_varint(head, used, pos);
          const std::uint64_t payload = pos + used;
          if (payload > end || length > end - payload) fail("a length runs past its message", pos);
          if (kind) len_field(*kind, number, payload, length, depth);
          if (!kind) cursor_.file().ensure(payload, length);
          pos = payload + length;
          continue;
        }
        case WireType::start_group:
          pos = walk(std::nullopt, pos + used, end, depth + 1, number);
          continue;
        case WireType::end_group:
          if (number != group) fail("an end-group tag with no start", pos);
          return pos + used;
        default: fail("wire type 6 or 7", pos);
      }
      if (pos + used > end) fail("a value runs past its message", pos);
      pos += used;
    }
    if (group != 0) fail("a group without its end tag", end);
    return end;
  }

  std::vector<std::string> take_locations() { return std::move(locations_); }

 private:
  [[noreturn]] void fail(const std::string& what, std::uint64_t offset) const {
    throw Error(ErrorKind::truncated, what, offset, {}, cursor_.file().url());
  }

  void len_field(MessageKind kind, std::uint32_t number, std::uint64_t payload,
                 std::uint64_t length, int depth) {
    if (kind == MessageKind::TensorProto) {
      // Payloads are what we never fetch for metadata; fixed-width typed lists are only sized by
      // the index pass, while varint lists are counted, so those are fetched.
      if (number == TP::kRawData || number == TP::kFloatData || number == TP::kDoubleData) return;
      if (number == TP::kExternalData) {
        external_entry(cursor_.bytes(payload, length), payload);
        return;
      }
    }
    const schema::FieldDescriptor* field = schema::find_field(kind, number);
    if (field != nullptr && field->type == schema::FieldType::message) {
      walk(field->message, payload, payload + length, depth + 1);
    } else {
      cursor_.file().ensure(payload, length);
    }
  }

  // A StringStringEntryProto of external_data: keeps the value of key "location".
  void external_entry(std::span<const std::byte> entry, std::uint64_t base) {
    wire::Reader reader(entry, base);
    wire::Field field;
    std::string_view key;
    std::string_view value;
    while (reader.next(field)) {
      if (field.type != WireType::len) continue;
      if (field.number == schema::StringStringEntryProto::kKey) key = wire::as_string(field.bytes);
      if (field.number == schema::StringStringEntryProto::kValue) {
        value = wire::as_string(field.bytes);
      }
    }
    if (key != "location") return;
    if (std::find(locations_.begin(), locations_.end(), value) == locations_.end()) {
      locations_.emplace_back(value);
    }
  }

  Cursor& cursor_;
  int max_depth_;
  std::vector<std::string> locations_;
};

}  // namespace

std::vector<std::string> fetch_metadata(MirrorFile& file, std::span<const std::byte> first,
                                        schema::MessageKind root, int max_depth) {
  Cursor cursor(file, first);
  Walker walker(cursor, max_depth);
  walker.walk(root, 0, file.size(), 0);
  return walker.take_locations();
}

}  // namespace onnxmap::remote
