#pragma once
// The base of every view: a message's byte spans in the model file, decoded field by field when
// a getter is called. Internal; users see the named views in views.hpp and tensor.hpp and the
// ranges of them (ViewRange), and never construct a view themselves.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "onnxmap/detail/span.hpp"
#include "onnxmap/export.hpp"

namespace onnxmap {

template <class View>
class ViewRange;
class Names;

namespace detail {

// The index of an opened model. Defined inside the library; views only carry a pointer to it.
struct ModelIndex;
// The library's way in to views and models (constructing them, reading their index).
struct ViewAccess;

// Views inherit it privately: none of it is part of a view's interface.
class ONNXMAP_API MessageView {
 protected:
  MessageView() = default;
  MessageView(const ModelIndex* index, std::uint32_t record);
  MessageView(const ModelIndex* index, SpanList spans) : index_(index), spans_(std::move(spans)) {}

  [[nodiscard]] bool empty() const noexcept { return spans_.empty(); }
  // Offset in the model file of the message's first byte (for errors).
  [[nodiscard]] std::uint64_t offset() const noexcept {
    return spans_.empty() ? 0 : spans_.front().offset;
  }
  [[nodiscard]] bool has(std::uint32_t number) const;
  // Singular fields: the last occurrence wins.
  [[nodiscard]] std::string_view string_field(std::uint32_t number) const;
  [[nodiscard]] std::optional<std::uint64_t> varint_field(std::uint32_t number) const;
  [[nodiscard]] std::optional<std::uint32_t> fixed32_field(std::uint32_t number) const;
  // Repeated fields, packed or not, in wire order.
  [[nodiscard]] std::vector<std::string_view> strings_field(std::uint32_t number) const;
  [[nodiscard]] Names names_field(std::uint32_t number) const;
  [[nodiscard]] std::vector<std::int64_t> int64s_field(std::uint32_t number) const;
  [[nodiscard]] std::vector<float> floats_field(std::uint32_t number) const;
  // A singular leaf message (all occurrences, merged), and repeated leaf messages.
  [[nodiscard]] SpanList message_field(std::uint32_t number) const;
  [[nodiscard]] std::vector<SpanList> messages_field(std::uint32_t number) const;
  // Which of fields `a` and `b` occurs last on the wire (0: neither): settles a oneof.
  [[nodiscard]] std::uint32_t last_of(std::uint32_t a, std::uint32_t b) const;
  // Indexed children held in field `number`: record ids [first, last).
  [[nodiscard]] std::pair<std::uint32_t, std::uint32_t> children(std::uint32_t number) const;

  const ModelIndex* index_ = nullptr;
  // The message's record in the index; all ones (no record) for leaf messages.
  std::uint32_t record_ = UINT32_MAX;
  SpanList spans_;

 private:
  friend struct ViewAccess;
};

}  // namespace detail

// The indexed children of one field (a graph's nodes, a node's attributes, ...) as a
// random-access range of views, without allocation.
template <class View>
class ViewRange {
 public:
  [[nodiscard]] std::size_t size() const noexcept { return last_ - first_; }
  [[nodiscard]] bool empty() const noexcept { return first_ == last_; }
  [[nodiscard]] View operator[](std::size_t i) const {
    return View(index_, first_ + static_cast<std::uint32_t>(i));
  }

  class iterator {
   public:
    using value_type = View;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    View operator*() const { return View(index_, id_); }
    iterator& operator++() {
      ++id_;
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++id_;
      return old;
    }
    bool operator==(const iterator& other) const { return id_ == other.id_; }

   private:
    friend class ViewRange;
    iterator(const detail::ModelIndex* index, std::uint32_t id) : index_(index), id_(id) {}
    const detail::ModelIndex* index_ = nullptr;
    std::uint32_t id_ = 0;
  };
  [[nodiscard]] iterator begin() const { return {index_, first_}; }
  [[nodiscard]] iterator end() const { return {index_, last_}; }

 private:
  friend struct detail::ViewAccess;
  ViewRange(const detail::ModelIndex* index, std::uint32_t first, std::uint32_t last)
      : index_(index), first_(first), last_(last) {}

  const detail::ModelIndex* index_;
  std::uint32_t first_;
  std::uint32_t last_;
};

// The values of a repeated string field (a node's inputs or outputs, a function's inputs, ...)
// as a forward range of string_view into the model's bytes, decoded while iterating: getting and
// walking it allocates nothing. size() walks the field; to_vector() (or converting
// to std::vector) copies the views out. Valid while the model lives.
class ONNXMAP_API Names {
 public:
  class iterator {
   public:
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using iterator_category = std::forward_iterator_tag;
    iterator() = default;
    std::string_view operator*() const noexcept { return value_; }
    iterator& operator++() {
      owner_->find_next(*this);
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      owner_->find_next(*this);
      return old;
    }
    bool operator==(const iterator& other) const noexcept {
      return pos_ == other.pos_ && span_ == other.span_;
    }

   private:
    friend class Names;
    const Names* owner_ = nullptr;
    std::size_t span_ = 0;            // the span being read
    const std::byte* pos_ = nullptr;  // where the search for the next value starts; null at end
    std::string_view value_;
  };

  [[nodiscard]] iterator begin() const;
  [[nodiscard]] iterator end() const noexcept {
    iterator it;
    it.owner_ = this;
    it.span_ = spans_.size();
    return it;
  }
  [[nodiscard]] std::size_t size() const;
  [[nodiscard]] bool empty() const { return begin() == end(); }
  [[nodiscard]] std::vector<std::string_view> to_vector() const;
  operator std::vector<std::string_view>() const { return to_vector(); }  // NOLINT: implicit
  friend bool operator==(const Names& names, const std::vector<std::string_view>& values) {
    return names.to_vector() == values;
  }

 private:
  friend class detail::MessageView;
  Names(const std::byte* file, detail::SpanList spans, std::uint32_t number)
      : file_(file), spans_(std::move(spans)), number_(number) {}
  // Moves `it` to the next value of the field after its position, or to end().
  void find_next(iterator& it) const;

  const std::byte* file_ = nullptr;
  detail::SpanList spans_;
  std::uint32_t number_ = 0;
};

}  // namespace onnxmap
