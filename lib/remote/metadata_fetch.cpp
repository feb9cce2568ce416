#include "remote/metadata_fetch.hpp"

#include <algorithm>
#include <array>
#include <optional>

#include "onnxmap/error.hpp"
#include "schema/descriptors.hpp"
#include "wire/cursor.hpp"

namespace onnxmap::remote {

namespace {

using schema::MessageKind;
using wire::WireType;
using TP = schema::TensorProto;

// Read-ahead: the first chunk after a jump, and the most one chunk grows to.
constexpr std::uint64_t kMinChunk = std::uint64_t{4} << 10U;
constexpr std::uint64_t kMaxChunk = std::uint64_t{4} << 20U;
// A field's head, a tag and a length: at most 5 + 10 bytes.
constexpr std::uint64_t kHeadBytes = 16;

// Whether a message of `kind` may hold a tensor payload somewhere beneath it (a TensorProto, or a
// message field whose kind may): the walk descends into those only.
bool may_hold_payload(MessageKind kind) {
  static const std::array<bool, schema::kMessageKindCount> table = [] {
    std::array<bool, schema::kMessageKindCount> holds{};
    holds[static_cast<std::size_t>(MessageKind::TensorProto)] = true;
    for (bool changed = true; changed;) {  // a fixed point: message kinds nest in cycles
      changed = false;
      for (std::size_t k = 0; k < holds.size(); ++k) {
        if (holds[k]) continue;
        for (const schema::FieldDescriptor& f : schema::descriptor(MessageKind(k)).fields) {
          if (f.type == schema::FieldType::message && holds[static_cast<std::size_t>(f.message)]) {
            holds[k] = changed = true;
            break;
          }
        }
      }
    }
    return holds;
  }();
  return table[static_cast<std::size_t>(kind)];
}

// A window of fetched bytes over the mirror, moved forward as the walk reads.
class FetchWindow {
 public:
  FetchWindow(MirrorFile& file, std::span<const std::byte> first)
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

  // Whether [offset, offset + n) lies in the bytes fetched last (so in the mirror).
  [[nodiscard]] bool holds(std::uint64_t offset, std::uint64_t n) const {
    return offset >= begin_ && offset + n <= begin_ + window_.size();
  }

 private:
  MirrorFile& file_;
  std::vector<std::byte> window_;
  std::uint64_t begin_ = 0;
  std::uint64_t chunk_ = kMinChunk;
};

class Walker {
 public:
  Walker(FetchWindow& window, int max_depth) : window_(window), max_depth_(max_depth) {}

  // Walks the fields in [begin, end) of a message of `kind` (nullopt: unknown, fetched whole
  // field by field). For a group, `group` is its field number and the walk returns the offset
  // after its end tag; otherwise it returns `end`.
  std::uint64_t walk(std::optional<MessageKind> kind, std::uint64_t begin, std::uint64_t end,
                     int depth, std::uint32_t group = 0) {
    if (depth > max_depth_) {
      throw Error(ErrorKind::depth_limit,
                  "messages nested deeper than max_depth " + std::to_string(max_depth_), begin, {},
                  window_.file().shown());
    }
    std::uint64_t pos = begin;
    while (pos < end) {
      const wire::FieldHead head = read_head(pos, end);
      std::uint64_t used = head.size;
      switch (head.type) {
        case WireType::varint: break;
        case WireType::i64: used += 8; break;
        case WireType::i32: used += 4; break;
        case WireType::len: {
          const std::uint64_t payload = pos + used;
          if (payload > end || head.value > end - payload) {
            fail("a length runs past its message", pos);
          }
          if (kind) len_field(*kind, head.number, payload, head.value, depth);
          if (!kind) defer(payload, head.value);
          pos = payload + head.value;
          continue;
        }
        case WireType::start_group:
          pos = walk(std::nullopt, pos + used, end, depth + 1, head.number);
          continue;
        case WireType::end_group:
          if (head.number != group) fail("an end-group tag with no start", pos);
          return pos + used;
      }
      if (pos + used > end) fail("a value runs past its message", pos);
      pos += used;
    }
    if (group != 0) fail("a group without its end tag", end);
    return end;
  }

  std::vector<std::string> take_locations() { return std::move(locations_); }

 private:
  // The head of the field at `pos`, read by the wire cursor's own rules from the bytes fetched.
  wire::FieldHead read_head(std::uint64_t pos, std::uint64_t end) {
    const auto bytes = window_.bytes(pos, std::min(kHeadBytes, end - pos));
    try {
      return wire::read_head(bytes.data(), bytes.data() + bytes.size(), pos);
    } catch (const Error& e) {
      throw e.in_context(window_.file().shown(), "");
    }
  }

  [[noreturn]] void fail(const std::string& what, std::uint64_t offset) const {
    throw Error(ErrorKind::truncated, what, offset, {}, window_.file().shown());
  }

  void len_field(MessageKind kind, std::uint32_t number, std::uint64_t payload,
                 std::uint64_t length, int depth) {
    if (kind == MessageKind::TensorProto) {
      // Payloads are what we never fetch for metadata; fixed-width typed lists are only sized by
      // the index pass, while varint lists are counted, so those are fetched.
      if (number == TP::kRawData || number == TP::kFloatData || number == TP::kDoubleData) return;
      if (number == TP::kExternalData) {
        external_entry(window_.bytes(payload, length), payload);
        return;
      }
    }
    const schema::FieldDescriptor* field = schema::find_field(kind, number);
    if (field != nullptr && field->type == schema::FieldType::message &&
        may_hold_payload(field->message)) {
      walk(field->message, payload, payload + length, depth + 1);
    } else {
      defer(payload, length);
    }
  }

  // A field fetched whole, payload-free (its span known, nothing beneath it moves the walk):
  // fetched with the others in one batch of parallel requests at the walk's end, rather than
  // one request after another in the walk.
  void defer(std::uint64_t payload, std::uint64_t length) {
    if (length > 0 && !window_.holds(payload, length)) deferred_.push_back({payload, length});
  }

 public:
  // Fetches the deferred fields (up to RemoteOptions::connections requests at once).
  void fetch_deferred() {
    window_.file().ensure(deferred_);
    deferred_.clear();
  }

 private:
  // A StringStringEntryProto of external_data: keeps the value of key "location".
  void external_entry(std::span<const std::byte> entry, std::uint64_t base) {
    wire::Cursor reader(entry, base);
    std::string_view key;
    std::string_view value;
    while (reader.next()) {
      const wire::Field& field = reader.field();
      if (field.type != WireType::len) continue;
      if (field.number == schema::StringStringEntryProto::kKey) key = field.text();
      if (field.number == schema::StringStringEntryProto::kValue) value = field.text();
    }
    if (key != "location") return;
    if (std::find(locations_.begin(), locations_.end(), value) == locations_.end()) {
      locations_.emplace_back(value);
    }
  }

  FetchWindow& window_;
  int max_depth_;
  std::vector<std::string> locations_;
  std::vector<ByteRange> deferred_;
};

}  // namespace

std::vector<std::string> fetch_metadata(MirrorFile& file, std::span<const std::byte> first,
                                        schema::MessageKind root, int max_depth) {
  FetchWindow window(file, first);
  Walker walker(window, max_depth);
  walker.walk(root, 0, file.size(), 0);
  walker.fetch_deferred();
  return walker.take_locations();
}

}  // namespace onnxmap::remote
