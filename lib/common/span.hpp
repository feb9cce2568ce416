#pragma once
// The byte ranges of a message of the model file, as the cursor, the index and the views read them:
// beneath them all, so none includes a layer above it for them.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "onnxmap/byte_range.hpp"

namespace onnxmap::detail {

// A message's bytes: one span, or several when a singular message field was given more than
// once (protobuf merges them). One span, the common case, is held without allocating.
class SpanList {
 public:
  SpanList() = default;
  SpanList(std::initializer_list<ByteRange> spans) {
    for (const ByteRange& span : spans) push_back(span);
  }

  void push_back(const ByteRange& span) {
    if (size() == 0) {
      first_ = span;
      has_first_ = true;
      return;
    }
    if (more_.empty()) more_.push_back(first_);
    more_.push_back(span);
  }
  [[nodiscard]] std::size_t size() const noexcept {
    return more_.empty() ? static_cast<std::size_t>(has_first_) : more_.size();
  }
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }
  [[nodiscard]] const ByteRange* begin() const noexcept {
    return more_.empty() ? &first_ : more_.data();
  }
  [[nodiscard]] const ByteRange* end() const noexcept { return begin() + size(); }
  [[nodiscard]] const ByteRange& front() const noexcept { return *begin(); }
  // Spans the list holds room for (1 inline, then its heap buffer).
  [[nodiscard]] std::size_t capacity() const noexcept {
    return more_.empty() ? 1 : more_.capacity();
  }

 private:
  ByteRange first_{};
  bool has_first_ = false;
  std::vector<ByteRange> more_;  // every span, once there are two or more
};

}  // namespace onnxmap::detail
