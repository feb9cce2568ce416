#pragma once
// The library's way in to the public views and models, and the only one: constructing them over
// the index and reading which index, record and bytes a view stands for. Users have none of this.

#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "common/span.hpp"
#include "index/model_index.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/tensor.hpp"
#include "onnxmap/views.hpp"

namespace onnxmap::detail {

// The spans of a Type given more than once (views.hpp declares it only).
struct MergedSpans {
  SpanList spans;
};

struct ViewAccess {
  // A view of record `id` (a tensor id for Tensor).
  template <class View>
  [[nodiscard]] static View make(const ModelIndex* index, std::uint32_t id) {
    return View(index, id);
  }
  // A Type over the bytes `spans` (no type when empty).
  [[nodiscard]] static Type type(const ModelIndex* index, SpanList spans) {
    Type type;
    if (spans.empty()) return type;
    type.index_ = index;
    type.offset_ = spans.front().offset;
    type.length_ = spans.front().length;
    if (spans.size() > 1)
      type.merged_ = std::make_shared<const MergedSpans>(MergedSpans{std::move(spans)});
    return type;
  }
  // The children [first, last) as a range of views.
  template <class View>
  [[nodiscard]] static ViewRange<View> range(const ModelIndex* index,
                                             std::pair<std::uint32_t, std::uint32_t> ids) {
    return ViewRange<View>(index, ids.first, ids.second);
  }
  // The values of repeated string field `number` of record `record`.
  [[nodiscard]] static Names names(const ModelIndex* index, std::uint32_t record,
                                   std::uint32_t number) {
    return Names(index, record, number);
  }
  [[nodiscard]] static const ModelIndex* index(const Model& model) noexcept {
    return model.index_.get();
  }
  template <class View>
  [[nodiscard]] static const ModelIndex* index(const View& view) noexcept {
    return view.index_;
  }
  // The view's message record (for a Tensor, its TensorProto's).
  template <class View>
  [[nodiscard]] static std::uint32_t record(const View& view) noexcept {
    return view.record_;
  }
  [[nodiscard]] static std::uint32_t record(const Tensor& tensor) noexcept {
    return tensor.index_->tensors[tensor.tensor_].message;
  }
  // The tensor's id in the model's tensor table.
  [[nodiscard]] static std::uint32_t tensor(const Tensor& tensor) noexcept {
    return tensor.tensor_;
  }
  // The bytes a view stands for: a record's spans, or a Type's.
  template <class View>
  [[nodiscard]] static SpanList spans(const View& view) {
    return index(view)->spans(record(view));
  }
  [[nodiscard]] static SpanList spans(const Type& type) {
    if (type.index_ == nullptr) return {};
    if (type.merged_) return type.merged_->spans;
    return SpanList{ByteRange{type.offset_, type.length_}};
  }
  // The offset of the view's message in the model file, for reports that point into it (check).
  template <class View>
  [[nodiscard]] static std::uint64_t offset(const View& view) noexcept {
    return index(view)->span(record(view)).offset;
  }
};

}  // namespace onnxmap::detail
