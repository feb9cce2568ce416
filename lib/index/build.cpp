// The one indexing pass: breadth-first over the structural messages, so every message's children
// are contiguous in the record table. Leaf messages are walked to validate them, never recorded;
// payload fields are skipped by span and never read.

#include <algorithm>
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
        file_(index.file.bytes().data()) {}

  void run(MessageKind root) {
    MessageRecord record;
    record.length = index_.file.size();
    record.kind = root;
    index_.messages.push_back(record);
    // The record table is the queue: records are appended while it is walked.
    for (std::uint32_t id = 0; id < index_.messages.size(); ++id) {
      try {
        scan(id);
      } catch (const Error& e) {
        throw e.in_context(index_.display_name, index_.path(id));
      }
    }
  }

 private:
  // A later occurrence of a singular message field, merged into the record of the first.
  struct Merge {
    std::uint32_t record;
    Span span;
  };

  void scan(std::uint32_t id) {
    const MessageRecord record = index_.messages[id];  // a copy: the table grows below
    const auto first_child = static_cast<std::uint32_t>(index_.messages.size());
    singles_.clear();
    merges_.clear();
    if (record.kind == MessageKind::TensorProto && scope_ == IndexScope::full) {
      // A tensor holds leaf messages only; the walk that reads its metadata validates them.
      index_tensor(index_, id);
    } else if (!record.merged) {
      scan_span(id, record, Span{record.offset, record.length});
    } else {
      for (const Span& span : index_.spans(id)) scan_span(id, record, span);
    }
    finish_children(id, first_child);
  }

  void scan_span(std::uint32_t id, const MessageRecord& record, const Span& span) {
    const bool metadata = scope_ == IndexScope::metadata;
    const std::uint64_t mask = actions_.message_fields(record.kind, metadata);
    for_each_message_field(file_, span, mask, [&](const CursorField& field) {
      const FieldAction action = actions_(record.kind, field.number);
      if (action.role == FieldRole::other) return;  // an unknown field numbered past 63
      if (metadata && !shown_by_peek(record.kind, field.number)) return;
      const Span child = field.payload_span(file_);
      if (action.role == FieldRole::leaf) {
        validate_leaf(file_, child, action.message, record.depth + 1, index_.options.max_depth);
      } else {
        add_child(id, record, field.number, child, action);
      }
    });
  }

  void add_child(std::uint32_t parent, const MessageRecord& parent_record, std::uint32_t number,
                 const Span& span, const FieldAction& action) {
    const auto id = static_cast<std::uint32_t>(index_.messages.size());
    if (!action.repeated) {
      // A singular message given again is merged into the first, as protobuf does.
      for (const auto& [seen_number, record] : singles_) {
        if (seen_number == number) {
          index_.messages[record].merged = true;
          merges_.push_back({record, span});
          return;
        }
      }
      singles_.emplace_back(number, id);
    }
    const int depth = parent_record.depth + 1;
    if (depth > index_.options.max_depth) {
      throw Error(
          ErrorKind::depth_limit,
          "messages nested deeper than max_depth " + std::to_string(index_.options.max_depth),
          span.offset);
    }
    MessageRecord record;
    record.offset = span.offset;
    record.length = span.length;
    record.parent = parent;
    record.field_number = number;
    record.kind = action.message;
    record.depth = static_cast<std::uint16_t>(depth);
    index_.messages.push_back(record);
  }

  // Sorts the children of `id` by field number (libprotobuf writes fields in number order, so
  // they usually are already), numbers them within their field, and files merged spans.
  void finish_children(std::uint32_t id, std::uint32_t first_child) {
    auto& messages = index_.messages;
    const auto end = static_cast<std::uint32_t>(messages.size());
    messages[id].first_child = first_child;
    messages[id].child_count = end - first_child;
    const auto by_field = [](const MessageRecord& a, const MessageRecord& b) {
      return a.field_number < b.field_number;
    };
    if (!std::is_sorted(messages.begin() + first_child, messages.end(), by_field)) {
      sort_children(first_child, end);
    }
    for (std::uint32_t child = first_child; child < end; ++child) {
      const bool same_field =
          child > first_child && messages[child - 1].field_number == messages[child].field_number;
      messages[child].index_in_field = same_field ? messages[child - 1].index_in_field + 1 : 0;
    }
    if (!merges_.empty()) file_merged_spans();
  }

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
  }

  // Every merged record gets its spans in wire order; ModelIndex::merged_spans stays sorted by
  // record id because children get larger ids than every record filed before them.
  void file_merged_spans() {
    std::stable_sort(merges_.begin(), merges_.end(),
                     [](const Merge& a, const Merge& b) { return a.record < b.record; });
    for (std::size_t i = 0; i < merges_.size();) {
      const std::uint32_t record = merges_[i].record;
      const MessageRecord& r = index_.messages[record];
      SpanList spans{Span{r.offset, r.length}};
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
  // Per scan: the singular message fields seen (field number, record) and merges into them.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> singles_;
  std::vector<Merge> merges_;
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
