#include <algorithm>
#include <functional>
#include <string>

#include "index/model_index.hpp"

namespace onnxmap::detail {

void check_options(const Options& options) {
  if (options.max_depth < 1 || options.max_depth > kMaxDepthCeiling) {
    throw Error(ErrorKind::invalid_argument, "max_depth is " + std::to_string(options.max_depth) +
                                                 "; it must be 1.." +
                                                 std::to_string(kMaxDepthCeiling));
  }
}

SpanList ModelIndex::spans(std::uint32_t record) const {
  const MessageRecord& r = messages[record];
  if (!r.merged) return SpanList{Span{r.offset, r.length}};
  const auto it = std::lower_bound(merged_spans.begin(), merged_spans.end(), record,
                                   [](const std::pair<std::uint32_t, SpanList>& entry,
                                      std::uint32_t id) { return entry.first < id; });
  return it->second;
}

std::pair<std::uint32_t, std::uint32_t> ModelIndex::children(std::uint32_t record,
                                                             std::uint32_t field_number) const {
  const MessageRecord& r = messages[record];
  const auto begin = messages.begin() + r.first_child;
  const auto end = begin + r.child_count;
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
      dims.capacity() * sizeof(std::int64_t) + name_slots.capacity() * sizeof(std::uint32_t) +
      data_files.capacity() * sizeof(DataFile) + payload_errors.capacity() * sizeof(PayloadError);
  for (const auto& [id, spans] : merged_spans)
    bytes += sizeof(id) + spans.capacity() * sizeof(Span);
  return bytes;
}

std::string ModelIndex::path(std::uint32_t record) const {
  std::vector<std::uint32_t> chain;
  for (std::uint32_t id = record; id != kNone && messages[id].parent != kNone;
       id = messages[id].parent) {
    chain.push_back(id);
  }
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const MessageRecord& m = messages[*it];
    const schema::FieldDescriptor* field =
        schema::find_field(messages[m.parent].kind, m.field_number);
    if (!out.empty()) out += '.';
    out += field != nullptr ? field->name : std::to_string(m.field_number);
    if (field != nullptr && field->repeated) out += "[" + std::to_string(m.index_in_field) + "]";
  }
  return out;
}

std::uint32_t ModelIndex::tensor_of_message(std::uint32_t record) const noexcept {
  const auto it =
      std::lower_bound(tensors.begin(), tensors.end(), record,
                       [](const TensorRecord& t, std::uint32_t id) { return t.message < id; });
  return it != tensors.end() && it->message == record
             ? static_cast<std::uint32_t>(it - tensors.begin())
             : kNone;
}

std::uint32_t ModelIndex::find_tensor(std::string_view name) const noexcept {
  if (name_slots.empty()) return kNone;
  const std::size_t mask = name_slots.size() - 1;
  for (std::size_t slot = std::hash<std::string_view>{}(name)&mask;; slot = (slot + 1) & mask) {
    const std::uint32_t held = name_slots[slot];
    if (held == 0) return kNone;
    if (tensors[held - 1].name == name) return held - 1;
  }
}

const Error* ModelIndex::payload_error(std::uint32_t tensor) const noexcept {
  const auto it = std::lower_bound(
      payload_errors.begin(), payload_errors.end(), tensor,
      [](const PayloadError& entry, std::uint32_t id) { return entry.tensor < id; });
  return it != payload_errors.end() && it->tensor == tensor ? &it->error : nullptr;
}

}  // namespace onnxmap::detail
