#include "index/level_scan.hpp"

#include <algorithm>
#include <numeric>
#include <string>

namespace onnxmap::detail {

LevelScanner::LevelScanner(ModelIndex& index, PassContext& ctx,
                           PodTable<std::uint32_t>& name_hashes)
    : index_(index), ctx_(ctx), name_hashes_(name_hashes) {
  plain_credit_.fill(kPlainCredit);
}

void LevelScanner::scan(std::uint32_t id, int depth) {
  index_.messages[id].first_child = static_cast<std::uint32_t>(index_.messages.size());
  prefetch_ahead(id);
  try {
    if (gets_tensor_record(index_.kind(id), ctx_.metadata())) {
      // A tensor holds leaf messages only; the walk that reads its fields validates them.
      index_tensor(index_, ctx_, id, depth, name_hashes_);
    } else {
      scan_message(id, depth);
    }
  } catch (const Error& e) {
    throw e.in_context(index_.display_name, index_.path(id));
  }
}

void LevelScanner::scan_message(std::uint32_t id, int depth) {
  const MessageKind kind = index_.kind(id);
  first_child_ = static_cast<std::uint32_t>(index_.messages.size());
  last_number_ = 0;
  sorted_ = true;
  singles_.clear();
  merges_.clear();
  if (index_.messages[id].merged == 0) {
    walk_fields(ctx_, index_.span(id), kind, depth, FirstPage::maybe_unmapped, *this);
  } else {
    for (const ByteRange& span : index_.spans(id)) {
      walk_fields(ctx_, span, kind, depth, FirstPage::maybe_unmapped, *this);
    }
  }
  if (!sorted_) {
    std::vector<std::uint32_t*> merge_ids;
    for (Merge& merge : merges_) merge_ids.push_back(&merge.record);
    sort_records(index_, first_child_, static_cast<std::uint32_t>(index_.messages.size()),
                 std::move(merge_ids));
  }
  if (!merges_.empty()) file_merged_spans();
}

// The records of a level point all over the file, and the bytes of a message a few records ahead
// were last read when its parent was scanned, long out of the cache: asking for them now hides
// the memory latency the scan would otherwise wait for, field after field.
void LevelScanner::prefetch_ahead(std::uint32_t id) const noexcept {
  constexpr std::uint32_t kAhead = 8;
  if (id + kAhead >= index_.messages.size()) return;
  // Only a record near this one: its page is likely mapped already. A prefetch of an address
  // with no page-table entry is dropped only after a full page walk, which on a file of large
  // tensors (each header a gigabyte past the last) cost a twentieth of the open.
  constexpr std::uint64_t kNear = std::uint64_t{64} << 10U;
  const MessageRecord& ahead = index_.messages[id + kAhead];
  if (ahead.offset - index_.messages[id].offset > kNear) return;
  const std::byte* start = ctx_.file + ahead.offset;
  __builtin_prefetch(start);
  if (ahead.length > 64) __builtin_prefetch(start + 64);
}

void LevelScanner::child(const wire::Field& field, const FieldAction& action, int depth) {
  PodTable<MessageRecord>& records = index_.messages;
  const ByteRange span = ctx_.span_of(field);
  const std::uint32_t number = field.number;
  const auto id = static_cast<std::uint32_t>(records.size());
  if (!action.repeated) {
    // A singular message given again is merged into the first, as protobuf does.
    for (const auto& [seen_number, record] : singles_) {
      if (seen_number == number) {
        records[record].merged = 1;
        merges_.push_back({record, span});
        return;
      }
    }
    singles_.emplace_back(number, id);
  }
  const OpenOptions& options = ctx_.options;
  if (depth > options.max_depth) {
    throw Error(ErrorKind::depth_limit,
                "messages nested deeper than max_depth " + std::to_string(options.max_depth),
                span.offset);
  }
  if (id >= options.max_messages) {
    throw Error(ErrorKind::limit_exceeded,
                "more than max_messages (" + std::to_string(options.max_messages) + ") messages",
                span.offset);
  }
  if (number < last_number_) sorted_ = false;
  last_number_ = number;
  // The table grows into memory the kernel has just zeroed, out of the cache: ask for the lines
  // a few records on, so that the appends do not wait for each one in turn.
  if (id + 16 < records.capacity()) __builtin_prefetch(&records[id + 16], 1);
  // The parent's fields a couple of KiB on, which the scan reads next.
  if (span.offset + span.length + 2048 < index_.file.size()) {
    __builtin_prefetch(ctx_.file + span.offset + span.length + 2048);
  }
  const bool plain = action.repeated && action.message != MessageKind::TensorProto &&
                     try_plain(action.message, span);
  const bool is_long = span.length >= MessageRecord::kLongLength;
  if (is_long) index_.long_lengths.emplace_back(id, span.length);
  // Built in registers and stored once: every child of every record passes here, and setting a
  // bit-field of a record in memory would read back a word just partly written.
  records.push_back(MessageRecord{
      .offset = span.offset,
      .field_number = number,
      .kind = static_cast<std::uint64_t>(action.message),
      .merged = 0,
      .plain = plain ? 1U : 0U,
      .length = is_long ? MessageRecord::kLongLength : static_cast<std::uint32_t>(span.length),
      .first_child = kNone,  // until it is scanned: larger than any id, as parent() needs
  });
}

// Steps over the message about to be added, while its bytes are in the cache (its parent's scan
// has just read its tag), when nothing in it needs the scan: most nodes of a graph. Its scan in
// breadth-first order would read it again from memory, long after. Repeated fields only: a
// singular message may be merged with a later one. A kind whose messages keep turning out to
// need the scan (attributes, a type) stops being tried, as the step is then wasted work.
bool LevelScanner::try_plain(MessageKind kind, const ByteRange& span) {
  int& credit = plain_credit_[static_cast<std::size_t>(kind)];
  if (credit <= 0) return false;
  wire::Cursor cursor(ctx_.file, span);
  if (!cursor.step_plain(ctx_.actions.message_fields(kind, ctx_.metadata()))) {
    --credit;
    return false;
  }
  credit = std::min(credit + 1, kPlainCredit);
  // The step read up to the message's end, which may have faulted a page in.
  if (span.length > 0) {
    const std::uint64_t last = span.offset + span.length - 1;
    const std::uint64_t page_mask = ~(ctx_.page - 1);
    ctx_.trim.passed(last, ByteRange{}, (last & page_mask) == (span.offset & page_mask));
  }
  return true;
}

// Every merged record gets its spans in wire order; merged_spans stays sorted by record id
// because children get larger ids than every record filed before them.
void LevelScanner::file_merged_spans() {
  std::stable_sort(merges_.begin(), merges_.end(),
                   [](const Merge& a, const Merge& b) { return a.record < b.record; });
  for (std::size_t i = 0; i < merges_.size();) {
    const std::uint32_t record = merges_[i].record;
    SpanList spans{index_.span(record)};
    for (; i < merges_.size() && merges_[i].record == record; ++i) {
      spans.push_back(merges_[i].span);
    }
    index_.merged_spans.emplace_back(record, std::move(spans));
  }
}

void sort_records(ModelIndex& index, std::uint32_t first, std::uint32_t end,
                  std::vector<std::uint32_t*> merge_ids) {
  PodTable<MessageRecord>& records = index.messages;
  auto& long_lengths = index.long_lengths;
  std::vector<std::uint32_t> order(end - first);
  std::iota(order.begin(), order.end(), first);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return records[a].field_number < records[b].field_number;
  });
  std::vector<MessageRecord> sorted;
  sorted.reserve(order.size());
  std::vector<std::uint32_t> new_id(end - first);
  for (std::uint32_t i = 0; i < order.size(); ++i) {
    sorted.push_back(records[order[i]]);
    new_id[order[i] - first] = first + i;
  }
  std::copy(sorted.begin(), sorted.end(), records.begin() + first);
  for (std::uint32_t* id : merge_ids) *id = new_id[*id - first];
  const auto tail = std::lower_bound(long_lengths.begin(), long_lengths.end(), first,
                                     [](const std::pair<std::uint32_t, std::uint64_t>& e,
                                        std::uint32_t id) { return e.first < id; });
  for (auto it = tail; it != long_lengths.end(); ++it) {
    if (it->first < end) it->first = new_id[it->first - first];
  }
  std::sort(tail, long_lengths.end());
}

}  // namespace onnxmap::detail
