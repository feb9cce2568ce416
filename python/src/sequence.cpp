// onnxmap.ViewSequence (sequence.hpp): a read-only sequence whose elements are made when read.
// It behaves as the list it replaces where users relied on one: len(), indexing (negative
// too, IndexError past the end), slicing (a ViewSequence again), iteration, reversed(), `in`,
// index() and count(), == with a list or another ViewSequence, `+` giving a list, a list's repr.
// Besides, a str finds an element by name: seq[name], name in seq, seq.index(name).

#include <limits>
#include <string>

#include "sequence.hpp"

namespace onnxmap::python {

namespace {

// The elements a sequence shows: source elements start, start + step, ... (length of them).
class ViewSequence {
 public:
  explicit ViewSequence(std::shared_ptr<const SequenceSource> source)
      : source_(std::move(source)), length_(static_cast<py::ssize_t>(source_->size())) {}

  [[nodiscard]] py::ssize_t size() const { return length_; }
  // Element i, 0 <= i < size().
  [[nodiscard]] py::object at(py::ssize_t i) const { return source_->at(source_index(i)); }
  // Element i's name, read through the map (inside a FrontEndScope).
  [[nodiscard]] std::optional<std::string_view> name(py::ssize_t i) const {
    return source_->name(source_index(i));
  }
  // Python's index i (negative counts from the end) as a position; IndexError outside.
  [[nodiscard]] py::ssize_t position(py::ssize_t i) const {
    const py::ssize_t at = i < 0 ? i + length_ : i;
    if (at < 0 || at >= length_) throw py::index_error("ViewSequence index out of range");
    return at;
  }
  // The elements `slice` picks, as a sequence over the same source.
  [[nodiscard]] ViewSequence sliced(const py::slice& slice) const {
    py::ssize_t start = 0;
    py::ssize_t stop = 0;
    py::ssize_t step = 0;
    py::ssize_t count = 0;
    if (!slice.compute(length_, &start, &stop, &step, &count)) throw py::error_already_set();
    ViewSequence out = *this;
    out.start_ = start_ + start * step_;
    out.step_ = count > 1 ? step_ * step : 1;  // |step| < length_ then: no overflow
    out.length_ = count;
    return out;
  }
  // The position of the first element named `wanted` at or after `from`, or -1.
  [[nodiscard]] py::ssize_t find(std::string_view wanted, py::ssize_t from = 0) const {
    for (py::ssize_t i = from; i < length_; ++i) {
      if (name(i) == wanted) return i;
    }
    return -1;
  }

 private:
  [[nodiscard]] std::size_t source_index(py::ssize_t i) const {
    return static_cast<std::size_t>(start_ + i * step_);
  }

