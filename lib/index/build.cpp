// The one indexing pass: breadth-first over the structural messages, so every message's children
// are contiguous in the record table. Leaf messages are walked to validate them, never recorded;
// payload fields are skipped by span and never read.

#include <algorithm>
#include <array>
#include <numeric>
#include <string>

#include "index/field_cursor.hpp"
#include "index/field_roles.hpp"
#include "index/model_index.hpp"
#include "index/tensor_table.hpp"

namespace onnxmap::detail {

namespace {

class IndexBuilder {
 public:
  IndexBuilder(ModelIndex& index, IndexScope scope)
      : index_(index),
        scope_(scope),
        actions_(FieldActions::get()),
        file_(index.file.bytes().data()),
        trim_(index.file) {}

  void run(MessageKind root) {
    if (index_.file.size() >= MessageRecord::kOffsetLimit) {
      throw Error(ErrorKind::limit_exceeded, "model files of 256 TiB or more are not supported", 0)
          .in_context(index_.display_name, "");
    }
    index_.messages.emplace_back();
    set_span(0, Span{0, index_.file.size()});
    index_.messages[0].kind = static_cast<std::uint64_t>(root);
    // The record table is the queue: records are appended while it is walked. Breadth-first,
    // the records of one depth are contiguous, so the depth needs no storage.
    int depth = 0;
    std::uint32_t depth_end = 1;
    for (std::uint32_t id = 0; id < index_.messages.size(); ++id) {
      if (id == depth_end) {
        ++depth;
        depth_end = static_cast<std::uint32_t>(index_.messages.size());
      }
      MessageRecord& record = index_.messages[id];
      if (record.plain != 0) {
        // Stepped over when it was added: it holds nothing to record or check.
        record.plain = 0;
        record.first_child = static_cast<std::uint32_t>(index_.messages.size());
        continue;
      }
      prefetch_ahead(id);
      try {
        scan(id, depth);
      } catch (const Error& e) {
        throw e.in_context(index_.display_name, index_.path(id));
      }
    }
    trim_.finish();
  }

 private:
  // A later occurrence of a singular message field, merged into the record of the first.
  struct Merge {
    std::uint32_t record;
    Span span;
  };

  // The records of the queue point all over the file, and the bytes of a message a few records
  // ahead were last read when its parent was scanned, long out of the cache: asking for them
  // now hides the memory latency the scan would otherwise wait for, field after field.
  void prefetch_ahead(std::uint32_t id) const noexcept {
    constexpr std::uint32_t kAhead = 8;
    if (id + kAhead >= index_.messages.size()) return;
    const MessageRecord& ahead = index_.messages[id + kAhead];
    const std::byte* start = file_ + ahead.offset;
    __builtin_prefetch(start);
    if (ahead.length > 64) __builtin_prefetch(start + 64);
  }

  void scan(std::uint32_t id, int depth) {
    const auto first_child = static_cast<std::uint32_t>(index_.messages.size());
    // Set first, so that parents and paths can be derived while the record is scanned.
    index_.messages[id].first_child = first_child;
    first_child_ = first_child;
    const auto kind = static_cast<MessageKind>(index_.messages[id].kind);
    sorted_ = true;
    if (kind == MessageKind::TensorProto && scope_ == IndexScope::full) {
      // A tensor holds leaf messages only; the walk that reads its metadata validates them.
      index_tensor(index_, id, depth, trim_);
      return;
    }
    singles_.clear();
    merges_.clear();
    if (index_.messages[id].merged == 0) {
      scan_span(kind, depth, index_.span(id));
    } else {
      for (const Span& span : index_.spans(id)) scan_span(kind, depth, span);
    }
    const auto end = static_cast<std::uint32_t>(index_.messages.size());
    if (!sorted_) sort_children(first_child, end);
    if (!merges_.empty()) file_merged_spans();
  }

  void scan_span(MessageKind kind, int depth, const Span& span) {
    const bool metadata = scope_ == IndexScope::metadata;
    for_each_message_field(
        file_, span, actions_.message_fields(kind, metadata), [&](const CursorField& field) {
          const Span child = field.payload_span(file_);
          trim_.passed(field.tag_offset(file_), child, false);
          const FieldAction action = actions_(kind, field.number);
          if (action.role == FieldRole::packed_scalars) {
            validate_packed(file_, field, action.scalar_width);
            return;
          }
          // A large payload or an unknown field numbered past 63.
          if (action.role == FieldRole::other) return;
          if (metadata && !shown_by_peek(kind, field.number)) return;
          if (action.role == FieldRole::leaf) {
            validate_leaf(file_, child, action.message, depth + 1, index_.options.max_depth);
          } else {
            add_child(depth, field.number, child, action);
          }
        });
  }

  void add_child(int parent_depth, std::uint32_t number, const Span& span,
                 const FieldAction& action) {
    const auto id = static_cast<std::uint32_t>(index_.messages.size());
    if (!action.repeated) {
      // A singular message given again is merged into the first, as protobuf does.
      for (const auto& [seen_number, record] : singles_) {
        if (seen_number == number) {
          index_.messages[record].merged = 1;
          merges_.push_back({record, span});
          return;
        }
      }
      singles_.emplace_back(number, id);
    }
    if (parent_depth + 1 > index_.options.max_depth) {
      throw Error(
          ErrorKind::depth_limit,
          "messages nested deeper than max_depth " + std::to_string(index_.options.max_depth),
          span.offset);
    }
    if (index_.messages.size() >= index_.options.max_messages) {
      throw Error(
          ErrorKind::limit_exceeded,
          "more than max_messages (" + std::to_string(index_.options.max_messages) + ") messages",
          span.offset);
    }
    if (id > first_child_ && number < index_.field_number(id - 1)) sorted_ = false;
    // The table grows into memory the kernel has just zeroed, out of the cache: ask for the
    // lines a few records on, so that the appends do not wait for each one in turn.
    if (id + 16 < index_.messages.capacity()) __builtin_prefetch(&index_.messages[id + 16], 1);
    // The parent's fields a couple of KiB on, which the scan reads next.
    if (span.offset + span.length + 2048 < index_.file.size()) {
      __builtin_prefetch(file_ + span.offset + span.length + 2048);
    }
    MessageRecord& record = index_.messages.emplace_back();
    record.field_number = number;
    record.kind = static_cast<std::uint64_t>(action.message);
    set_span(id, span);
    if (action.repeated && action.message != MessageKind::TensorProto) try_plain(id, span);
  }

