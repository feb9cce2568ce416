#pragma once
// What the parts of the Python binding share. The binding uses only the public headers, like any
// user of the library.
//
// Lifetime: every Python object that shows bytes of a model (a Tensor, a graph view, a NumPy
// array) holds a shared_ptr to the model. Model.close() drops only the Model object's own
// reference, so the mapping is unmapped when the last array or view over it is gone, never while
// one can still read it.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <filesystem>
#include <memory>
#include <onnxmap/onnxmap.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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

// Every function, method and read-only property of the binding runs in an onnxmap::FrontEndScope,
// applied here alone: a file that shrank while open is an onnxmap.Error, never SIGBUS, where a call
// reads the map (a getter's cpp_function carries it: pybind11 guards no property by itself). The
// scope ends before the result is converted: results hold no view of the map (a str, an object).
using InScope = py::call_guard<FrontEndScope>;
template <class T>
class ScopedClass {
 public:
  template <class... Extra>
  ScopedClass(py::handle m, const char* name, const Extra&... doc) : class_(m, name, doc...) {}
  template <class F, class... Extra>
  ScopedClass& def(const char* name, F&& f, const Extra&... extra) {
    class_.def(name, std::forward<F>(f), extra..., InScope());
    return *this;
  }
  template <class F, class... Extra>
  ScopedClass& def_property_readonly(const char* name, F&& f, const Extra&... extra) {
    class_.def_property_readonly(name, py::cpp_function(std::forward<F>(f), InScope()), extra...);
    return *this;
  }
  [[nodiscard]] py::class_<T>& unscoped() { return class_; }  // for what reads no model

 private:
  py::class_<T> class_;
};
// A method of a class bound elsewhere (Model's load, prefetch and _device_plan).
template <class F, class... Extra>
void def_method(const py::object& c, const char* name, F&& f, const Extra&... extra) {
  c.attr(name) =
      py::cpp_function(std::forward<F>(f), py::name(name), py::is_method(c), extra..., InScope());
}
template <class F, class... Extra>
void def_function(py::module_& m, const char* name, F&& f, const Extra&... extra) {
  m.def(name, std::forward<F>(f), extra..., InScope());
}

// The open options from keyword arguments (mode="map"|"read"|"direct", max_depth, max_tensors,
// max_messages, allow_external_outside_folder, collect_payload_errors), removed from `kwargs` as
// they are read.
[[nodiscard]] OpenOptions take_open_options(py::dict& kwargs);
// Moves the keyword argument "mode", when given, from `kwargs` into `mode`: one of the library's
// names (parse_load_mode), else an onnxmap.Error.
void take_load_mode(py::dict& kwargs, LoadMode& mode);
// Moves the keyword argument `key`, when given, from `kwargs` into `value`; a TypeError naming
// it when its value does not fit.
template <class T>
void take_kwarg(py::dict& kwargs, const char* key, T& value) {
  if (!kwargs.contains(key)) return;
  const py::object given = kwargs[key];
  if (given.is_none()) {  // None: the library's default, defined once, in its options
    PyDict_DelItemString(kwargs.ptr(), key);
    return;
  }
  try {
    value = given.cast<T>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string(key) + "=" + py::repr(given).cast<std::string>() +
                         " has the wrong type");
  }
  PyDict_DelItemString(kwargs.ptr(), key);
}
// Raises TypeError naming the first keyword argument left in `kwargs`.
void reject_unknown(const py::dict& kwargs, const char* function);

// What a load, prefetch or device load works on (load.cpp): the keyword arguments filter (a
// glob), names and shard=(rank, ranks), removed from kwargs as they are read.
struct Selection {
  std::optional<std::string> filter;
  std::optional<std::vector<std::string>> names;
  std::optional<std::pair<unsigned, unsigned>> shard;
};
[[nodiscard]] Selection selection(py::dict& kwargs);
// The tensors of keys() whose name matches `filter`, in model order, or those `names` lists,
// in that order; with a shard, its rows of each (onnxmap::plan).
[[nodiscard]] std::vector<LoadItem> plan_of(const Model& model, const Selection& s);
// An item's shape: the tensor's dims, axis 0 cut to its rows.
[[nodiscard]] std::vector<py::ssize_t> item_shape(const LoadItem& item);

// A dictionary of statistics, one key a field (fields_of(LoadStats), fields_of(DeviceLoadStats)).
[[nodiscard]] py::dict load_stats_dict(const std::vector<StatsField>& fields);

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
void bind_files(py::module_& m);      // peek, check, save, convert
void bind_load(py::module_& m);       // Model.load and Model.prefetch (after bind_model)
void bind_functions(py::module_& m);  // Function, TrainingInfo
void bind_device(py::module_& m);     // Model._device_plan, _DevicePlan (after bind_model)
void bind_verify(py::module_& m);     // Manifest, Model.hash, Model.verify (after bind_model)

// The manifest `given` names: an onnxmap.Manifest, or a path to one (read and parsed).
[[nodiscard]] Manifest manifest_of(const py::object& given);
// The keyword argument "verify" (a Manifest or a path; None: none), removed from `kwargs`.
[[nodiscard]] std::optional<Manifest> take_manifest(py::dict& kwargs);
// Adds "verified" and "not_verified" (LandedVerifier's counts) to a load's statistics.
void add_verified(py::dict& stats, const std::optional<LandedVerifier>& verifier);

// Python objects for views, shared by the parts.
[[nodiscard]] py::object wrap_tensor(const Owner& owner, const Tensor& tensor);
// A read-only array over `bytes` of the model `owner` keeps alive (no copy): the array holds it.
[[nodiscard]] py::array model_bytes_array(const Owner& owner, std::span<const std::byte> bytes,
                                          const py::dtype& dtype,
                                          const std::vector<py::ssize_t>& shape);
[[nodiscard]] py::object wrap_graph(const Owner& owner, const Graph& graph);
// Lists of views as onnxmap.ViewSequence objects (sequence.hpp), each element made when read.
[[nodiscard]] py::object wrap_value_infos(const Owner& owner, ViewRange<ValueInfo> infos);
[[nodiscard]] py::object wrap_nodes(const Owner& owner, ViewRange<Node> nodes);
[[nodiscard]] py::object wrap_functions(const Owner& owner, ViewRange<Function> functions);
[[nodiscard]] py::object wrap_training_info(const Owner& owner, ViewRange<TrainingInfo> infos);
// An attribute's value as onnx.helper.get_attribute_value gives it (graph.cpp).
[[nodiscard]] py::object attribute_value(const Owner& owner, const Attribute& a);
// Attribute name to value, in file order (a node's attributes, a function's defaults).
[[nodiscard]] py::dict attribute_dict(const Owner& owner, ViewRange<Attribute> attributes);
[[nodiscard]] py::list strings_list(const std::vector<std::string_view>& strings);
[[nodiscard]] py::dict string_dict(const std::vector<StringStringEntry>& entries);
[[nodiscard]] py::dict opset_dict(const std::vector<OperatorSetId>& opsets);  // domain: version

}  // namespace onnxmap::python
