// The canonical JSON dump, driven by the descriptor table: every field of every message, with
// protobuf's parsing rules (last scalar wins, singular messages merge, oneof members clear each
// other, unknown enum values are unknown fields).

#include <algorithm>
#include <string>
#include <vector>

#include "dump/json_text.hpp"
#include "onnxmap/dump.hpp"
#include "schema/descriptors.hpp"
#include "wire/cursor.hpp"

namespace onnxmap {

namespace {

using schema::EnumKind;
using schema::FieldDescriptor;
using schema::FieldType;
using schema::MessageKind;

// One span of a message's bytes; a message given several times (merged) has several.
struct Piece {
  std::span<const std::byte> bytes;
  std::uint64_t base;
};
using Pieces = std::vector<Piece>;

// One occurrence of a field, and where its payload starts in the file.
struct Occurrence {
  wire::Field field;
  std::uint64_t payload_offset;
};

bool enum_value_known(EnumKind kind, std::uint64_t raw) {
  const std::int32_t value = wire::as_int32(raw);
  if (kind == EnumKind::attribute_type) return value >= 0 && value <= kMaxAttributeType;
  if (kind == EnumKind::data_location) return value == 0 || value == 1;
  return true;
}

std::string_view enum_name(EnumKind kind, std::uint64_t raw) {
  const std::int32_t value = wire::as_int32(raw);
  if (kind == EnumKind::attribute_type) return to_string(static_cast<AttributeType>(value));
  return to_string(static_cast<DataLocation>(value));
}

bool is_payload(MessageKind kind, std::uint32_t number) {
  using TP = schema::TensorProto;
  return kind == MessageKind::TensorProto &&
         (number == TP::kRawData || schema::is_typed_data_field(number));
}

void newline(std::string& out, int indent) {
  out += '\n';
  out.append(static_cast<std::size_t>(2 * indent), ' ');
}

class Dumper {
 public:
  explicit Dumper(const DumpOptions& options) : options_(options) {}

  void message(std::string& out, const Pieces& pieces, MessageKind kind, int depth) {
    if (depth > options_.max_depth) {
      throw Error(ErrorKind::depth_limit,
                  "messages nested deeper than max_depth " + std::to_string(options_.max_depth),
                  pieces.empty() ? Error::kNoOffset : pieces.front().base);
    }
    const auto fields = schema::descriptor(kind).fields;
    const auto buckets = collect(pieces, kind);
    std::vector<std::size_t> order(fields.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return fields[a].number < fields[b].number; });
    out += '{';
    bool first = true;
    for (const std::size_t i : order) {
      if (buckets[i].empty() || (options_.omit_data && is_payload(kind, fields[i].number)))
        continue;
      std::string value;
      try {
        if (!field(value, fields[i], buckets[i], depth)) continue;  // a repeated field, empty
      } catch (const Error& e) {
        throw e.in_context("", fields[i].name);
      }
      if (!first) out += ',';
      first = false;
      newline(out, depth + 1);
      detail::append_json_string(out, fields[i].json_name);
      out += ": ";
      out += value;
    }
    if (!first) newline(out, depth);
    out += '}';
  }

 private:
  // Every occurrence of each known field, in wire order, after protobuf's rules.
  static std::vector<std::vector<Occurrence>> collect(const Pieces& pieces, MessageKind kind) {
    const auto fields = schema::descriptor(kind).fields;
    std::vector<std::vector<Occurrence>> buckets(fields.size());
    for (const Piece& piece : pieces) {
      wire::Cursor cursor(piece.bytes, piece.base);
      while (cursor.next()) {
        const wire::Field& f = cursor.field();
        const auto it = std::find_if(fields.begin(), fields.end(), [&](const FieldDescriptor& d) {
          return d.number == f.number;
        });
        if (it == fields.end() || !schema::wire_type_fits(*it, f.type)) continue;
        if (it->type == FieldType::enum_ && f.type == wire::WireType::varint &&
            !enum_value_known(it->enum_kind, f.value)) {
          continue;  // proto2 keeps an unknown enum value aside, leaving the field as it was
        }
        const auto index = static_cast<std::size_t>(it - fields.begin());
        if (it->oneof != nullptr) {
          // Setting one member of a oneof clears the others.
          for (std::size_t j = 0; j < fields.size(); ++j) {
            if (j != index && fields[j].oneof != nullptr &&
                std::string_view(fields[j].oneof) == it->oneof) {
              buckets[j].clear();
            }
          }
        }
        buckets[index].push_back({f, cursor.payload_span().offset});
      }
    }
    return buckets;
  }

