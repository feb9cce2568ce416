#include "index/tensor_table.hpp"

#include <array>
#include <charconv>
#include <functional>
#include <string>

#include "index/common_tensor.hpp"
#include "index/field_cursor.hpp"
#include "index/field_roles.hpp"

namespace onnxmap::detail {

namespace {

using TP = schema::TensorProto;

// The external_data entries of a tensor that matter for finding its bytes.
struct ExternalRef {
  std::string_view location;
  std::optional<std::uint64_t> offset;
  std::optional<std::uint64_t> length;
};

std::uint64_t parse_decimal(std::string_view key, std::string_view text, std::uint64_t at) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) {
    throw Error(ErrorKind::bad_tensor,
                "external_data '" + std::string(key) + "' is '" + std::string(text) +
                    "', not a non-negative decimal number",
                at, "external_data");
  }
  return value;
}

// `entry` is one external_data StringStringEntryProto, `at` the offset of its tag.
void read_external_entry(const std::byte* file, Span entry, std::uint64_t at, ExternalRef& ref) {
  std::string_view key;
  std::string_view value;
  for_each_field(file, entry, [&](const CursorField& field) {
    if (field.type != wire::WireType::len) return;
    if (field.number == schema::StringStringEntryProto::kKey) key = wire::as_string(field.bytes());
    if (field.number == schema::StringStringEntryProto::kValue) {
      value = wire::as_string(field.bytes());
    }
  });
  // Later entries with the same key win, as onnx's loader reads them.
  if (key == "location") ref.location = value;
  if (key == "offset") ref.offset = parse_decimal(key, value, at);
  if (key == "length") ref.length = parse_decimal(key, value, at);
}

bool is_typed_data_field(std::uint32_t number) {
  return number == TP::kFloatData || number == TP::kInt32Data || number == TP::kStringData ||
         number == TP::kInt64Data || number == TP::kDoubleData || number == TP::kUint64Data;
}

// A tensor held in a Constant node's attribute is known by the node's output name.
std::string_view constant_output_name(const ModelIndex& index, std::uint32_t tensor) {
  const std::uint32_t attribute = index.parent(tensor);
  if (attribute == kNone || index.kind(attribute) != MessageKind::AttributeProto) return {};
  const std::uint32_t node = index.parent(attribute);
  if (node == kNone || index.kind(node) != MessageKind::NodeProto) return {};
  std::string_view op_type;
  std::string_view first_output;
  bool has_output = false;
  for (const Span& span : index.spans(node)) {
    wire::Reader reader(index.bytes(span), span.offset);
    wire::Field field;
    while (reader.next(field)) {
      if (field.type != wire::WireType::len) continue;
      if (field.number == schema::NodeProto::kOpType) op_type = wire::as_string(field.bytes);
      if (field.number == schema::NodeProto::kOutput && !has_output) {
        first_output = wire::as_string(field.bytes);
        has_output = true;
      }
    }
  }
  return op_type == "Constant" ? first_output : std::string_view{};
}

// Appends the dims a field carries (one varint, or packed); a negative one goes to `fail`
// (which throws, or notes the problem and lets the walk go on) and is left out.
template <class Fail>
void read_dims(const std::byte* file, const CursorField& field, PodTable<std::int64_t>& dims,
               Fail&& fail) {
  const auto check = [&](std::uint64_t v) {
    const auto d = wire::as_int64(v);
    if (d < 0) {
      fail(Error(ErrorKind::bad_tensor, "negative dimension " + std::to_string(d),
                 field.tag_offset(file), "dims"));
      return;
    }
    dims.push_back(d);
  };
  if (field.type == wire::WireType::varint) {
    check(field.value);
  } else if (field.type == wire::WireType::len) {
    const wire::Bytes packed = field.bytes();
    const auto base = static_cast<std::uint64_t>(field.payload - file);
    std::size_t pos = 0;
    while (pos < packed.size()) check(wire::read_varint(packed, pos, base));
  }
}

