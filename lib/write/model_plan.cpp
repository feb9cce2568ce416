#include "write/model_plan.hpp"

#include <algorithm>
#include <optional>

#include "onnxmap/tensor.hpp"
#include "schema/descriptors.hpp"
#include "view/view_access.hpp"
#include "wire/cursor.hpp"
#include "wire/wire.hpp"

namespace onnxmap::detail {

namespace {

using TP = schema::TensorProto;

// The fields that say where a tensor's elements are; a moving tensor gets new ones. STRING
// tensors never move, so string_data is not among them.
bool is_data_field(std::uint32_t number) {
  if (number == TP::kStringData) return false;
  return schema::is_typed_data_field(number) || number == TP::kRawData ||
         number == TP::kExternalData || number == TP::kDataLocation;
}

// Where a tensor sits, as onnx's external-data helpers see it: they move (and load back) the
// initializers of the main graph and of its subgraphs and, with convert_attribute, tensors of
// node attributes there; nothing in functions, training_info or sparse tensors.
struct Reach {
  bool reachable = false;
  bool in_attribute = false;
};

Reach reach_of(const ModelIndex& index, std::uint32_t record) {
  const std::uint32_t parent = index.parent(record);
  if (parent == kNone) return {};
  Reach reach{true, index.kind(parent) == MessageKind::AttributeProto};
  if (!reach.in_attribute && index.kind(parent) != MessageKind::GraphProto) return {};
  for (std::uint32_t id = parent; id != kNone; id = index.parent(id)) {
    switch (index.kind(id)) {
      case MessageKind::GraphProto:
      case MessageKind::NodeProto:
      case MessageKind::AttributeProto:
      case MessageKind::ModelProto: break;
      default: return {};
    }
  }
  return reach;
}

class ModelPlanner {
 public:
  ModelPlanner(const Model& model, DataLayout& layout, Plan& plan, SaveResult& result)
      : model_(model),
        index_(*ViewAccess::index(model)),
        layout_(layout),
        plan_(plan),
        result_(result) {}

  void run(const WeightsFrom* weights_from, const std::filesystem::path& model_folder) {
    // A model opened with OpenOptions::collect_payload_errors may hold tensors whose bytes could
    // not be located; writing it would carry the damage into a file that looks sound.
    if (!index_.payload_errors.empty()) throw index_.payload_errors.front().error;
    model_source_ = &plan_.own_source(source_for(index_.file));
    data_sources_.assign(index_.data_files.size(), nullptr);
    if (weights_from != nullptr) {
      std::vector<std::uint32_t> candidates;
      for (std::uint32_t t = 0; t < index_.tensors.size(); ++t) {
        if (layout_.may_go_external(info_of(t))) candidates.push_back(t);
      }
      shared_.emplace(model_, *weights_from, model_folder, candidates);
      shared_->count(result_.shared);
    }
    decide();
    if (layout_.safetensors()) plan_safetensors();
    result_.copied_messages = index_.messages.size() - changed_count_;
    rewrite(0, 0);
  }

 private:
  static std::unique_ptr<SourceFile> source_for(const MappedFile& file) {
    // Read-mode files are in memory already; mapped ones are copied from the file by the kernel.
    if (!file.is_mapped()) return std::make_unique<SourceFile>(file.bytes());
    return std::make_unique<SourceFile>(file.bytes(), *file.reader());
  }

  PayloadInfo info_of(std::uint32_t tensor) const {
    const TensorRecord& t = index_.tensors[tensor];
    const Reach reach = reach_of(index_, t.message);
    const bool movable = reach.reachable && t.has_stored_bytes();
    return {t.name,
            movable ? t.payload_length : 0,
            reach.in_attribute,
            movable,
            tensor,
            static_cast<DataType>(t.data_type),
            std::span<const std::int64_t>(index_.dims.data() + t.dims_begin, t.dims_count)};
  }

  // The safetensors format places every external tensor before any is written. A weights file
  // must hold every initializer (and, with convert_attribute, attribute tensor) but the empty.
  void plan_safetensors() {
    std::vector<PayloadInfo> external;
    for (std::uint32_t t = 0; t < index_.tensors.size(); ++t) {
      const PayloadInfo info = info_of(t);
      if (use_of(t) != Use::own) continue;
      if (layout_.goes_external(info)) {
        external.push_back(info);
      } else if (layout_.weights_only()) {
        refuse_left_out(t);
      }
    }
    layout_.plan_safetensors(external, index_.file.path().filename().string());
  }

