// The extension module onnxmap._onnxmap; the package onnxmap (python/onnxmap) wraps it.

#include <string>

#include "binding.hpp"

PYBIND11_MODULE(_onnxmap, m) {
  namespace py = pybind11;
  using namespace onnxmap::python;
  m.doc() = "The native core of the onnxmap package.";
  m.attr("__version__") = std::string(onnxmap::version());
  bind_errors(m);
  bind_tensor(m);
  bind_graph(m);
  bind_functions(m);
  bind_model(m);
  bind_load(m);
  bind_device(m);
  bind_files(m);
}
