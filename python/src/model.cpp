// onnxmap.Model: an open model, a context manager, and a mapping from tensor names to Tensors.

#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <optional>
#include <unordered_set>

#include "binding.hpp"

namespace onnxmap::python {

namespace {

class PyModel {
 public:
  explicit PyModel(ModelPtr model) : model_(std::move(model)) {}

  // The model, or an onnxmap.Error once closed. Callers keep the returned pointer for the whole
  // call, so a close() from another thread cannot pull the model from under them.
  [[nodiscard]] ModelPtr get() const {
    if (!model_) raise_invalid("the model is closed");
    return model_;
  }
  // Drops this object's reference; Tensors and arrays taken from it keep the model alive.
  void close() {
    model_.reset();
    names_.reset();
  }
  [[nodiscard]] bool closed() const { return !model_; }

  // Tensor names in model order, each once (names that repeat resolve to the outermost tensor).
  const std::vector<std::string_view>& names() {
    if (!names_) {
      const ModelPtr model = get();
      std::vector<std::string_view> names;
      std::unordered_set<std::string_view> seen;
      for (std::size_t i = 0; i < model->tensor_count(); ++i) {
        const std::string_view name = model->tensor_at(i).lookup_name();
        if (!name.empty() && seen.insert(name).second) names.push_back(name);
      }
      names_ = std::move(names);
    }
    return *names_;
  }