  // Which tensors move, and which messages hold one (and so are rebuilt).
  void decide() {
    moving_.assign(index_.tensors.size(), false);
    changed_.assign(index_.messages.size(), false);
    for (std::uint32_t t = 0; t < index_.tensors.size(); ++t) {
      const TensorRecord& record = index_.tensors[t];
      const bool external_now = record.storage == TensorStorage::external;
      const bool external_next = layout_.goes_external(info_of(t));
      // An external tensor moves (its new data file sits beside the new model) unless the
      // layout leaves the bytes in place.
      const bool moves_external = external_now && !layout_.in_place();
      const bool moves = moves_external || use_of(t) != Use::own ||
                         (external_next && record.storage == TensorStorage::raw);
      if (!moves) continue;
      moving_[t] = true;
      ++result_.reencoded_tensors;
      for (std::uint32_t id = record.message; id != kNone && !changed_[id];
           id = index_.parent(id)) {
        changed_[id] = true;
        ++changed_count_;
      }
    }
  }

  void refuse_left_out(std::uint32_t t) const {
    const TensorRecord& record = index_.tensors[t];
    const Reach reach = reach_of(index_, record.message);
    if (!reach.reachable || (reach.in_attribute && !layout_.converts_attributes())) return;
    const Tensor tensor = model_.tensor_at(t);
    if (record.storage == TensorStorage::none || tensor.element_count() == 0) return;
    const auto type = static_cast<DataType>(record.data_type);
    const std::string what = type == DataType::string ? ", which safetensors cannot hold"
                                                      : " held in a typed field, not raw_data, "
                                                        "which onnxmap does not re-encode";
    const auto info = traits(type);
    throw Error(ErrorKind::invalid_argument,
                "tensor '" + std::string(record.name) + "' is " +
                    std::string(info ? info->name : "of an unknown type") + what,
                Error::kNoOffset, tensor.path());
  }

  void rewrite(std::uint32_t record, std::uint32_t out) {
    if (const std::uint32_t tensor = tensor_of(record); tensor != kNone && moving_[tensor]) {
      rewrite_tensor(tensor, out);
      return;
    }
    if (shared_ && record == shared_->graph_record()) {
      plan_.add_bytes(out, shared_->transpose_nodes());  // the Transposes first: nodes are sorted
    }
    // Changed children by the offset of each of their spans; a merged child (a singular message
    // given more than once) is written once, whole, where its first part was.
    struct ChangedSpan {
      std::uint64_t offset;
      std::uint32_t child;
      bool first;
    };
    std::vector<ChangedSpan> changed;
    const auto [first_child, last_child] = index_.child_range(record);
    for (std::uint32_t c = first_child; c < last_child; ++c) {
      if (!changed_[c]) continue;
      bool first = true;
      for (const ByteRange& span : index_.spans(c)) {
        changed.push_back({span.offset, c, first});
        first = false;
      }
    }
    std::sort(changed.begin(), changed.end(),
              [](const ChangedSpan& a, const ChangedSpan& b) { return a.offset < b.offset; });
    const auto find = [&](const wire::Cursor& field) {
      const std::uint64_t payload = field.payload_span().offset;
      const auto it = std::lower_bound(
          changed.begin(), changed.end(), payload,
          [](const ChangedSpan& s, std::uint64_t offset) { return s.offset < offset; });
      const bool found = field.field().is_len() && it != changed.end() && it->offset == payload;
      return found ? it : changed.end();
    };
    for (const ByteRange& span : index_.spans(record)) {
      copy_fields(
          span, out, [&](const wire::Cursor& field) { return find(field) != changed.end(); },
          [&](const wire::Cursor& field) {
            const auto it = find(field);
            const std::uint32_t tensor = tensor_of(it->child);
            if (tensor != kNone && use_of(tensor) == Use::dropped) return;
            if (it->first) rewrite(it->child, plan_.add_child(out, field.field().number));
          });
    }
  }

