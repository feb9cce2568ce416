#pragma once
// What the parts of the Python binding share. The binding uses only the public headers, like any
// user of the library.
//
// Lifetime: every Python object that shows bytes of a model (a Tensor, a graph view, a NumPy
// array) holds a shared_ptr to the model. Model.close() drops only the Model object's own
// reference, so the mapping is unmapped when the last array or view over it is gone, never while
// one can still read it.

#include <pybind11/pybind11.h>

#include <filesystem>
#include <memory>
#include <onnxmap/onnxmap.hpp>
#include <string>

namespace onnxmap::python {

namespace py = pybind11;

using ModelPtr = std::shared_ptr<const Model>;
// Anything that keeps a model's bytes alive: a Model, or a ModelSummary from peek().
using Owner = std::shared_ptr<const void>;

// A view of the library (Graph, Node, ValueInfo, Tensor ...) with what keeps its bytes alive.
template <class View>
struct Held {
  Owner owner;
  View view;
};

// The open options from keyword arguments (load="map"|"read", max_depth, max_tensors,
// max_messages, allow_external_outside_folder, collect_payload_errors), removed from `kwargs` as
// they are read. New load strategies are added in load_mode() alone.
[[nodiscard]] OpenOptions take_open_options(py::dict& kwargs);
// Moves the keyword argument `key`, when given, from `kwargs` into `value`.
template <class T>
void take_kwarg(py::dict& kwargs, const char* key, T& value) {
  if (!kwargs.contains(key)) return;
  value = kwargs[key].cast<T>();
  PyDict_DelItemString(kwargs.ptr(), key);
}
// Raises TypeError naming the first keyword argument left in `kwargs`.
void reject_unknown(const py::dict& kwargs, const char* function);

// Opens a model with the GIL released.
[[nodiscard]] ModelPtr open_model(const std::filesystem::path& path, const OpenOptions& options);

// The model of an onnxmap.Model object (an onnxmap.Error if it was closed).
[[nodiscard]] ModelPtr model_of(const py::handle& model);

// An onnxmap::Error raised from Python code of the binding (closed model, bad argument).
[[noreturn]] void raise_invalid(const std::string& detail);

void bind_errors(py::module_& m);
void bind_tensor(py::module_& m);
void bind_graph(py::module_& m);
void bind_model(py::module_& m);
void bind_files(py::module_& m);  // peek, check, save, convert

// Python objects for views, shared by the parts.
[[nodiscard]] py::object wrap_tensor(const Owner& owner, const Tensor& tensor);
[[nodiscard]] py::object wrap_graph(const Owner& owner, const Graph& graph);
[[nodiscard]] py::list wrap_value_infos(const Owner& owner, ViewRange<ValueInfo> infos);
[[nodiscard]] py::dict string_dict(const std::vector<StringStringEntry>& entries);
[[nodiscard]] py::dict opset_dict(const std::vector<OperatorSetId>& opsets);  // domain: version

}  // namespace onnxmap::python
