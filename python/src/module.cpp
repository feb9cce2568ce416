// The extension module onnxmap._onnxmap; the package onnxmap (python/onnxmap) wraps it.

#include <string>

#include "binding.hpp"
#include "sequence.hpp"

namespace {

namespace py = pybind11;

// "2.10.3": PYBIND11_VERSION_PATCH may be a word ("dev1"), the hex form is always numbers.
std::string pybind11_version() {
  constexpr unsigned hex = PYBIND11_VERSION_HEX;
  return std::to_string(hex >> 24U) + "." + std::to_string((hex >> 16U) & 0xFFU) + "." +
         std::to_string((hex >> 8U) & 0xFFU);
}

// pybind11 reads NumPy's array descriptors at run time with the layout it was written for:
// before 2.12 only NumPy 1's, so under NumPy 2 its item sizes, strides and byte counts are wrong
// (every element read as the first). Such a build refuses to import there, naming the fix.
void refuse_numpy_this_build_cannot_read() {
#if PYBIND11_VERSION_HEX < 0x020C0000
  const py::object numpy = py::module_::import("numpy");
  const auto version = numpy.attr("__version__").cast<std::string>();
  if (version.rfind("1.", 0) == 0) return;
  throw py::import_error(
      "onnxmap was built with pybind11 " + pybind11_version() +
      ", which reads only NumPy 1's arrays, and this is NumPy " + version +
      ": rebuild onnxmap with pybind11 2.12 or later (`pip install .` in a venv fetches it), "
      "or install numpy<2 beside this build");
#endif
}

}  // namespace

PYBIND11_MODULE(_onnxmap, m) {
  using namespace onnxmap::python;
  refuse_numpy_this_build_cannot_read();
  m.doc() = "The native core of the onnxmap package.";
  m.attr("__version__") = std::string(onnxmap::version());
  // The binding layer's version, for bug reports and the suite's cross-NumPy test.
  m.attr("_pybind11_version") = pybind11_version();
  bind_errors(m);
  bind_sequence(m);
  bind_tensor(m);
  bind_graph(m);
  bind_functions(m);
  bind_model(m);
  bind_load(m);
  bind_device(m);
  bind_verify(m);
  bind_files(m);
}
