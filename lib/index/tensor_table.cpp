#include "index/tensor_table.hpp"

#include <stdexcept>
#include <string>

#include "index/tensor_fields.hpp"

namespace onnxmap::detail {

namespace {

// A tensor held in a Constant node's attribute is known by the node's output name.
std::string_view constant_output_name(const ModelIndex& index, std::uint32_t tensor) {
  const std::uint32_t attribute = index.parent(tensor);
  if (attribute == kNone || index.kind(attribute) != MessageKind::AttributeProto) return {};
  const std::uint32_t node = index.parent(attribute);
  if (node == kNone || index.kind(node) != MessageKind::NodeProto) return {};
  std::string_view op_type;
  std::string_view first_output;
  bool has_output = false;
  const std::byte* file = index.file.bytes().data();
  for (const Span& span : index.spans(node)) {
    for_each_field(file, span, [&](const CursorField& field) {
      if (field.type != wire::WireType::len) return;
      if (field.number == schema::NodeProto::kOpType) op_type = wire::as_string(field.bytes());
      if (field.number == schema::NodeProto::kOutput && !has_output) {
        first_output = wire::as_string(field.bytes());
        has_output = true;
      }
    });
  }
  return op_type == "Constant" ? first_output : std::string_view{};
}

// Reads the fields of TensorProto record `id`: on the fast path when it has the common layout,
// else by the general walk, which also validates the leaf messages it holds.
TensorCollector collect_fields(const ModelIndex& index, PassContext& ctx, std::uint32_t id,
                               int depth, PodTable<std::int64_t>& dims) {
  TensorCollector collector(ctx, dims, ctx.options.collect_payload_errors);
  if (index.messages[id].merged == 0 &&
      read_common_tensor(ctx.file, index.span(id), ctx.page, dims, collector.fields)) {
    if (collector.fields.raw)
      ctx.trim.passed(collector.fields.raw_tag, *collector.fields.raw, true);
    return collector;
  }
  // Scanning the parent touched the page where the tensor starts.
  for (const Span& span : index.spans(id))
    walk_fields(ctx, span, MessageKind::TensorProto, depth, true, collector);
  return collector;
}

}  // namespace

void index_tensor(const ModelIndex& index, PassContext& ctx, std::uint32_t id, int depth,
                  const OpenDataFile& open_data_file, TensorSlots& slots, LevelOutput& out) {
  TensorRecord tensor;
  tensor.message = id;
  tensor.dims_begin = static_cast<std::uint32_t>(out.dims.size());
  TensorCollector collector = collect_fields(index, ctx, id, depth, out.dims);
  tensor.dims_count = static_cast<std::uint32_t>(out.dims.size() - tensor.dims_begin);
  tensor.data_type = collector.fields.data_type;
  tensor.typed_field = collector.fields.typed_field;
  const std::uint64_t offset = index.messages[id].offset;
  std::optional<Error> problem = std::move(collector.problem);
  if (!problem) {
    const std::span<const std::int64_t> dims(out.dims.data() + tensor.dims_begin,
                                             tensor.dims_count);
    auto located = locate_payload(collector.fields, dims, offset, open_data_file);
    if (auto* error = std::get_if<Error>(&located)) {
      if (!ctx.options.collect_payload_errors) throw *error;
      problem = std::move(*error);
    } else {
      const Payload& payload = std::get<Payload>(located);
      tensor.storage = payload.storage;
      tensor.data_file = payload.data_file;
      tensor.payload_offset = payload.offset;
      tensor.payload_length = payload.length;
    }
  }
  const std::string_view own_name = collector.fields.name;
  const std::string_view alias =
      own_name.empty() ? constant_output_name(index, id) : std::string_view{};
  tensor.name = alias.empty() ? own_name : alias;
  tensor.name_hash = static_cast<std::uint32_t>(name_hash(tensor.name));
  if (slots.next >= ctx.options.max_tensors) {
    throw Error(ErrorKind::limit_exceeded,
                "more than max_tensors (" + std::to_string(ctx.options.max_tensors) + ") tensors",
                offset);
  }
  if (slots.next >= slots.end)
    throw std::logic_error("onnxmap: a level has more tensors than counted");
  if (problem) {
    // The tensor stays listed (name, type, dims) but has no bytes to hand out.
    tensor.storage = TensorStorage::invalid;
    tensor.data_file = kNone;
    tensor.payload_offset = 0;
    tensor.payload_length = 0;
    const std::uint64_t at = problem->offset() != Error::kNoOffset ? problem->offset() : offset;
    const Error located(problem->kind(), problem->detail(), at, problem->field_path());
    out.payload_errors.push_back(
        {slots.next, located.in_context(index.display_name, index.path(id))});
  }
  slots.hashes[slots.next] = tensor.name_hash;
  slots.table[slots.next++] = tensor;
}

}  // namespace onnxmap::detail