// Bits per element of data type `data_type` (0 for STRING and for numbers that are no type),
// from a table: the pass asks once per tensor.
constexpr std::int32_t kTableTypes = 64;
// At namespace scope, not a function's static: no guard to check on every call.
const std::array<std::uint8_t, kTableTypes> kElementBits = [] {
  std::array<std::uint8_t, kTableTypes> bits{};
  for (std::int32_t type = 0; type < kTableTypes; ++type) {
    const auto t = traits(static_cast<DataType>(type));
    bits[type] = t ? static_cast<std::uint8_t>(t->bits) : 0;
  }
  return bits;
}();

std::uint32_t element_bits(std::int32_t data_type) noexcept {
  if (data_type >= 0 && data_type < kTableTypes) return kElementBits[data_type];
  const auto t = traits(static_cast<DataType>(data_type));
  return t ? t->bits : 0;
}

}  // namespace

std::optional<std::uint64_t> element_count(std::span<const std::int64_t> dims) {
  std::uint64_t count = 1;
  for (const std::int64_t d : dims) {
    const auto u = static_cast<std::uint64_t>(d);
    if (u != 0 && count > UINT64_MAX / u) return std::nullopt;
    count *= u;
  }
  return count;
}

std::optional<std::uint64_t> packed_byte_size(std::int32_t data_type, std::uint64_t count) {
  const std::uint32_t bits = element_bits(data_type);
  if (bits == 0) return std::nullopt;
  if (count > UINT64_MAX / bits - 7) return std::nullopt;
  return (count * bits + 7) / 8;
}

namespace {

// Indexes the tensor at record `id` when it has the common layout (index/common_tensor.hpp), a
// name of its own, and raw_data holding exactly the bytes its dims and data type need: nearly
// every tensor of a real file. Returns false, having changed nothing, for anything else. Kept
// apart from the general walk, whose bookkeeping (external references, collected errors)
// cost more per tensor than this whole path.
bool index_common_tensor(ModelIndex& index, std::uint32_t id, PayloadTrimmer& trim) {
  const std::size_t dims_begin = index.dims.size();
  CommonTensor common;
  if (!read_common_tensor(index.file.bytes().data(), index.span(id), MappedFile::page_size(),
                          index.dims, common)) {
    return false;
  }
  const std::span<const std::int64_t> dims(index.dims.data() + dims_begin,
                                           index.dims.size() - dims_begin);
  const auto count = element_count(dims);
  const auto expected = count ? packed_byte_size(common.data_type, *count) : std::nullopt;
  if (!common.raw || common.name.empty() || !expected || *expected != common.raw->length ||
      common.data_type == static_cast<std::int32_t>(DataType::string) ||
      index.tensors.size() >= index.options.max_tensors) {
    index.dims.truncate(dims_begin);
    return false;
  }
  trim.passed(common.raw_tag, *common.raw, true);
  TensorRecord& tensor = index.tensors.emplace_back();
  tensor.message = id;
  tensor.name = common.name;
  tensor.data_type = common.data_type;
  tensor.name_hash = static_cast<std::uint32_t>(name_hash(common.name));
  tensor.storage = Storage::raw;
  tensor.payload_offset = common.raw->offset;
  tensor.payload_length = common.raw->length;
  tensor.dims_begin = static_cast<std::uint32_t>(dims_begin);
  tensor.dims_count = static_cast<std::uint32_t>(dims.size());
  return true;
}

}  // namespace

