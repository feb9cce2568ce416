#include <algorithm>
#include <charconv>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include "index/model_index.hpp"

namespace onnxmap::detail {

SpanList ModelIndex::spans(std::uint32_t record) const {
  if (messages[record].merged == 0) return SpanList{span(record)};
  return merged_list(record);
}

const SpanList& ModelIndex::merged_list(std::uint32_t record) const noexcept {
  const auto it = std::lower_bound(merged_spans.begin(), merged_spans.end(), record,
                                   [](const std::pair<std::uint32_t, SpanList>& entry,
                                      std::uint32_t id) { return entry.first < id; });
  return it->second;
}

std::size_t ModelIndex::span_count(std::uint32_t record) const noexcept {
  if (messages[record].merged == 0) return 1;
  return merged_list(record).size();
}

ByteRange ModelIndex::span_at(std::uint32_t record, std::size_t i) const noexcept {
  if (messages[record].merged == 0) return span(record);
  return merged_list(record).begin()[i];
}

std::uint64_t ModelIndex::long_length(std::uint32_t record) const noexcept {
  const auto it = std::lower_bound(long_lengths.begin(), long_lengths.end(), record,
                                   [](const std::pair<std::uint32_t, std::uint64_t>& e,
                                      std::uint32_t id) { return e.first < id; });
  return it != long_lengths.end() && it->first == record ? it->second : 0;
}

std::uint32_t ModelIndex::parent(std::uint32_t record) const noexcept {
  if (record == 0) return kNone;
  // The parent is the last record before `record` whose children begin at or before it: first
  // children grow with the record id, because the pass appends each record's children in turn.
  const auto end = messages.begin() + record;
  const auto it =
      std::upper_bound(messages.begin(), end, record,
                       [](std::uint32_t id, const MessageRecord& m) { return id < m.first_child; });
  return static_cast<std::uint32_t>(it - messages.begin()) - 1;
}

int ModelIndex::depth(std::uint32_t record) const noexcept {
  int depth = 0;
  for (std::uint32_t id = parent(record); id != kNone; id = parent(id)) ++depth;
  return depth;
}

std::uint32_t ModelIndex::index_in_field(std::uint32_t record) const noexcept {
  const std::uint32_t up = parent(record);
  return up == kNone ? 0 : record - children(up, field_number(record)).first;
}

std::pair<std::uint32_t, std::uint32_t> ModelIndex::children(std::uint32_t record,
                                                             std::uint32_t field_number) const {
  const auto [first, last] = child_range(record);
  const auto begin = messages.begin() + first;
  const auto end = messages.begin() + last;
  const auto lo =
      std::lower_bound(begin, end, field_number,
                       [](const MessageRecord& m, std::uint32_t n) { return m.field_number < n; });
  const auto hi =
      std::upper_bound(lo, end, field_number,
                       [](std::uint32_t n, const MessageRecord& m) { return n < m.field_number; });
  return {static_cast<std::uint32_t>(lo - messages.begin()),
          static_cast<std::uint32_t>(hi - messages.begin())};
}

std::uint64_t ModelIndex::memory_bytes() const noexcept {
  std::uint64_t bytes =
      messages.capacity() * sizeof(MessageRecord) + tensors.capacity() * sizeof(TensorRecord) +
      dims.capacity() * sizeof(std::int64_t) + name_slots.capacity() * sizeof(NameSlot) +
      data_files.capacity() * sizeof(DataFile) + payload_errors.capacity() * sizeof(PayloadError) +
      long_lengths.capacity() * sizeof(std::pair<std::uint32_t, std::uint64_t>);
  for (const auto& [id, spans] : merged_spans)
    bytes += sizeof(id) + spans.capacity() * sizeof(ByteRange);
  return bytes;
}

std::string ModelIndex::path(std::uint32_t record) const {
  std::vector<std::uint32_t> chain;
  for (std::uint32_t id = record; id != kNone && id != 0; id = parent(id)) chain.push_back(id);
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const std::uint32_t number = field_number(*it);
    const schema::FieldDescriptor* field = schema::find_field(kind(parent(*it)), number);
    if (!out.empty()) out += '.';
    out += field != nullptr ? field->name : std::to_string(number);
    if (field != nullptr && field->repeated) out += "[" + std::to_string(index_in_field(*it)) + "]";
  }
  return out;
}

namespace {

// One step of a path: "node[12]" is field "node", index 12; "graph" has no index.
struct PathStep {
  std::string_view field;
  std::optional<std::uint32_t> index;
};

// Splits the step at the front of `path` off it; nullopt when it is not spelled as path() spells
// steps (decimal indexes without leading zeros).
std::optional<PathStep> next_step(std::string_view& path) {
  const std::size_t stop = std::min(path.find('.'), path.size());
  std::string_view step = path.substr(0, stop);
  path.remove_prefix(stop == path.size() ? stop : stop + 1);
  PathStep out{step, std::nullopt};
  const std::size_t open = step.find('[');
  if (open == std::string_view::npos) return out;
  if (!step.ends_with(']')) return std::nullopt;
  const std::string_view digits = step.substr(open + 1, step.size() - open - 2);
  std::uint32_t index = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (ec != std::errc{} || end != digits.data() + digits.size() || digits.empty() ||
      (digits.size() > 1 && digits[0] == '0')) {
    return std::nullopt;
  }
  out.field = step.substr(0, open);
  out.index = index;
  return out;
}

}  // namespace

