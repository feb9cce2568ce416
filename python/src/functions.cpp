// Model-local functions and training information for Python, read-only, with onnx.proto's fields
// under the names the rest of the package uses (inputs, nodes, opset_imports ...).

#include <pybind11/stl.h>

#include "binding.hpp"
#include "sequence.hpp"

namespace onnxmap::python {

namespace {

using PyFunction = Held<Function>;
using PyTrainingInfo = Held<TrainingInfo>;

py::object optional_graph(const Owner& owner, const std::optional<Graph>& g) {
  return g ? wrap_graph(owner, *g) : py::none();
}

void bind_function(py::module_& m) {
  ScopedClass<PyFunction>(m, "Function", "A model-local function (FunctionProto).")
      .def_property_readonly("name", [](const PyFunction& s) { return std::string(s.view.name()); })
      .def_property_readonly("domain",
                             [](const PyFunction& s) { return std::string(s.view.domain()); })
      .def_property_readonly("overload",
                             [](const PyFunction& s) { return std::string(s.view.overload()); })
      .def_property_readonly("doc_string",
                             [](const PyFunction& s) { return std::string(s.view.doc_string()); })
      .def_property_readonly("inputs",
                             [](const PyFunction& s) { return strings_list(s.view.inputs()); })
      .def_property_readonly("outputs",
                             [](const PyFunction& s) { return strings_list(s.view.outputs()); })
      .def_property_readonly(
          "attributes", [](const PyFunction& s) { return strings_list(s.view.attribute_names()); },
          "The names of the attributes without a default (FunctionProto.attribute).")
      .def_property_readonly(
          "attribute_defaults",
          [](const PyFunction& s) { return attribute_dict(s.owner, s.view.attribute_defaults()); },
          "The attributes with a default, name to value "
          "(FunctionProto.attribute_proto), in file order.")
      .def_property_readonly(
          "nodes", [](const PyFunction& s) { return wrap_nodes(s.owner, s.view.nodes()); })
      .def_property_readonly("opset_imports",
                             [](const PyFunction& s) { return opset_dict(s.view.opset_imports()); })
      .def_property_readonly(
          "value_infos",
          [](const PyFunction& s) { return wrap_value_infos(s.owner, s.view.value_infos()); })
      .def_property_readonly(
          "metadata_props",
          [](const PyFunction& s) { return string_dict(s.view.metadata_props()); })
      .def("__repr__", [](const PyFunction& s) {
        return "<onnxmap.Function " + std::string(s.view.domain()) + "." +
               std::string(s.view.name()) + ">";
      });
}

void bind_training_info(py::module_& m) {
  ScopedClass<PyTrainingInfo>(m, "TrainingInfo", "Training information (TrainingInfoProto).")
      .def_property_readonly(
          "initialization",
          [](const PyTrainingInfo& s) { return optional_graph(s.owner, s.view.initialization()); },
          "The initialization graph, or None.")
      .def_property_readonly(
          "algorithm",
          [](const PyTrainingInfo& s) { return optional_graph(s.owner, s.view.algorithm()); },
          "The training algorithm's graph, or None.")
      .def_property_readonly(
          "initialization_binding",
          [](const PyTrainingInfo& s) { return string_dict(s.view.initialization_binding()); },
          "Initializer name to the initialization graph output that sets it.")
      .def_property_readonly(
          "update_binding",
          [](const PyTrainingInfo& s) { return string_dict(s.view.update_binding()); },
          "Initializer name to the algorithm graph output that updates it.")
      .def("__repr__", [](const PyTrainingInfo&) { return std::string("<onnxmap.TrainingInfo>"); });
}

}  // namespace

py::object wrap_functions(const Owner& owner, ViewRange<Function> functions) {
  const auto wrap = [](const Owner& o, const Function& f) { return py::cast(PyFunction{o, f}); };
  return view_sequence(owner, functions, wrap, own_name);
}

// Training information has no name: a str is in no such sequence.
py::object wrap_training_info(const Owner& owner, ViewRange<TrainingInfo> infos) {
  const auto wrap = [](const Owner& o, const TrainingInfo& t) {
    return py::cast(PyTrainingInfo{o, t});
  };
  const auto no_name = [](const TrainingInfo&) { return std::optional<std::string_view>(); };
  return view_sequence(owner, infos, wrap, no_name);
}

void bind_functions(py::module_& m) {
  bind_function(m);
  bind_training_info(m);
}

}  // namespace onnxmap::python
