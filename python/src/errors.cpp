// onnxmap.Error: every onnxmap::Error reaches Python as this ValueError subclass, with the C++
// message and its parts as attributes (kind, file, path, offset).

#include "binding.hpp"

namespace onnxmap::python {

namespace {

// The Python class, created once at import and kept for the process's life (modules are never
// unloaded), so the translator can use it without a lookup.
PyObject* error_class = nullptr;

void set_python_error(const Error& error) {
  py::object instance =
      py::reinterpret_steal<py::object>(PyObject_CallFunction(error_class, "s", error.what()));
  if (!instance) return;  // the call failed and set its own exception
  instance.attr("kind") = std::string(to_string(error.kind()));
  instance.attr("file") = error.file();
  instance.attr("path") = error.field_path();
  instance.attr("detail") = error.detail();
  instance.attr("offset") =
      error.offset() == Error::kNoOffset ? py::none() : py::cast(error.offset());
  PyErr_SetObject(error_class, instance.ptr());
}

}  // namespace

void raise_invalid(const std::string& detail) {
  throw Error(ErrorKind::invalid_argument, detail);
}

void bind_errors(py::module_& m) {
  error_class = PyErr_NewExceptionWithDoc(
      "onnxmap.Error",
      "An invalid model, an unsafe path, an I/O failure or a bad argument. Attributes: kind "
      "(\"truncated\", \"bad_tensor\", \"unsafe_path\", ...), file, path (the field path), offset "
      "(byte offset in the file, or None) and detail (the message without its location).",
      PyExc_ValueError, nullptr);
  if (error_class == nullptr) throw py::error_already_set();
  m.attr("Error") = py::handle(error_class);
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const Error& error) {
      set_python_error(error);
    }
  });
}

}  // namespace onnxmap::python
