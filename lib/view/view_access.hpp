#pragma once
// The library's way in to the public views and models: constructing them over the index and
// reading which index, record and bytes a view stands for. Users have none of this.

#include <cstdint>
#include <utility>

#include "index/model_index.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/tensor.hpp"
#include "onnxmap/views.hpp"

namespace onnxmap::detail {

struct ViewAccess {
  // A view of record `id` (a tensor id for Tensor), or a Type over `spans`.
  template <class View, class Where>
  [[nodiscard]] static View make(const ModelIndex* index, Where where) {
    return View(index, std::move(where));
  }
  // The children [first, last) as a range of views.
  template <class View>
  [[nodiscard]] static ViewRange<View> range(const ModelIndex* index, std::uint32_t first,
                                             std::uint32_t last) {
    return ViewRange<View>(index, first, last);
  }
  template <class View>
  [[nodiscard]] static ViewRange<View> range(const ModelIndex* index,
                                             std::pair<std::uint32_t, std::uint32_t> ids) {
    return ViewRange<View>(index, ids.first, ids.second);
  }
  [[nodiscard]] static const ModelIndex* index(const Model& model) noexcept {
    return model.index_.get();
  }
  // Views inherit MessageView privately; as their friend this reads it through any of them.
  template <class View>
  [[nodiscard]] static const ModelIndex* index(const View& view) noexcept {
    return view.index_;
  }
  template <class View>
  [[nodiscard]] static std::uint32_t record(const View& view) noexcept {
    return view.record_;
  }
  template <class View>
  [[nodiscard]] static const SpanList& spans(const View& view) noexcept {
    return view.spans_;
  }
  // The offset of the view's message in the model file, for reports that point into it (check).
  template <class View>
  [[nodiscard]] static std::uint64_t offset(const View& view) noexcept {
    return view.offset();
  }
  // The tensor's id in the model's tensor table.
  [[nodiscard]] static std::uint32_t tensor(const Tensor& tensor) noexcept {
    return tensor.tensor_;
  }
  // A tensor's payload, or rows of it, checked but neither fetched nor advised.
  [[nodiscard]] static std::span<const std::byte> payload_view(const Tensor& tensor) {
    return tensor.payload_view();
  }
  [[nodiscard]] static std::span<const std::byte> rows_view(const Tensor& tensor,
                                                            std::uint64_t begin,
                                                            std::uint64_t end) {
    return tensor.rows_view(begin, end);
  }
};

}  // namespace onnxmap::detail
