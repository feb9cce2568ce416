#pragma once
// The one field loop of the indexing pass. Every message the pass reads, structural, tensor or
// leaf, is walked by walk_fields over the wire cursor: it steps over what needs no attention,
// reports each field it reads to the payload trimmer, checks packed number lists, validates leaf
// messages in place, and hands the rest to the message's handler: indexed message fields
// (children to record) and the fields the handler reads itself (a tensor's dims, name, ...).

#include <cstdint>

#include "common/span.hpp"
#include "index/field_roles.hpp"
#include "index/payload_trim.hpp"
#include "onnxmap/options.hpp"
#include "wire/cursor.hpp"

namespace onnxmap::detail {

// What every walk of the pass shares: the file, the options, the field table and the payload
// trimmer.
struct PassContext {
  const std::byte* file;
  const OpenOptions& options;
  IndexScope scope;
  PayloadTrimmer& trim;
  const FieldActions& actions = FieldActions::get();
  std::uint64_t page = MappedFile::page_size();

  [[nodiscard]] bool metadata() const noexcept { return scope == IndexScope::metadata; }
  // Where a field's payload is in the file (empty where a scalar starts).
  [[nodiscard]] ByteRange span_of(const wire::Field& field) const noexcept {
    return {static_cast<std::uint64_t>(field.payload - file), field.bytes().size()};
  }
  [[nodiscard]] std::uint64_t offset_of(const std::byte* at) const noexcept {
    return static_cast<std::uint64_t>(at - file);
  }
};

// Whether the page where a walked message starts was read before the walk (its parent's scan
// read its tag there): reads on that page cannot fault, which the payload trimmer wants to know.
enum class FirstPage : std::uint8_t { maybe_unmapped, mapped };

// Handler::own_fields() returns kEveryField for a handler that reads every field itself.
inline constexpr std::uint64_t kEveryField = ~std::uint64_t{0};

// The fields a walk stops at: those whose number has its bit set in `mask` (numbers past 63
// always count), of wire type LEN unless `every_type`. The rest are only stepped over.
struct WantedFields {
  std::uint64_t mask;
  bool every_type;

  [[nodiscard]] bool operator()(std::uint32_t number, wire::WireType type) const noexcept {
    return (every_type || type == wire::WireType::len) &&
           (number > 63 || ((mask >> number) & 1U) != 0);
  }
};

// A handler says which fields it reads (own_fields: a bit per field number below 64, LEN fields
// only, or kEveryField) and receives them in field(); child() receives the indexed message
// fields the scope keeps, and leaf() the leaf messages to validate (both with their depth).
template <class Handler>
void walk_fields(PassContext& ctx, ByteRange span, MessageKind kind, int depth,
                 FirstPage first_page, Handler& handler);

// Walks a leaf message and everything inside it, so that every varint and length of the file is
// checked once, at open. Throws depth_limit when `depth` exceeds max_depth.
void validate_leaf(PassContext& ctx, ByteRange span, MessageKind kind, int depth);

// Checks the elements of a packed_scalars field (`field` is its LEN form) as the views will read
// them: a varint cut short or a length that is no multiple of the width is the same Error here.
void validate_packed(const PassContext& ctx, const wire::Field& field, std::uint8_t width);

template <class Handler>
void walk_fields(PassContext& ctx, ByteRange span, MessageKind kind, int depth,
                 FirstPage first_page, Handler& handler) {
  const std::uint64_t own = handler.own_fields();
  const WantedFields wanted{ctx.actions.message_fields(kind, ctx.metadata()) | own,
                            own == kEveryField};
  const std::uint64_t page_start = span.offset & ~(ctx.page - 1);
  wire::Cursor cursor(ctx.file, span);
  while (cursor.next_wanted(wanted)) {
    // By reference, not a copy: a copy would read back, wider, what the cursor has just stored
    // member by member, which stalls store forwarding on every field the walk stops at.
    const wire::Field& field = cursor.field();
    const std::uint64_t at = ctx.offset_of(field.tag);
    const bool known_mapped = first_page == FirstPage::mapped && at - page_start < ctx.page;
    ctx.trim.passed(at, ctx.span_of(field), known_mapped);
    if (field.number > 63 || ((own >> field.number) & 1U) != 0) handler.field(field);
    if (field.type != wire::WireType::len) continue;
    const FieldAction action = ctx.actions(kind, field.number);
    if (action.role == FieldRole::other) continue;
    if (action.role == FieldRole::packed_scalars) {
      validate_packed(ctx, field, action.scalar_width);
      continue;
    }
    if (ctx.metadata() && !shown_by_peek(kind, field.number)) continue;
    if (action.role == FieldRole::leaf) {
      handler.leaf(ctx.span_of(field), action.message, depth + 1);
    } else {
      handler.child(field, action, depth + 1);
    }
  }
}

}  // namespace onnxmap::detail
