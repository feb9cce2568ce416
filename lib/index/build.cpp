// The one indexing pass: breadth-first over the structural messages, so every message's children
// are contiguous in the record table. Leaf messages are walked to validate them, never recorded;
// payload fields are skipped by span and never read.

#include <algorithm>
#include <string>

#include "index/model_index.hpp"
#include "index/tensor_table.hpp"

namespace onnxmap::detail {

namespace {

// A child message found while scanning a record, before it gets a record of its own. Merged
// occurrences (rare) keep their further spans in IndexBuilder::extra_spans_.
struct PendingChild {
  std::uint32_t field_number;
  MessageKind kind;
  Span span;
  std::uint32_t extra = kNone;  // index into extra_spans_
};

// Walks a leaf message and everything inside it, so that every varint and length of the file is
// checked once, at open. Leaf messages nest only in bounded ways (TypeProto in TypeProto), and the
// depth limit bounds the recursion.
void validate_leaf(std::span<const std::byte> bytes, std::uint64_t base, MessageKind kind,
                   int depth, int max_depth) {
  if (depth > max_depth) {
    throw Error(ErrorKind::depth_limit,
                "messages nested deeper than max_depth " + std::to_string(max_depth), base);
  }
  wire::Reader reader(bytes, base);
  wire::Field field;
  while (reader.next(field)) {
    const schema::FieldDescriptor* desc = schema::find_field(kind, field.number);
    if (desc != nullptr && desc->type == schema::FieldType::message &&
        field.type == wire::WireType::len) {
      validate_leaf(field.bytes, field.payload_offset, desc->message, depth + 1, max_depth);
    }
  }
}

class IndexBuilder {
 public:
  IndexBuilder(ModelIndex& index, IndexScope scope) : index_(index), scope_(scope) {}

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
  void scan(std::uint32_t id) {
    const MessageRecord record = index_.messages[id];  // a copy: the table grows below
    pending_.clear();
    extra_spans_.clear();
    if (record.merged) {
      for (const Span& span : index_.spans(id)) scan_span(record, span);
    } else {
      scan_span(record, Span{record.offset, record.length});
    }
    if (!std::is_sorted(pending_.begin(), pending_.end(), by_field)) {
      std::stable_sort(pending_.begin(), pending_.end(), by_field);
    }
    auto& self = index_.messages[id];
    self.first_child = static_cast<std::uint32_t>(index_.messages.size());
    self.child_count = static_cast<std::uint32_t>(pending_.size());
    std::uint32_t index_in_field = 0;
    for (std::size_t i = 0; i < pending_.size(); ++i) {
      const PendingChild& child = pending_[i];
      index_in_field =
          (i > 0 && pending_[i - 1].field_number == child.field_number) ? index_in_field + 1 : 0;
      add_record(id, record.depth, child, index_in_field);
    }
    if (record.kind == MessageKind::TensorProto && scope_ == IndexScope::full) {
      index_tensor(index_, id);
    }
  }

  void scan_span(const MessageRecord& record, const Span& span) {
    const int max_depth = index_.options.max_depth;
    wire::Reader reader(index_.bytes(span), span.offset);
    wire::Field field;
    while (reader.next(field)) {
      const schema::FieldDescriptor* desc = schema::find_field(record.kind, field.number);
      if (desc == nullptr || desc->type != schema::FieldType::message ||
          field.type != wire::WireType::len) {
        continue;  // scalars, payloads and unknown fields: the reader has checked their extent
      }
      if (scope_ == IndexScope::metadata && !shown_by_peek(record.kind, field.number)) continue;
      const Span child{field.payload_offset, field.bytes.size()};
      if (!is_indexed(desc->message)) {
        validate_leaf(field.bytes, field.payload_offset, desc->message, record.depth + 1,
                      max_depth);
        continue;
      }
      if (!desc->repeated) {
        // A singular message given again is merged into the first, as protobuf does.
        auto same = std::find_if(pending_.begin(), pending_.end(), [&](const PendingChild& p) {
          return p.field_number == field.number;
        });
        if (same != pending_.end()) {
          if (same->extra == kNone) {
            same->extra = static_cast<std::uint32_t>(extra_spans_.size());
            extra_spans_.emplace_back();
          }
          extra_spans_[same->extra].push_back(child);
          continue;
        }
      }
      pending_.push_back({field.number, desc->message, child});
    }
  }

  void add_record(std::uint32_t parent, std::uint16_t parent_depth, const PendingChild& child,
                  std::uint32_t index_in_field) {
    const int depth = parent_depth + 1;
    if (depth > index_.options.max_depth) {
      throw Error(
          ErrorKind::depth_limit,
          "messages nested deeper than max_depth " + std::to_string(index_.options.max_depth),
          child.span.offset);
    }
    if (index_.messages.size() >= index_.options.max_messages) {
      throw Error(
          ErrorKind::limit_exceeded,
          "more than max_messages (" + std::to_string(index_.options.max_messages) + ") messages",
          child.span.offset);
    }
    MessageRecord record;
    record.offset = child.span.offset;
    record.length = child.span.length;
    record.parent = parent;
    record.field_number = child.field_number;
    record.index_in_field = index_in_field;
    record.kind = child.kind;
    record.depth = static_cast<std::uint16_t>(depth);
    record.merged = child.extra != kNone;
    const auto id = static_cast<std::uint32_t>(index_.messages.size());
    if (record.merged) {
      SpanList spans{child.span};
      spans.insert(spans.end(), extra_spans_[child.extra].begin(), extra_spans_[child.extra].end());
      index_.merged_spans.emplace_back(id, std::move(spans));
    }
    index_.messages.push_back(record);
  }

  static bool shown_by_peek(MessageKind kind, std::uint32_t field) {
    if (kind == MessageKind::ModelProto)
      return field != schema::ModelProto::kFunctions && field != schema::ModelProto::kTrainingInfo;
    if (kind == MessageKind::GraphProto)
      return field == schema::GraphProto::kInput || field == schema::GraphProto::kOutput;
    return true;  // inside a value info: its type
  }

  static bool by_field(const PendingChild& a, const PendingChild& b) {
    return a.field_number < b.field_number;
  }

  ModelIndex& index_;
  IndexScope scope_;
  std::vector<PendingChild> pending_;
  std::vector<std::vector<Span>> extra_spans_;
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