  // Steps over the message just added, while its bytes are in the cache (its parent's scan has
  // just read its tag), when nothing in it needs the scan: most nodes of a graph. Its scan in
  // breadth-first order would read it again from memory, long after. Repeated fields only: a
  // singular message may be merged with a later one. A kind whose messages keep turning out to
  // need the scan (attributes, a type) stops being tried, as the step is then wasted work.
  void try_plain(std::uint32_t id, const Span& span) {
    const auto kind = static_cast<std::size_t>(index_.messages[id].kind);
    int& credit = plain_credit_[kind];
    if (credit <= 0) return;
    const std::uint64_t mask =
        actions_.message_fields(static_cast<MessageKind>(kind), scope_ == IndexScope::metadata);
    if (!step_plain_message(file_, span, mask)) {
      --credit;
      return;
    }
    credit = std::min(credit + 1, kPlainCredit);
    index_.messages[id].plain = 1;
    // The step read up to the message's end, which may have faulted a page in.
    if (span.length > 0) {
      const std::uint64_t last = span.offset + span.length - 1;
      trim_.passed(last, Span{}, (last & ~(page_ - 1)) == (span.offset & ~(page_ - 1)));
    }
  }

  void set_span(std::uint32_t id, const Span& span) {
    MessageRecord& record = index_.messages[id];
    record.offset = span.offset;
    if (span.length < MessageRecord::kLongLength) {
      record.length = static_cast<std::uint32_t>(span.length);
    } else {
      record.length = MessageRecord::kLongLength;
      index_.long_lengths.emplace_back(id, span.length);
    }
  }

  // Sorts the children [first, end) by field number, keeping wire order within a field
  // (libprotobuf writes fields in number order, so this is rare), and renumbers what refers to
  // them.
  void sort_children(std::uint32_t first, std::uint32_t end) {
    auto& messages = index_.messages;
    std::vector<std::uint32_t> order(end - first);
    std::iota(order.begin(), order.end(), first);
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      return messages[a].field_number < messages[b].field_number;
    });
    std::vector<MessageRecord> sorted;
    sorted.reserve(order.size());
    std::vector<std::uint32_t> new_id(end - first);
    for (std::uint32_t i = 0; i < order.size(); ++i) {
      sorted.push_back(messages[order[i]]);
      new_id[order[i] - first] = first + i;
    }
    std::copy(sorted.begin(), sorted.end(), messages.begin() + first);
    for (Merge& merge : merges_) merge.record = new_id[merge.record - first];
    auto& long_lengths = index_.long_lengths;
    const auto tail = std::lower_bound(long_lengths.begin(), long_lengths.end(), first,
                                       [](const std::pair<std::uint32_t, std::uint64_t>& e,
                                          std::uint32_t id) { return e.first < id; });
    for (auto it = tail; it != long_lengths.end(); ++it) it->first = new_id[it->first - first];
    std::sort(tail, long_lengths.end());
  }

  // Every merged record gets its spans in wire order; ModelIndex::merged_spans stays sorted by
  // record id because children get larger ids than every record filed before them.
  void file_merged_spans() {
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

  ModelIndex& index_;
  IndexScope scope_;
  const FieldActions& actions_;
  const std::byte* file_;
  PayloadTrimmer trim_;
  std::uint64_t page_ = MappedFile::page_size();
  // Per scan: the first child's id, whether the children arrived in field order, the singular
  // message fields seen (field number, record), and merges into them.
  std::uint32_t first_child_ = 0;
  bool sorted_ = true;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> singles_;
  std::vector<Merge> merges_;
  // Per message kind, how many more failed try_plain steps it is worth.
  static constexpr int kPlainCredit = 16;
  std::array<int, schema::kMessageKindCount> plain_credit_ = [] {
    std::array<int, schema::kMessageKindCount> credits{};
    credits.fill(kPlainCredit);
    return credits;
  }();
};

}  // namespace

MappedFile open_model_file(const std::filesystem::path& path, const Options& options) {
  try {
    return MappedFile::open(path, options.load);
  } catch (const Error& e) {
    throw e.in_context(path.string(), "");
  }
}

std::shared_ptr<const ModelIndex> build_index(MappedFile file, std::string display_name,
                                              std::filesystem::path folder, MessageKind root,
                                              const Options& options, IndexScope scope) {
  check_options(options);
  auto index = std::make_shared<ModelIndex>();
  index->file = std::move(file);
  index->display_name = std::move(display_name);
  index->folder = std::move(folder);
  index->options = options;
  IndexBuilder(*index, scope).run(root);
  // The tables grew by doubling; an index lives as long as its model, so return the slack.
  index->messages.shrink_to_fit();
  index->tensors.shrink_to_fit();
  index->dims.shrink_to_fit();
  build_name_table(*index);
  return index;
}

}  // namespace onnxmap::detail