void index_tensor(ModelIndex& index, std::uint32_t id, int depth, PayloadTrimmer& trim) {
  if (index.messages[id].merged == 0 && index_common_tensor(index, id, trim)) return;
  TensorRecord tensor;
  tensor.message = id;
  tensor.dims_begin = static_cast<std::uint32_t>(index.dims.size());
  std::optional<Span> raw;
  std::optional<Span> typed;
  ExternalRef external;
  bool is_external = false;
  std::string_view own_name;
  // The first payload problem, when the options say to collect rather than fail.
  std::optional<Error> problem;
  const auto fail = [&](const Error& error) {
    if (!index.options.collect_payload_errors) throw error;
    if (!problem) problem = error;
  };

  // This walk is also the tensor's share of the indexing pass: the leaf messages it holds
  // (external_data, segment, metadata_props) are validated here; a tensor holds no indexed ones.
  const FieldActions& actions = FieldActions::get();
  const std::uint64_t leaf_fields = actions.message_fields(MessageKind::TensorProto, false);
  const std::byte* file = index.file.bytes().data();
  const int leaf_depth = depth + 1;
  const std::uint64_t page = MappedFile::page_size();
  const auto walk = [&](const Span& span) {
    // Scanning the parent touched the page where the tensor starts.
    const std::uint64_t first_page = span.offset & ~(page - 1);
    for_each_field(file, span, [&](const CursorField& field) {
      const std::uint64_t at = field.tag_offset(file);
      trim.passed(at, field.payload_span(file), at - first_page < page);
      const bool is_len = field.type == wire::WireType::len;
      if (is_len && (field.number > 63 || ((leaf_fields >> field.number) & 1U) != 0)) {
        const FieldAction action = actions(MessageKind::TensorProto, field.number);
        if (action.role != FieldRole::other) {
          validate_leaf(file, field.payload_span(file), action.message, leaf_depth,
                        index.options.max_depth);
        }
      }
      switch (field.number) {
        case TP::kDims:
          // One dim per varint field is how libprotobuf writes them: no call for that.
          if (field.type == wire::WireType::varint && wire::as_int64(field.value) >= 0) {
            index.dims.push_back(wire::as_int64(field.value));
          } else {
            read_dims(file, field, index.dims, fail);
          }
          break;
        case TP::kDataType:
          if (field.type == wire::WireType::varint) tensor.data_type = wire::as_int32(field.value);
          break;
        case TP::kName:
          if (is_len) own_name = wire::as_string(field.bytes());
          break;
        case TP::kRawData:
          if (is_len) raw = field.payload_span(file);
          break;
        case TP::kExternalData:
          if (!is_len) break;
          try {
            read_external_entry(file, field.payload_span(file), field.tag_offset(file), external);
          } catch (const Error& e) {
            fail(e);
          }
          break;
        case TP::kDataLocation:
          // proto2: an unknown enum value is kept aside, not stored in the field.
          if (field.type == wire::WireType::varint && field.value <= 1) {
            is_external = field.value == 1;
          }
          break;
        default:
          if (is_typed_data_field(field.number) && !typed) {
            tensor.typed_field = static_cast<std::uint8_t>(field.number);
            typed = field.payload_span(file);
          }
      }
    });
  };
  for (const Span& span : index.spans(id)) walk(span);
  tensor.dims_count = static_cast<std::uint32_t>(index.dims.size() - tensor.dims_begin);
  // Finds where the elements are and checks their size against dims and data type.
  const auto locate_payload = [&] {
    const std::span<const std::int64_t> dims(index.dims.data() + tensor.dims_begin,
                                             tensor.dims_count);
    const auto count = element_count(dims);
    if (!count)
      throw Error(ErrorKind::bad_tensor, "the product of dims overflows 64 bits",
                  index.messages[id].offset, "dims");
    const auto expected = packed_byte_size(tensor.data_type, *count);
    if (!expected && element_bits(tensor.data_type) > 0) {
      throw Error(ErrorKind::bad_tensor, "the byte size of dims overflows 64 bits",
                  index.messages[id].offset, "dims");
    }

    if (is_external) {
      tensor.storage = Storage::external;
      if (external.location.empty()) {
        throw Error(ErrorKind::bad_tensor, "data_location is EXTERNAL but no 'location' is given",
                    index.messages[id].offset, "external_data");
      }
      tensor.data_file = open_data_file(index, external.location);
      const std::uint64_t file_size = index.data_files[tensor.data_file].file.size();
      const std::uint64_t offset = external.offset.value_or(0);
      if (offset > file_size) {
        throw Error(ErrorKind::out_of_bounds,
                    "external offset " + std::to_string(offset) + " is past the end of '" +
                        std::string(external.location) + "' (" + std::to_string(file_size) +
                        " bytes)",
                    index.messages[id].offset, "external_data");
      }
      const std::uint64_t length = external.length.value_or(file_size - offset);
      if (length > file_size - offset) {
        throw Error(ErrorKind::out_of_bounds,
                    "external range [" + std::to_string(offset) + ", +" + std::to_string(length) +
                        ") runs past the end of '" + std::string(external.location) + "' (" +
                        std::to_string(file_size) + " bytes)",
                    index.messages[id].offset, "external_data");
      }
      tensor.payload_offset = offset;
      tensor.payload_length = length;
    } else if (raw) {
      tensor.storage = Storage::raw;
      tensor.payload_offset = raw->offset;
      tensor.payload_length = raw->length;
      if (tensor.data_type == static_cast<std::int32_t>(DataType::string)) {
        throw Error(ErrorKind::bad_tensor, "a STRING tensor cannot use raw_data", raw->offset,
                    "raw_data");
      }
    } else if (typed) {
      tensor.storage = Storage::typed;
      tensor.payload_offset = typed->offset;
      tensor.payload_length = typed->length;
    }
    if ((tensor.storage == Storage::raw || tensor.storage == Storage::external) && expected &&
        tensor.payload_length != *expected) {
      throw Error(
          ErrorKind::bad_tensor,
          std::to_string(tensor.payload_length) + " bytes, but " + std::to_string(*count) +
              " elements of " + data_type_name(tensor.data_type) + " need " +
              std::to_string(*expected),
          tensor.storage == Storage::raw ? tensor.payload_offset : index.messages[id].offset,
          tensor.storage == Storage::raw ? "raw_data" : "external_data");
    }
  };
  if (!problem) {
    try {
      locate_payload();
    } catch (const Error& e) {
      fail(e);
    }
  }
  const std::string_view alias =
      own_name.empty() ? constant_output_name(index, id) : std::string_view{};
  tensor.name = alias.empty() ? own_name : alias;
  tensor.name_hash = static_cast<std::uint32_t>(name_hash(tensor.name));
  if (index.tensors.size() >= index.options.max_tensors) {
    throw Error(ErrorKind::limit_exceeded,
                "more than max_tensors (" + std::to_string(index.options.max_tensors) + ") tensors",
                index.messages[id].offset);
  }
  if (problem) {
    // The tensor stays listed (name, type, dims) but has no bytes to hand out.
    tensor.storage = Storage::invalid;
    tensor.data_file = kNone;
    tensor.payload_offset = 0;
    tensor.payload_length = 0;
    const std::uint64_t at =
        problem->offset() != Error::kNoOffset ? problem->offset() : index.messages[id].offset;
    const Error located(problem->kind(), problem->detail(), at, problem->field_path());
    index.payload_errors.push_back({static_cast<std::uint32_t>(index.tensors.size()),
                                    located.in_context(index.display_name, index.path(id))});
  }
  index.tensors.push_back(tensor);
}

