#include "index/walker.hpp"

#include <string>

namespace onnxmap::detail {

namespace {

// A leaf message in the walk: what it holds is queued, not recursed into, so that no depth
// within max_depth (up to kMaxDepthCeiling) can overflow the thread's stack.
struct PendingLeaf {
  ByteRange span;
  MessageKind kind;
  int depth;
};

class LeafHandler {
 public:
  LeafHandler(const PassContext& ctx, std::vector<PendingLeaf>& pending)
      : ctx_(ctx), pending_(pending) {}
  [[nodiscard]] static std::uint64_t own_fields() noexcept { return 0; }
  void field(const wire::Field& /*field*/) {}
  void leaf(ByteRange span, MessageKind kind, int depth) {
    pending_.push_back({span, kind, depth});
  }
  // Inside a leaf message, an indexed kind is validated like a leaf, not recorded.
  void child(const wire::Field& field, const FieldAction& action, int depth) {
    pending_.push_back({ctx_.span_of(field), action.message, depth});
  }

 private:
  const PassContext& ctx_;
  std::vector<PendingLeaf>& pending_;
};

}  // namespace

void validate_leaf(PassContext& ctx, ByteRange span, MessageKind kind, int depth) {
  // Everything inside a leaf is checked, whatever the scope.
  PassContext leaf_ctx{ctx.file, ctx.options, IndexScope::full, ctx.trim};
  std::vector<PendingLeaf> pending{{span, kind, depth}};
  LeafHandler handler(leaf_ctx, pending);
  while (!pending.empty()) {
    const PendingLeaf leaf = pending.back();
    pending.pop_back();
    if (leaf.depth > ctx.options.max_depth) {
      throw Error(ErrorKind::depth_limit,
                  "messages nested deeper than max_depth " + std::to_string(ctx.options.max_depth),
                  leaf.span.offset);
    }
    walk_fields(leaf_ctx, leaf.span, leaf.kind, leaf.depth, FirstPage::maybe_unmapped, handler);
  }
}

void validate_packed(const PassContext& ctx, const wire::Field& field, std::uint8_t width) {
  const ByteRange span = ctx.span_of(field);
  if (width == 0) {
    wire::for_each_packed_varint(field.bytes(), span.offset, [](std::uint64_t /*value*/) {});
    return;
  }
  // Only a trailing partial element can be wrong; reading it gives the views' own error.
  const wire::Bytes bytes = field.bytes();
  std::size_t pos = bytes.size() - bytes.size() % width;
  if (pos == bytes.size()) return;
  if (width == 4) (void)wire::read_fixed32(bytes, pos, span.offset);
  if (width == 8) (void)wire::read_fixed64(bytes, pos, span.offset);
}

}  // namespace onnxmap::detail