  // Writes the JSON value of one field; false for a repeated field with no elements.
  bool field(std::string& out, const FieldDescriptor& d, const std::vector<Occurrence>& all,
             int depth) {
    if (d.type == FieldType::message) {
      if (!d.repeated) {
        Pieces merged;
        for (const Occurrence& o : all) merged.push_back({o.field.bytes(), o.payload_offset});
        message(out, merged, d.message, depth + 1);
        return true;
      }
      out += '[';
      for (std::size_t i = 0; i < all.size(); ++i) {
        if (i > 0) out += ',';
        newline(out, depth + 2);
        try {
          message(out, {{all[i].field.bytes(), all[i].payload_offset}}, d.message, depth + 2);
        } catch (const Error& e) {
          throw e.in_context("", "[" + std::to_string(i) + "]");
        }
      }
      newline(out, depth + 1);
      out += ']';
      return true;
    }
    std::vector<std::string> values;
    const auto source = d.repeated ? std::span(all) : std::span(all).last(1);
    for (const Occurrence& o : source) scalars(values, d, o);
    if (!d.repeated) {
      out += values.back();
      return true;
    }
    if (values.empty()) return false;
    out += '[';
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (i > 0) out += ',';
      newline(out, depth + 2);
      out += values[i];
    }
    newline(out, depth + 1);
    out += ']';
    return true;
  }

  // The JSON text of each scalar one occurrence carries (several when packed).
  static void scalars(std::vector<std::string>& values, const FieldDescriptor& d,
                      const Occurrence& occurrence) {
    const wire::Field& f = occurrence.field;
    const std::uint64_t at = occurrence.payload_offset;
    std::string text;
    const auto push = [&] { values.push_back(std::move(text)), text.clear(); };
    switch (d.type) {
      case FieldType::int64_:
      case FieldType::uint64_:
      case FieldType::int32_:
      case FieldType::enum_:
        (void)wire::for_each_varint(f, at, [&](std::uint64_t v) {
          if (d.type == FieldType::int64_) text = '"' + std::to_string(wire::as_int64(v)) + '"';
          if (d.type == FieldType::uint64_) text = '"' + std::to_string(v) + '"';
          if (d.type == FieldType::int32_) text = std::to_string(wire::as_int32(v));
          if (d.type == FieldType::enum_) {
            if (!enum_value_known(d.enum_kind, v)) return;
            text = '"' + std::string(enum_name(d.enum_kind, v)) + '"';
          }
          push();
        });
        return;
      case FieldType::float_:
        (void)wire::for_each_fixed32(f, at, [&](std::uint32_t bits) {
          detail::append_float(text, wire::as_float(bits));
          push();
        });
        return;
      case FieldType::double_:
        (void)wire::for_each_fixed64(f, at, [&](std::uint64_t bits) {
          detail::append_double(text, wire::as_double(bits));
          push();
        });
        return;
      case FieldType::string_: detail::append_json_string(text, f.text()); break;
      case FieldType::bytes_: detail::append_base64(text, f.bytes()); break;
      case FieldType::message: return;
    }
    push();
  }

  const DumpOptions& options_;
};

}  // namespace

std::string dump_json(std::span<const std::byte> bytes, MessageKind kind,
                      const DumpOptions& options, std::uint64_t base) {
  std::string out;
  Dumper(options).message(out, {{bytes, base}}, kind, 0);
  out += '\n';
  return out;
}

}  // namespace onnxmap
