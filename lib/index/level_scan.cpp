#include "index/level_scan.hpp"

#include <algorithm>
#include <numeric>
#include <string>

namespace onnxmap::detail {

LevelScanner::LevelScanner(const ModelIndex& index, PassContext& ctx, int depth,
                           const OpenDataFile& open, std::uint64_t messages_before,
                           TensorSlots tensors, LevelOutput& out, PodTable<MessageRecord>& records)
    : index_(index),
      ctx_(ctx),
      depth_(depth),
      open_(open),
      tensors_(tensors),
      out_(out),
      records_(records),
      max_depth_(ctx.options.max_depth),
      message_room_(ctx.options.max_messages > messages_before
                        ? ctx.options.max_messages - messages_before
                        : 0) {
  plain_credit_.fill(kPlainCredit);
}

void LevelScanner::scan(const ScanPiece& piece) {
  out_.first_child.push_back(static_cast<std::uint32_t>(records_.size()));
  // Stepped over when it was added: it holds nothing to record or check.
  if (index_.messages[piece.record].plain != 0) return;
  prefetch_ahead(piece.record);
  try {
    scan_record(piece);
  } catch (const Error& e) {
    throw e.in_context(index_.display_name, index_.path(piece.record));
  }
}

void LevelScanner::scan_record(const ScanPiece& piece) {
  const std::uint32_t id = piece.record;
  const MessageKind kind = index_.kind(id);
  if (gets_tensor_record(kind, ctx_.metadata())) {
    // A tensor holds leaf messages only; the walk that reads its fields validates them.
    index_tensor(index_, ctx_, id, depth_, open_, tensors_, out_);
    return;
  }
  first_child_ = static_cast<std::uint32_t>(records_.size());
  last_number_ = 0;
  sorted_ = true;
  singles_.clear();
  merges_.clear();
  if (piece.whole && index_.messages[id].merged != 0) {
    for (const Span& span : index_.spans(id)) walk_fields(ctx_, span, kind, depth_, false, *this);
  } else {
    walk_fields(ctx_, piece.span, kind, depth_, false, *this);
  }
  // A split record's children are put in field order once all its pieces are in the index.
  const auto end = static_cast<std::uint32_t>(records_.size());
  if (!sorted_ && piece.whole) sort_children(first_child_, end);
  if (!sorted_ && !piece.whole) unsorted_ = true;
  if (!merges_.empty()) file_merged_spans();
}

// The records of a level point all over the file, and the bytes of a message a few records ahead
// were last read when its parent was scanned, long out of the cache: asking for them now hides
// the memory latency the scan would otherwise wait for, field after field.
void LevelScanner::prefetch_ahead(std::uint32_t id) const noexcept {
  constexpr std::uint32_t kAhead = 8;
  if (id + kAhead >= index_.messages.size()) return;
  const MessageRecord& ahead = index_.messages[id + kAhead];
  const std::byte* start = ctx_.file + ahead.offset;
  __builtin_prefetch(start);
  if (ahead.length > 64) __builtin_prefetch(start + 64);
}

void LevelScanner::child(const CursorField& field, const FieldAction& action, int depth) {
  const Span span = field.payload_span(ctx_.file);
  const std::uint32_t number = field.number;
  const auto id = static_cast<std::uint32_t>(records_.size());
  if (!action.repeated) {
    // A singular message given again is merged into the first, as protobuf does.
    for (const auto& [seen_number, record] : singles_) {
      if (seen_number == number) {
        records_[record].merged = 1;
        merges_.push_back({record, span});
        return;
      }
    }
    singles_.emplace_back(number, id);
  }
  if (depth > max_depth_) {
    throw Error(ErrorKind::depth_limit,
                "messages nested deeper than max_depth " + std::to_string(max_depth_), span.offset);
  }
  if (id >= message_room_) {
    throw Error(
        ErrorKind::limit_exceeded,
        "more than max_messages (" + std::to_string(ctx_.options.max_messages) + ") messages",
        span.offset);
  }
  if (number < last_number_) sorted_ = false;
  last_number_ = number;
  // The table grows into memory the kernel has just zeroed, out of the cache: ask for the lines
  // a few records on, so that the appends do not wait for each one in turn.
  if (id + 16 < records_.capacity()) __builtin_prefetch(&records_[id + 16], 1);
  // The parent's fields a couple of KiB on, which the scan reads next.
  if (span.offset + span.length + 2048 < index_.file.size()) {
    __builtin_prefetch(ctx_.file + span.offset + span.length + 2048);
  }
  // Built whole, then stored once: every child of every record passes here.
  MessageRecord record;
  record.offset = span.offset;
  record.field_number = number;
  record.kind = static_cast<std::uint64_t>(action.message);
  record.plain = action.repeated && action.message != MessageKind::TensorProto &&
                 try_plain(action.message, span);
  if (span.length < MessageRecord::kLongLength) {
    record.length = static_cast<std::uint32_t>(span.length);
  } else {
    record.length = MessageRecord::kLongLength;
    out_.long_lengths.emplace_back(id, span.length);
  }
  records_.push_back(record);
  out_.weight += scan_weight(record);
  if (gets_tensor_record(action.message, ctx_.metadata())) ++out_.tensor_children;
}

// Steps over the message about to be added, while its bytes are in the cache (its parent's scan
// has just read its tag), when nothing in it needs the scan: most nodes of a graph. Its scan in
// breadth-first order would read it again from memory, long after. Repeated fields only: a
// singular message may be merged with a later one. A kind whose messages keep turning out to
// need the scan (attributes, a type) stops being tried, as the step is then wasted work.
bool LevelScanner::try_plain(MessageKind kind, const Span& span) {
  int& credit = plain_credit_[static_cast<std::size_t>(kind)];
  if (credit <= 0) return false;
  if (!step_plain_message(ctx_.file, span, ctx_.actions.message_fields(kind, ctx_.metadata()))) {
    --credit;
    return false;
  }
  credit = std::min(credit + 1, kPlainCredit);
  // The step read up to the message's end, which may have faulted a page in.
  if (span.length > 0) {
    const std::uint64_t last = span.offset + span.length - 1;
    const std::uint64_t page_mask = ~(ctx_.page - 1);
    ctx_.trim.passed(last, Span{}, (last & page_mask) == (span.offset & page_mask));
  }
  return true;
}

void LevelScanner::sort_children(std::uint32_t first, std::uint32_t end) {
  std::vector<std::uint32_t*> merge_ids;
  merge_ids.reserve(merges_.size());
  for (Merge& merge : merges_) merge_ids.push_back(&merge.record);
  sort_records(records_, first, end, out_.long_lengths, std::move(merge_ids));
}

// Every merged record gets its spans in wire order; the output's merged_spans stays sorted by
// record id because children get larger ids than every record filed before them.
void LevelScanner::file_merged_spans() {
  std::stable_sort(merges_.begin(), merges_.end(),
                   [](const Merge& a, const Merge& b) { return a.record < b.record; });
  for (std::size_t i = 0; i < merges_.size();) {
    const std::uint32_t record = merges_[i].record;
    const MessageRecord& first = records_[record];
    std::uint64_t length = first.length;
    if (first.length == MessageRecord::kLongLength) {
      for (const auto& [id, long_length] : out_.long_lengths) {
        if (id == record) length = long_length;
      }
    }
    SpanList spans{Span{first.offset, length}};
    for (; i < merges_.size() && merges_[i].record == record; ++i) {
      spans.push_back(merges_[i].span);
    }
    out_.merged_spans.emplace_back(record, std::move(spans));
  }
}

void sort_records(PodTable<MessageRecord>& records, std::uint32_t first, std::uint32_t end,
                  std::vector<std::pair<std::uint32_t, std::uint64_t>>& long_lengths,
                  std::vector<std::uint32_t*> merge_ids) {
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