std::uint32_t ModelIndex::record_at_path(std::string_view path) const {
  if (messages.empty() || path.empty() || path.back() == '.') return kNone;
  std::uint32_t record = 0;
  while (!path.empty()) {
    const std::optional<PathStep> step = next_step(path);
    if (!step) return kNone;
    const schema::FieldDescriptor* field = nullptr;
    for (const schema::FieldDescriptor& f : schema::descriptor(kind(record)).fields) {
      if (step->field == f.name) field = &f;
    }
    // path() spells a repeated field's values with an index and a singular field's without.
    if (field == nullptr || field->repeated != step->index.has_value()) return kNone;
    const auto [first, last] = children(record, field->number);
    const std::uint32_t at = step->index.value_or(0);
    if (at >= last - first) return kNone;
    record = first + at;
  }
  return record;
}

std::uint32_t ModelIndex::tensor_of_message(std::uint32_t record) const noexcept {
  const auto it =
      std::lower_bound(tensors.begin(), tensors.end(), record,
                       [](const TensorRecord& t, std::uint32_t id) { return t.message < id; });
  return it != tensors.end() && it->message == record
             ? static_cast<std::uint32_t>(it - tensors.begin())
             : kNone;
}

namespace {

// The 128-bit product of a and b, its halves folded together (wyhash's mix): every bit of either
// input reaches every bit of the result, in one multiplication.
std::uint64_t fold_multiply(std::uint64_t a, std::uint64_t b) noexcept {
  __extension__ using Wide = unsigned __int128;
  const Wide product = static_cast<Wide>(a) * b;
  return static_cast<std::uint64_t>(product) ^ static_cast<std::uint64_t>(product >> 64U);
}

std::uint64_t load64(const char* p) noexcept {
  std::uint64_t word = 0;
  std::memcpy(&word, p, 8);
  return word;
}

std::uint64_t load32(const char* p) noexcept {
  std::uint32_t word = 0;
  std::memcpy(&word, p, 4);
  return word;
}

}  // namespace

std::uint64_t name_hash(std::string_view name) noexcept {
  // Sixteen bytes per multiplication, the last sixteen read overlapping what came before, as
  // wyhash does: a name of tens of bytes costs three or four multiplications in one chain (the
  // eight-bytes-a-step hash before this was a tenth of graph-heavy's open).
  constexpr std::uint64_t kA = 0xA0761D6478BD642FULL;
  constexpr std::uint64_t kB = 0xE7037ED1A0B428DBULL;
  const char* p = name.data();
  const std::size_t size = name.size();
  std::uint64_t h = kB;
  std::uint64_t first = 0;
  std::uint64_t second = 0;
  if (size > 16) {
    for (std::size_t left = size; left > 16; p += 16, left -= 16) {
      h = fold_multiply(load64(p) ^ kA, load64(p + 8) ^ h);
    }
    first = load64(name.data() + size - 16);
    second = load64(name.data() + size - 8);
  } else if (size >= 8) {
    first = load64(p);
    second = load64(p + size - 8);
  } else if (size >= 4) {
    first = load32(p);
    second = load32(p + size - 4);
  } else if (size > 0) {
    const auto byte = [p](std::size_t i) {
      return std::uint64_t{static_cast<unsigned char>(p[i])};
    };
    first = byte(0) << 16U | byte(size / 2) << 8U | byte(size - 1);
  }
  return fold_multiply(kA ^ size, fold_multiply(first ^ kA, second ^ h));
}

std::uint32_t ModelIndex::find_tensor(std::string_view name) const noexcept {
  if (name_slots.empty()) return kNone;
  const std::size_t mask = name_slots.size() - 1;
  const auto hash = static_cast<std::uint32_t>(name_hash(name));
  for (std::size_t slot = hash & mask;; slot = (slot + 1) & mask) {
    const NameSlot held = name_slots[slot];
    if (held.tensor_plus_one == 0) return kNone;
    if (held.hash == hash && tensors[held.tensor_plus_one - 1].name == name) {
      return held.tensor_plus_one - 1;
    }
  }
}

const Error* ModelIndex::payload_error(std::uint32_t tensor) const noexcept {
  const auto it = std::lower_bound(
      payload_errors.begin(), payload_errors.end(), tensor,
      [](const PayloadError& entry, std::uint32_t id) { return entry.tensor < id; });
  return it != payload_errors.end() && it->tensor == tensor ? &it->error : nullptr;
}

}  // namespace onnxmap::detail
