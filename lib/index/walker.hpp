#pragma once
// The one field loop of the indexing pass. Every message the pass reads, structural, tensor or
// leaf, is walked by walk_fields: it steps over what needs no attention, reports each field it
// reads to the payload trimmer, checks packed number lists, validates leaf messages in place, and
// hands the rest to the message's handler: indexed message fields (children to record) and the
// fields the handler reads itself (a tensor's dims, name, payload, ...).

#include <cstdint>
#include <vector>

#include "index/field_cursor.hpp"
#include "index/field_roles.hpp"
#include "index/payload_trim.hpp"
#include "onnxmap/detail/span.hpp"
#include "onnxmap/options.hpp"

namespace onnxmap::detail {

// What every walk of one worker of the pass shares: the file, the options, the field table and
// that worker's payload trimmer.
struct PassContext {
  const std::byte* file;
  const OpenOptions& options;
  IndexScope scope;
  PayloadTrimmer& trim;
  const FieldActions& actions = FieldActions::get();
  std::uint64_t page = MappedFile::page_size();

  [[nodiscard]] bool metadata() const noexcept { return scope == IndexScope::metadata; }
};

// A handler says which fields it reads (own_fields: field numbers, any wire type; every field
// when all bits are set) and receives them in field(); child() receives the indexed message
// fields the scope keeps, and leaf() the leaf messages to validate (both with their depth).
// `start_mapped`: the page where the message starts is known to be mapped (its parent's scan read
// it), so reads on that page cannot fault.
template <class Handler>
void walk_fields(PassContext& ctx, Span span, MessageKind kind, int depth, bool start_mapped,
                 Handler& handler);

// Walks a leaf message and everything inside it, so that every varint and length of the file is
// checked once, at open. Throws depth_limit when `depth` exceeds max_depth.
void validate_leaf(PassContext& ctx, Span span, MessageKind kind, int depth);

// Checks the elements of a packed_scalars field (`field` is its LEN form) as the views will read
// them: a varint cut short or a length that is no multiple of the width is the same Error here.
void validate_packed(const std::byte* file, const CursorField& field, std::uint8_t width);

template <class Handler>
void walk_fields(PassContext& ctx, Span span, MessageKind kind, int depth, bool start_mapped,
                 Handler& handler) {
  const std::uint64_t own = handler.own_fields();
  const bool every_type = own == ~std::uint64_t{0};
  const std::uint64_t mask = ctx.actions.message_fields(kind, ctx.metadata()) | own;
  const std::uint64_t first_page = span.offset & ~(ctx.page - 1);
  for_each_message_field(ctx.file, span, mask, every_type, [&](const CursorField& field) {
    const std::uint64_t at = field.tag_offset(ctx.file);
    ctx.trim.passed(at, field.payload_span(ctx.file), start_mapped && at - first_page < ctx.page);
    if (field.number > 63 || ((own >> field.number) & 1U) != 0) handler.field(field);
    if (field.type != wire::WireType::len) return;
    const FieldAction action = ctx.actions(kind, field.number);
    switch (action.role) {
      case FieldRole::other: return;
      case FieldRole::packed_scalars: validate_packed(ctx.file, field, action.scalar_width); return;
      default: break;
    }
    if (ctx.metadata() && !shown_by_peek(kind, field.number)) return;
    if (action.role == FieldRole::leaf) {
      handler.leaf(field.payload_span(ctx.file), action.message, depth + 1);
    } else {
      handler.child(field, action, depth + 1);
    }
  });
}

}  // namespace onnxmap::detail