  // Copies the fields of `span` into message `out` as byte ranges, except those `replaces`
  // picks, which `replace` writes in their place (or drops). Both are given the cursor, at the
  // field.
  template <class Replaces, class Replace>
  void copy_fields(const ByteRange& span, std::uint32_t out, Replaces&& replaces,
                   Replace&& replace) {
    wire::Cursor cursor(index_.bytes(span), span.offset);
    std::uint64_t run = span.offset;
    while (cursor.next()) {
      if (!replaces(cursor)) continue;
      plan_.add_chunk(out, Chunk{model_source_, run, cursor.tag_offset() - run});
      run = cursor.position();
      replace(cursor);
    }
    plan_.add_chunk(out, Chunk{model_source_, run, span.offset + span.length - run});
  }

  // The tensor whose TensorProto is `record`, or kNone.
  std::uint32_t tensor_of(std::uint32_t record) const {
    return index_.kind(record) == MessageKind::TensorProto ? index_.tensor_of_message(record)
                                                           : kNone;
  }

  using Use = SharedWeightsPlan::Use;
  Use use_of(std::uint32_t tensor) const { return shared_ ? shared_->entry(tensor).use : Use::own; }

  // A tensor found in the checkpoint: its own fields, or (replaced by the checkpoint's tensor)
  // the name, type and dims of that one, then external data entries pointing into it.
  void rewrite_shared(std::uint32_t tensor, std::uint32_t out) {
    const SharedWeightsPlan::Entry& entry = shared_->entry(tensor);
    const CheckpointTensor& c = shared_->tensor_of(entry);
    if (entry.use == Use::checkpoint) {
      wire::Writer w;
      for (const std::int64_t d : c.shape) w.field_int64(TP::kDims, d);
      w.field_int32(TP::kDataType, static_cast<std::int32_t>(c.type));
      w.field_string(TP::kName, entry.initializer);
      plan_.add_bytes(out, w.bytes());
    } else {
      copy_own_fields(tensor, out);
    }
    ++result_.external_tensors;
    DataLayout::append_shared(plan_, out, shared_->location_of(entry), c.begin, c.length, {});
  }

  void copy_own_fields(std::uint32_t tensor, std::uint32_t out) {
    for (const ByteRange& span : index_.spans(index_.tensors[tensor].message)) {
      copy_fields(
          span, out, [](const wire::Cursor& field) { return is_data_field(field.field().number); },
          [](const wire::Cursor&) {});
    }
  }

  void rewrite_tensor(std::uint32_t tensor, std::uint32_t out) {
    if (use_of(tensor) != Use::own) {
      rewrite_shared(tensor, out);
      return;
    }
    const TensorRecord& t = index_.tensors[tensor];
    copy_own_fields(tensor, out);
    // A checksum stays true wherever the bytes go; location, offset and length are rewritten.
    const auto entries = model_.tensor_at(tensor).external_data();
    std::vector<KeptEntry> kept;
    for (const StringStringEntry& e : entries) {
      if (e.key == "checksum") kept.push_back({e.key, e.value});
    }
    Chunk payload{model_source_, t.payload_offset, t.payload_length};
    if (t.storage == TensorStorage::external) {
      const SourceFile*& source = data_sources_[t.data_file];
      if (source == nullptr)
        source = &plan_.own_source(source_for(index_.data_files[t.data_file].file));
      payload.source = source;
    }
    const PayloadInfo info = info_of(tensor);
    if (layout_.goes_external(info)) {
      ++result_.external_tensors;
      if (shared_) {
        ++result_.shared.own.tensors;
        result_.shared.own.bytes += payload.size;
      }
    }
    layout_.append_data(plan_, out, info, payload, kept);
  }

  const Model& model_;
  const ModelIndex& index_;
  DataLayout& layout_;
  Plan& plan_;
  SaveResult& result_;
  const SourceFile* model_source_ = nullptr;
  std::vector<const SourceFile*> data_sources_;
  std::vector<bool> moving_;
  std::vector<bool> changed_;
  std::uint64_t changed_count_ = 0;
  std::optional<SharedWeightsPlan> shared_;
};

}  // namespace

void plan_model(const Model& model, DataLayout& layout, Plan& plan, SaveResult& result,
                const WeightsFrom* weights_from, const std::filesystem::path& model_folder) {
  ModelPlanner(model, layout, plan, result).run(weights_from, model_folder);
}

}  // namespace onnxmap::detail