void build_name_table(ModelIndex& index) {
  std::size_t slots = 16;
  while (slots < 2 * index.tensors.size()) slots *= 2;
  index.name_slots.assign(slots, NameSlot{});
  std::vector<std::uint32_t> last_of_name(index.tensors.size(), kNone);
  // Slots are hit at random, in a table larger than the cache: a tensor's slot is asked for a
  // few tensors before it is probed.
  constexpr std::uint32_t kAhead = 8;
  for (std::uint32_t id = 0; id < index.tensors.size(); ++id) {
    if (id + kAhead < index.tensors.size()) {
      __builtin_prefetch(&index.name_slots[index.tensors[id + kAhead].name_hash & (slots - 1)], 1);
    }
    const TensorRecord& tensor = index.tensors[id];
    for (std::size_t slot = tensor.name_hash & (slots - 1);; slot = (slot + 1) & (slots - 1)) {
      NameSlot& held = index.name_slots[slot];
      if (held.tensor_plus_one == 0) {
        held = {id + 1, tensor.name_hash};
        last_of_name[id] = id;
        break;
      }
      const std::uint32_t first = held.tensor_plus_one - 1;
      if (held.hash == tensor.name_hash && index.tensors[first].name == tensor.name) {
        // Same name again: chain it after the last one seen, keeping breadth-first order.
        index.tensors[last_of_name[first]].next_same_name = id;
        last_of_name[first] = id;
        break;
      }
    }
  }
}

}  // namespace onnxmap::detail
