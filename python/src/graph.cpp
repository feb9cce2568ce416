// Graph views for Python: Graph, Node, ValueInfo and attribute values, decoded when read; the
// lists of views (nodes, inputs, initializers ...) are ViewSequences (sequence.hpp).

#include <pybind11/stl.h>

#include "binding.hpp"
#include "sequence.hpp"

namespace onnxmap::python {

namespace {

using PyGraph = Held<Graph>;
using PyNode = Held<Node>;
using PyValueInfo = Held<ValueInfo>;
using PySparse = Held<SparseTensor>;

py::list bytes_list(const std::vector<std::string_view>& strings) {
  py::list out;
  for (const std::string_view s : strings) out.append(py::bytes(s.data(), s.size()));
  return out;
}

template <class Range, class Wrap>
py::list list_of(const Range& range, Wrap wrap) {
  py::list out;
  for (const auto& item : range) out.append(wrap(item));
  return out;
}

py::object optional_tensor(const Owner& owner, const std::optional<Tensor>& t) {
  return t ? wrap_tensor(owner, *t) : py::none();
}

// A dimension: its value, its symbolic name, or None when unknown.
py::object dimension(const Dimension& d) {
  if (d.value) return py::int_(*d.value);
  if (!d.param.empty()) return py::str(d.param.data(), d.param.size());
  return py::none();
}

py::object value_info_shape(const PyValueInfo& self) {
  const Type type = self.view.type();
  const auto shape = type.shape();
  if (!shape) return py::none();
  py::list dims;
  for (const Dimension& d : *shape) dims.append(dimension(d));
  return py::tuple(dims);
}

py::object elem_type(const PyValueInfo& self) {
  const Type type = self.view.type();
  if (type.kind() != Type::Kind::tensor && type.kind() != Type::Kind::sparse_tensor) {
    return py::none();
  }
  return py::str(to_string(type.elem_type()));
}

py::dict readers_dict(const PyGraph& self) {
  py::dict out;
  for (const auto& [name, reader] : initializer_readers(self.view)) {
    out[py::str(name.data(), name.size())] =
        py::make_tuple(reader.node, reader.input, reader.module);
  }
  return out;
}

void bind_value_info(py::module_& m) {
  ScopedClass<PyValueInfo>(m, "ValueInfo", "A graph input, output or value_info entry.")
      .def_property_readonly("name",
                             [](const PyValueInfo& s) { return std::string(s.view.name()); })
      .def_property_readonly(
          "type", [](const PyValueInfo& s) { return s.view.type().to_string(); },
          "The type as text: \"FLOAT[batch,128]\".")
      .def_property_readonly("elem_type", &elem_type,
                             "Tensor types: the element type's ONNX name, else None.")
      .def_property_readonly("shape", &value_info_shape,
                             "Tensor types: dimensions (int, symbolic str, None if unknown); None "
                             "for an unknown rank.")
      .def_property_readonly("doc_string",
                             [](const PyValueInfo& s) { return std::string(s.view.doc_string()); })
      .def("__repr__", [](const PyValueInfo& s) {
        return "<onnxmap.ValueInfo " + std::string(s.view.name()) + ": " +
               s.view.type().to_string() + ">";
      });
}

void bind_node(py::module_& m) {
  ScopedClass<PyNode>(m, "Node")
      .def_property_readonly("op_type",
                             [](const PyNode& s) { return std::string(s.view.op_type()); })
      .def_property_readonly("domain", [](const PyNode& s) { return std::string(s.view.domain()); })
      .def_property_readonly("name", [](const PyNode& s) { return std::string(s.view.name()); })
      .def_property_readonly("overload",
                             [](const PyNode& s) { return std::string(s.view.overload()); })
      .def_property_readonly("doc_string",
                             [](const PyNode& s) { return std::string(s.view.doc_string()); })
      .def_property_readonly(
          "module", [](const PyNode& s) { return module_path(s.view); },
          "The module path the node belongs to (its namespace metadata or its name's scope), "
          "'' where it has none.")
      .def_property_readonly("inputs",
                             [](const PyNode& s) { return strings_list(s.view.inputs()); })
      .def_property_readonly("outputs",
                             [](const PyNode& s) { return strings_list(s.view.outputs()); })
      .def_property_readonly(
          "attributes",
          [](const PyNode& s) { return attribute_dict(s.owner, s.view.attributes()); },
          "A dict of attribute name to value, in file order.")
      .def("__repr__", [](const PyNode& s) {
        return "<onnxmap.Node " + std::string(s.view.op_type()) + " " + std::string(s.view.name()) +
               ">";
      });
  ScopedClass<PySparse>(m, "SparseTensor")
      .def_property_readonly(
          "values", [](const PySparse& s) { return optional_tensor(s.owner, s.view.values()); })
      .def_property_readonly(
          "indices", [](const PySparse& s) { return optional_tensor(s.owner, s.view.indices()); })
      .def_property_readonly("dims",
                             [](const PySparse& s) { return py::tuple(py::cast(s.view.dims())); });
}

}  // namespace

py::list strings_list(const std::vector<std::string_view>& strings) {
  py::list out;
  for (const std::string_view s : strings) out.append(py::str(s.data(), s.size()));
  return out;
}

// An attribute's value as onnx.helper.get_attribute_value gives it: float, int, bytes, Tensor,
// Graph, SparseTensor, the type as text, or a list of those; None when it has no type.
py::object attribute_value(const Owner& owner, const Attribute& a) {
  const auto tensor = [&](const Tensor& t) { return wrap_tensor(owner, t); };
  const auto graph = [&](const Graph& g) { return wrap_graph(owner, g); };
  const auto sparse = [&](const SparseTensor& s) { return py::cast(PySparse{owner, s}); };
  const auto type = [](const Type& t) { return py::str(t.to_string()); };
  switch (a.type()) {
    case AttributeType::float32: return py::float_(a.f());
    case AttributeType::int64: return py::int_(a.i());
    case AttributeType::string: return py::bytes(a.s().data(), a.s().size());
    case AttributeType::tensor: return optional_tensor(owner, a.t());
    case AttributeType::graph: return a.g() ? graph(*a.g()) : py::object(py::none());
    case AttributeType::floats: return py::cast(a.floats());
    case AttributeType::ints: return py::cast(a.ints());
    case AttributeType::strings: return bytes_list(a.strings());
    case AttributeType::tensors: return list_of(a.tensors(), tensor);
    case AttributeType::graphs: return list_of(a.graphs(), graph);
    case AttributeType::sparse_tensor:
      return a.sparse_tensor() ? sparse(*a.sparse_tensor()) : py::object(py::none());
    case AttributeType::sparse_tensors: return list_of(a.sparse_tensors(), sparse);
    case AttributeType::type_proto: return a.tp() ? py::object(type(*a.tp())) : py::none();
    case AttributeType::type_protos: return list_of(a.type_protos(), type);
    case AttributeType::undefined: break;
  }
  return py::none();
}

py::dict attribute_dict(const Owner& owner, ViewRange<Attribute> attributes) {
  py::dict out;
  for (const Attribute& a : attributes) {
    out[py::str(a.name().data(), a.name().size())] = attribute_value(owner, a);
  }
  return out;
}

py::object wrap_nodes(const Owner& owner, ViewRange<Node> nodes) {
  const auto wrap = [](const Owner& o, const Node& n) { return py::cast(PyNode{o, n}); };
  return view_sequence(owner, nodes, wrap, own_name);
}

py::object wrap_value_infos(const Owner& owner, ViewRange<ValueInfo> infos) {
  const auto wrap = [](const Owner& o, const ValueInfo& v) { return py::cast(PyValueInfo{o, v}); };
  return view_sequence(owner, infos, wrap, own_name);
}

py::object wrap_graph(const Owner& owner, const Graph& graph) {
  return py::cast(PyGraph{owner, graph});
}

py::dict string_dict(const std::vector<StringStringEntry>& entries) {
  py::dict out;
  for (const auto& e : entries) {
    out[py::str(e.key.data(), e.key.size())] = py::str(e.value.data(), e.value.size());
  }
  return out;
}

py::dict opset_dict(const std::vector<OperatorSetId>& opsets) {
  py::dict out;
  for (const OperatorSetId& id : opsets) {
    out[py::str(id.domain.data(), id.domain.size())] = id.version;
  }
  return out;
}

void bind_graph(py::module_& m) {
  bind_value_info(m);
  bind_node(m);
  const auto tensors = [](const PyGraph& s) {
    return view_sequence(s.owner, s.view.initializers(), &wrap_tensor, own_name);
  };
  // A sparse initializer is named by its values tensor (as onnx names it).
  const auto sparse_tensors = [](const PyGraph& s) {
    const auto wrap = [](const Owner& o, const SparseTensor& t) {
      return py::cast(PySparse{o, t});
    };
    const auto name = [](const SparseTensor& t) -> std::optional<std::string_view> {
      const auto values = t.values();
      return values ? std::optional(values->name()) : std::nullopt;
    };
    return view_sequence(s.owner, s.view.sparse_initializers(), wrap, name);
  };
  ScopedClass<PyGraph>(m, "Graph")
      .def_property_readonly("name", [](const PyGraph& s) { return std::string(s.view.name()); })
      .def_property_readonly("doc_string",
                             [](const PyGraph& s) { return std::string(s.view.doc_string()); })
      .def_property_readonly("nodes",
                             [](const PyGraph& s) { return wrap_nodes(s.owner, s.view.nodes()); })
      .def_property_readonly(
          "inputs", [](const PyGraph& s) { return wrap_value_infos(s.owner, s.view.inputs()); })
      .def_property_readonly(
          "outputs", [](const PyGraph& s) { return wrap_value_infos(s.owner, s.view.outputs()); })
      .def_property_readonly(
          "value_infos",
          [](const PyGraph& s) { return wrap_value_infos(s.owner, s.view.value_infos()); })
      .def_property_readonly("initializers", tensors)
      .def_property_readonly("sparse_initializers", sparse_tensors)
      .def_property_readonly("metadata_props",
                             [](const PyGraph& s) { return string_dict(s.view.metadata_props()); })
      .def("initializer_readers", &readers_dict,
           "{initializer name: (node, input, module)}: the first node reading each initializer "
           "(its index in nodes, the input's index) and that node's module path; an initializer "
           "no node of this graph reads is absent.")
      .def("__repr__",
           [](const PyGraph& s) { return "<onnxmap.Graph " + std::string(s.view.name()) + ">"; });
}

}  // namespace onnxmap::python
