#pragma once
// onnxmap.ViewSequence: how the binding lists views (a graph's nodes, inputs and initializers, a
// function's nodes, a model's functions ...). Nothing is made until asked for: a sequence holds
// the model's owner and a source that makes element i's Python object when it is read, so
// len(), one element or a slice cost the same on a graph of three nodes or of a million.
//
// Lifetime: a source holds the model's owner, so a sequence, its slices and its iterators stay
// valid after Model.close() and after the Model object is gone, as Tensors and graph views do.

#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "binding.hpp"

namespace onnxmap::python {

// What a ViewSequence reads. Immutable once made; shared by a sequence and its slices.
class SequenceSource {
 public:
  SequenceSource() = default;
  SequenceSource(const SequenceSource&) = delete;
  SequenceSource& operator=(const SequenceSource&) = delete;
  virtual ~SequenceSource() = default;
  [[nodiscard]] virtual std::size_t size() const = 0;
  // Element i (i < size()) as a new Python object. Reads nothing through the map.
  [[nodiscard]] virtual py::object at(std::size_t i) const = 0;
  // Element i's name, read through the map (call it inside a FrontEndScope); std::nullopt for
  // elements that have no name (training information).
  [[nodiscard]] virtual std::optional<std::string_view> name(std::size_t i) const = 0;
};

// A source over `range` (a ViewRange or a std::vector of views, kept by value): wrap(owner, view)
// makes an element's object, name(view) gives its name or std::nullopt.
template <class Range, class Wrap, class Name>
class RangeSource final : public SequenceSource {
 public:
  RangeSource(Owner owner, Range range, Wrap wrap, Name name)
      : owner_(std::move(owner)),
        range_(std::move(range)),
        wrap_(std::move(wrap)),
        name_(std::move(name)) {}
  [[nodiscard]] std::size_t size() const override { return range_.size(); }
  [[nodiscard]] py::object at(std::size_t i) const override { return wrap_(owner_, range_[i]); }
  [[nodiscard]] std::optional<std::string_view> name(std::size_t i) const override {
    return name_(range_[i]);
  }

 private:
  Owner owner_;
  Range range_;
  Wrap wrap_;
  Name name_;
};

// A new onnxmap.ViewSequence over the whole of `source` (bind_sequence registers the type).
[[nodiscard]] py::object view_sequence(std::shared_ptr<const SequenceSource> source);

// A ViewSequence over `range`: see RangeSource.
template <class Range, class Wrap, class Name>
[[nodiscard]] py::object view_sequence(Owner owner, Range range, Wrap wrap, Name name) {
  return view_sequence(std::make_shared<const RangeSource<Range, Wrap, Name>>(
      std::move(owner), std::move(range), std::move(wrap), std::move(name)));
}

// The name a view is found by in a sequence: its own name() (Node, ValueInfo, Tensor, Function).
inline constexpr auto own_name = [](const auto& view) -> std::optional<std::string_view> {
  return view.name();
};

void bind_sequence(py::module_& m);  // before every part that makes sequences

}  // namespace onnxmap::python