 private:
  ModelPtr model_;
  std::optional<std::vector<std::string_view>> names_;
};

py::list keys(PyModel& self) {
  py::list out;
  for (const std::string_view name : self.names()) out.append(py::str(name.data(), name.size()));
  return out;
}

py::object item(const PyModel& self, const std::string& name) {
  const ModelPtr model = self.get();
  const auto found = model->find_tensor(name);
  if (!found) throw py::key_error(name);
  return wrap_tensor(model, *found);
}

// The tensors a bulk call works on: those named, or every key.
std::vector<Tensor> chosen(PyModel& self, const std::optional<std::vector<std::string>>& names) {
  const ModelPtr model = self.get();
  std::vector<Tensor> out;
  if (names) {
    for (const std::string& name : *names) out.push_back(model->tensor(name));
  } else {
    for (const std::string_view name : self.names()) out.push_back(model->tensor(name));
  }
  return out;
}

// Copies of the chosen tensors into new writable arrays, read by the loader (load_into) in the
// read mode on `threads` threads. Types NumPy lacks and STRING tensors come as Tensor.numpy()
// gives them.
py::dict read_tensors(PyModel& self, const std::optional<std::vector<std::string>>& names,
                      unsigned threads) {
  const ModelPtr model = self.get();
  const auto tensors = chosen(self, names);
  py::dict out;
  std::vector<LoadItem> plan;
  std::vector<std::span<std::byte>> buffers;
  for (const Tensor& t : tensors) {
    const auto tr = traits(static_cast<DataType>(t.data_type()));
    const std::string name(t.lookup_name());
    if (!tr || tr->bits < 8 || static_cast<DataType>(t.data_type()) == DataType::string) {
      out[py::str(name)] = wrap_tensor(model, t).attr("numpy")().attr("copy")();
      continue;
    }
    const auto dims = t.dims();
    py::array array(py::dtype(std::string(tr->numpy_descr)),
                    std::vector<py::ssize_t>(dims.begin(), dims.end()));
    buffers.emplace_back(static_cast<std::byte*>(array.mutable_data()),
                         static_cast<std::size_t>(array.nbytes()));
    plan.push_back({t});
    out[py::str(name)] = array;
  }
  LoadOptions options;
  options.threads = threads;
  py::gil_scoped_release unlocked;
  (void)load_into(plan, buffers, {}, options);
  return out;
}

void bind_metadata(ScopedClass<PyModel>& c) {
  c.def_property_readonly("ir_version", [](const PyModel& s) { return s.get()->ir_version(); })
      .def_property_readonly("producer_name",
                             [](const PyModel& s) { return std::string(s.get()->producer_name()); })
      .def_property_readonly(
          "producer_version",
          [](const PyModel& s) { return std::string(s.get()->producer_version()); })
      .def_property_readonly("domain",
                             [](const PyModel& s) { return std::string(s.get()->domain()); })
      .def_property_readonly("model_version",
                             [](const PyModel& s) { return s.get()->model_version().raw; })
      .def_property_readonly("doc_string",
                             [](const PyModel& s) { return std::string(s.get()->doc_string()); })
      .def_property_readonly("opset_imports",
                             [](const PyModel& s) { return opset_dict(s.get()->opset_imports()); })
      .def_property_readonly(
          "metadata_props", [](const PyModel& s) { return string_dict(s.get()->metadata_props()); })
      .def_property_readonly("graph",
                             [](const PyModel& s) -> py::object {
                               const auto graph = s.get()->graph();
                               return graph ? wrap_graph(s.get(), *graph) : py::none();
                             })
      .def_property_readonly(
          "functions",
          [](const PyModel& s) { return wrap_functions(s.get(), s.get()->functions()); })
      .def_property_readonly(
          "training_info",
          [](const PyModel& s) { return wrap_training_info(s.get(), s.get()->training_info()); })
      .def_property_readonly("path", [](const PyModel& s) { return s.get()->path(); })
      .def_property_readonly("file_size", [](const PyModel& s) { return s.get()->file_size(); })
      .def(
          "changed_on_disk", [](const PyModel& s) { return s.get()->changed_on_disk(); },
          "The files behind the model (the model file, then its data files) that on disk are no "
          "longer the version opened: replaced, written or removed since. The model keeps "
          "reading the version it opened.")
      .def_property_readonly(
          "fetch_stats",
          [](const PyModel& s) -> py::object {
            const auto fetched = s.get()->fetch_stats();
            if (!fetched) return py::none();
            return py::dict(py::arg("requests") = fetched->requests,
                            py::arg("retries") = fetched->retries,
                            py::arg("retry_wait_ms") = fetched->retry_wait_ms);
          },
          "By URL: the requests and retries so far (a dict); None for a file.");
}

void bind_tensors(ScopedClass<PyModel>& c) {
  c.def("keys", &keys, "Tensor names in model order, each once.")
      .def("__len__", [](PyModel& s) { return s.names().size(); })
      .def("__iter__", [](PyModel& s) { return keys(s).attr("__iter__")(); })
      .def("__contains__",
           [](const PyModel& s, const std::string& name) {
             return s.get()->find_tensor(name).has_value();
           })
      .def("__getitem__", &item, "The tensor named `name`; KeyError if there is none.")
      .def(
          "tensor",
          [](const PyModel& s, const std::string& name) {
            return wrap_tensor(s.get(), s.get()->tensor(name));
          },
          py::arg("name"),
          "The tensor named `name`; onnxmap.Error (kind not_found) if there is none.")
      .def(
          "tensor_at_path",
          [](const PyModel& s, const std::string& path) -> py::object {
            const ModelPtr model = s.get();
            const auto found = model->tensor_at_path(path);
            return found ? wrap_tensor(model, *found) : py::none();
          },
          py::arg("path"))
      .def(
          "tensors",
          [](const PyModel& s, const std::string& name) {
            const ModelPtr model = s.get();
            py::list out;
            for (const Tensor& t : model->tensors(name)) out.append(wrap_tensor(model, t));
            return out;
          },
          py::arg("name"), "Every tensor whose lookup name is `name`, in model order.")
      .def(
          "tensor_count", [](const PyModel& s) { return s.get()->tensor_count(); },
          "Every tensor, repeats and unnamed ones included (tensor_at(i) for i below it).")
      .def(
          "tensor_at",
          [](const PyModel& s, std::size_t i) {
            const ModelPtr model = s.get();
            if (i >= model->tensor_count()) throw py::index_error("tensor index out of range");
            return wrap_tensor(model, model->tensor_at(i));
          },
          py::arg("i"), "Tensor `i` in model order (outer graphs first).")
      .def("read", &read_tensors, py::arg("names") = py::none(),
           py::arg("threads") = LoadOptions{}.threads,
           "Copies of the tensors as writable arrays (name to array), read on a thread pool.");
}

}  // namespace

ModelPtr model_of(const py::handle& model) {
  return model.cast<const PyModel&>().get();
}

void bind_model(py::module_& m) {
  ScopedClass<PyModel> c(m, "Model", "An ONNX model opened through a memory map.");
  bind_metadata(c);
  bind_tensors(c);
  c.def("close", &PyModel::close,
        "Drop the model; arrays and Tensors taken from it stay valid (they keep the file mapped).")
      .def_property_readonly("closed", &PyModel::closed)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyModel& s, py::args) { s.close(); })
      .def("__repr__", [](const PyModel& s) {
        return s.closed() ? std::string("<onnxmap.Model closed>")
                          : "<onnxmap.Model " + s.get()->path().string() + ">";
      });
  def_function(
      m, "_open",
      [](const std::filesystem::path& path, py::kwargs kwargs) {
        py::dict options_args(kwargs);
        const OpenOptions options = take_open_options(options_args);
        reject_unknown(options_args, "open");
        return PyModel(open_model(path, options));
      },
      py::arg("path"));
}

}  // namespace onnxmap::python