  std::shared_ptr<const SequenceSource> source_;
  py::ssize_t start_ = 0;
  py::ssize_t step_ = 1;
  py::ssize_t length_;
};

struct SequenceIterator {
  ViewSequence sequence;
  py::ssize_t next = 0;
};

py::list to_list(const ViewSequence& s) {
  py::list out(s.size());
  for (py::ssize_t i = 0; i < s.size(); ++i) {
    PyList_SET_ITEM(out.ptr(), i, s.at(i).release().ptr());  // steals the new reference
  }
  return out;
}

// `other` as a list when a list or ViewSequence is the other side of == or +, else nullopt.
std::optional<py::list> comparable(const py::object& other) {
  if (py::isinstance<py::list>(other)) return other.cast<py::list>();
  if (py::isinstance<ViewSequence>(other)) return to_list(other.cast<const ViewSequence&>());
  return std::nullopt;
}

// The first position in [from, to) holding `value`: an element whose name is the str `value`,
// or an element == `value` (as a list's index() compares); -1 if none. 0 <= from, to <= size.
py::ssize_t position_of(const ViewSequence& s, const py::object& value, py::ssize_t from,
                        py::ssize_t to) {
  if (py::isinstance<py::str>(value)) {
    const py::ssize_t found = s.find(value.cast<std::string>(), from);
    return found < to ? found : -1;
  }
  for (py::ssize_t i = from; i < to; ++i) {
    if (s.at(i).equal(value)) return i;
  }
  return -1;
}

// A bound of index(value, start, stop) as list.index takes it: negative from the end, clamped.
py::ssize_t clamped(py::ssize_t bound, py::ssize_t size) {
  if (bound < 0) bound += size;
  return bound < 0 ? 0 : (bound > size ? size : bound);
}

py::object item_at(const ViewSequence& s, py::ssize_t i) {
  return s.at(s.position(i));
}

py::object item_named(const ViewSequence& s, const std::string& name) {
  const py::ssize_t found = s.find(name);
  if (found < 0) throw py::key_error(name);
  return s.at(found);
}

bool contains(const ViewSequence& s, const py::object& value) {
  return position_of(s, value, 0, s.size()) >= 0;
}

py::ssize_t index_of(const ViewSequence& s, const py::object& value, py::ssize_t start,
                     py::ssize_t stop) {
  const py::ssize_t found =
      position_of(s, value, clamped(start, s.size()), clamped(stop, s.size()));
  if (found < 0) throw py::value_error(py::repr(value).cast<std::string>() + " is not in it");
  return found;
}

py::ssize_t count_of(const ViewSequence& s, const py::object& value) {
  py::ssize_t count = 0;
  for (py::ssize_t i = position_of(s, value, 0, s.size()); i >= 0;
       i = position_of(s, value, i + 1, s.size())) {
    ++count;
  }
  return count;
}

// A list's repr, the first kShown elements and how many more when it is longer.
std::string sequence_repr(const ViewSequence& s) {
  constexpr py::ssize_t kShown = 10;
  std::string out = "[";
  for (py::ssize_t i = 0; i < s.size() && i < kShown; ++i) {
    if (i > 0) out += ", ";
    out += py::repr(s.at(i)).cast<std::string>();
  }
  if (s.size() > kShown) out += ", ... " + std::to_string(s.size() - kShown) + " more";
  return out + "]";
}

void bind_iterator(py::module_& m) {
  ScopedClass<SequenceIterator>(m, "_ViewSequenceIterator")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", [](SequenceIterator& it) {
        if (it.next >= it.sequence.size()) throw py::stop_iteration();
        return it.sequence.at(it.next++);
      });
}

void bind_operators(ScopedClass<ViewSequence>& c) {
  c.def("__eq__",
        [](const ViewSequence& s, const py::object& other) -> py::object {
          const auto list = comparable(other);
          if (!list) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
          return py::bool_(py::len(*list) == static_cast<std::size_t>(s.size()) &&
                           to_list(s).equal(*list));
        })
      .def("__add__",
           [](const ViewSequence& s, const py::object& other) -> py::object {
             const auto list = comparable(other);
             if (!list) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
             return to_list(s).attr("__add__")(*list);
           })
      .def("__radd__", [](const ViewSequence& s, const py::object& other) -> py::object {
        const auto list = comparable(other);
        if (!list) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
        return list->attr("__add__")(to_list(s));
      });
  // Lists are unhashable, and so is a sequence that compares equal to one (Python's != is the
  // inverse of this __eq__).
  c.unscoped().attr("__hash__") = py::none();
}

}  // namespace

py::object view_sequence(std::shared_ptr<const SequenceSource> source) {
  return py::cast(ViewSequence(std::move(source)));
}

void bind_sequence(py::module_& m) {
  ScopedClass<ViewSequence> c(m, "ViewSequence",
                              "A read-only sequence of views (Node, ValueInfo, Tensor ...), each "
                              "made when read. A str finds an element by name.");
  c.def("__len__", &ViewSequence::size)
      .def("__getitem__", &item_at, py::arg("index"))
      .def("__getitem__", &ViewSequence::sliced, py::arg("index"))
      .def("__getitem__", &item_named, py::arg("index"),
           "The first element named `name`; KeyError if there is none.")
      .def("__iter__", [](const ViewSequence& s) { return SequenceIterator{s}; })
      .def("__contains__", &contains, py::arg("value"))
      .def("index", &index_of, py::arg("value"), py::arg("start") = 0,
           py::arg("stop") = std::numeric_limits<py::ssize_t>::max(),
           "The first position of `value` (an element, or an element's name); ValueError if "
           "absent.")
      .def("count", &count_of, py::arg("value"))
      .def("__repr__", &sequence_repr);
  c.unscoped().def_static(
      "__class_getitem__",
      [](const py::object& item) {
        return py::module_::import("types").attr("GenericAlias")(
            py::module_::import("onnxmap._onnxmap").attr("ViewSequence"), item);
      },
      py::arg("item"));
  bind_operators(c);
  bind_iterator(m);
}

}  // namespace onnxmap::python
