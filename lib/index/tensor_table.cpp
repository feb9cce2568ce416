#include "index/tensor_table.hpp"

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
  for (const ByteRange& span : index.spans(node)) {
    wire::Cursor cursor(index.file.bytes().data(), span);
    while (cursor.next()) {
      const wire::Field& field = cursor.field();
      if (field.type != wire::WireType::len) continue;
      if (field.number == schema::NodeProto::kOpType) op_type = field.text();
      if (field.number == schema::NodeProto::kOutput && !has_output) {
        first_output = field.text();
        has_output = true;
      }
    }
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
    if (collector.fields.raw) {
      ctx.trim.passed(collector.fields.raw_tag, *collector.fields.raw, true);
    }
    return collector;
  }
  // Scanning the parent touched the page where the tensor starts.
  for (const ByteRange& span : index.spans(id)) {
    walk_fields(ctx, span, MessageKind::TensorProto, depth, FirstPage::mapped, collector);
  }
  return collector;
}

}  // namespace

void index_tensor(ModelIndex& index, PassContext& ctx, std::uint32_t id, int depth,
                  PodTable<std::uint32_t>& name_hashes) {
  const auto tensor_id = static_cast<std::uint32_t>(index.tensors.size());
  const std::uint64_t offset = index.messages[id].offset;
  TensorRecord tensor;
  tensor.message = id;
  tensor.dims_begin = static_cast<std::uint32_t>(index.dims.size());
  TensorCollector collector = collect_fields(index, ctx, id, depth, index.dims);
  tensor.dims_count = static_cast<std::uint32_t>(index.dims.size() - tensor.dims_begin);
  tensor.data_type = collector.fields.data_type;
  tensor.typed_field = collector.fields.typed_field;
  std::optional<Error> problem = std::move(collector.problem);
  if (!problem) {
    const std::span<const std::int64_t> dims(index.dims.data() + tensor.dims_begin,
                                             tensor.dims_count);
    // Made only for external tensors: building a std::function per tensor showed in the pass.
    OpenDataFile open;
    if (collector.fields.is_external) {
      open = [&index](std::string_view location) {
        const std::uint32_t file = open_data_file(index, location);
        return DataFileRef{file, index.data_files[file].file.size()};
      };
    }
    auto located = locate_payload(collector.fields, dims, offset, open);
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
  tensor.name = collector.fields.name;
  tensor.name_hash = static_cast<std::uint32_t>(name_hash(tensor.name));
  if (tensor_id >= ctx.options.max_tensors) {
    throw Error(ErrorKind::limit_exceeded,
                "more than max_tensors (" + std::to_string(ctx.options.max_tensors) + ") tensors",
                offset);
  }
  if (problem) {
    // The tensor stays listed (name, type, dims) but has no bytes to hand out.
    tensor.storage = TensorStorage::invalid;
    tensor.data_file = kNone;
    tensor.payload_offset = 0;
    tensor.payload_length = 0;
    const std::uint64_t at = problem->offset() != Error::kNoOffset ? problem->offset() : offset;
    const Error located(problem->kind(), problem->detail(), at, problem->field_path());
    index.payload_errors.push_back(
        {tensor_id, located.in_context(index.display_name, index.path(id))});
  }
  name_hashes.push_back(tensor.name_hash);
  index.tensors.push_back(tensor);
}

void name_constants(ModelIndex& index, PodTable<std::uint32_t>& name_hashes) {
  // Unnamed tensors are found by their hash, four bytes each, not by reading every record.
  const auto unnamed_hash = static_cast<std::uint32_t>(name_hash({}));
  for (std::uint32_t id = 0; id < index.tensors.size(); ++id) {
    if (name_hashes[id] != unnamed_hash) continue;
    TensorRecord& tensor = index.tensors[id];
    if (!tensor.name.empty()) continue;
    const std::string_view alias = constant_output_name(index, tensor.message);
    if (alias.empty()) continue;
    tensor.name = alias;
    tensor.name_hash = static_cast<std::uint32_t>(name_hash(alias));
    name_hashes[id] = tensor.name_hash;
  }
}

}  // namespace onnxmap::detail
