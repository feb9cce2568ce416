// onnxmap.Tensor and its NumPy arrays. Raw and external tensors become read-only arrays over the
// model's bytes (no copy) whose base holds the model, so an array outlives Model.close(). Typed
// fields are decoded and sub-byte types unpacked: those arrays are copies, and Tensor.is_view
// says which a tensor gives.

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <optional>
#include <utility>

#include "binding.hpp"

namespace onnxmap::python {

namespace {

using Rows = std::pair<std::uint64_t, std::uint64_t>;

DataTypeTraits numpy_traits(const Tensor& t) {
  const auto found = traits(static_cast<DataType>(t.data_type()));
  if (!found) {
    raise_invalid(t.path() + " has data type " + to_string(t.data_type()) +
                  ", which NumPy cannot hold");
  }
  return *found;
}

// Clears the array's WRITEABLE flag through NumPy's public API: the array's fields are NumPy's
// to lay out (NumPy 2 moved some), never written here.
void make_read_only(py::array& array) {
  array.attr("setflags")(py::arg("write") = false);
}

// A read-only array over `bytes`, whose base keeps `keep` (and so the bytes) alive.
template <class Keep>
py::array array_over(std::unique_ptr<Keep> keep, std::span<const std::byte> bytes,
                     const py::dtype& dtype, const std::vector<py::ssize_t>& shape) {
  static const std::byte kEmpty{};  // NumPy wants a pointer even for no elements
  const void* data = bytes.empty() ? &kEmpty : bytes.data();
  py::capsule base(keep.get(), [](void* p) { delete static_cast<Keep*>(p); });
  keep.release();  // the capsule owns it now
  py::array array(dtype, shape, {}, data, base);
  make_read_only(array);
  return array;
}

std::vector<py::ssize_t> shape_of(const Tensor& t) {
  const auto dims = t.dims();
  return {dims.begin(), dims.end()};
}

// STRING elements as an object array of bytes, as numpy_helper.to_array gives them.
py::array string_array(const Tensor& t) {
  py::list items;
  for (const std::string_view s : t.strings()) items.append(py::bytes(s.data(), s.size()));
  const py::object numpy = py::module_::import("numpy");
  py::array out = numpy.attr("empty")(py::len(items), py::arg("dtype") = "object");
  for (std::size_t i = 0; i < py::len(items); ++i) out[py::int_(i)] = items[i];
  py::array shaped = out.attr("reshape")(py::tuple(py::cast(shape_of(t))));
  make_read_only(shaped);
  return shaped;
}

// Sub-byte elements (4- and 2-bit types) unpacked into a new array, one per byte (sub_byte.hpp).
py::array unpacked_array(const Tensor& t, const TensorData& data, const py::dtype& dtype) {
  py::array out(dtype, shape_of(t));
  const std::span<std::byte> elements(static_cast<std::byte*>(out.mutable_data()),
                                      static_cast<std::size_t>(out.nbytes()));
  {
    py::gil_scoped_release unlocked;
    unpack_sub_byte(t.data_type(), data.bytes(), elements);
  }
  make_read_only(out);
  return out;
}

// Every element of `t`: a view of the model's bytes, or a decoded copy.
py::array whole_array(const Owner& owner, const Tensor& t) {
  const DataTypeTraits tr = numpy_traits(t);
  if (static_cast<DataType>(t.data_type()) == DataType::string) return string_array(t);
  const py::dtype dtype(std::string(tr.numpy_descr));
  std::optional<TensorData> data;
  if (t.storage() == TensorStorage::typed) {
    py::gil_scoped_release unlocked;  // decoding typed fields may take a while
    data.emplace(t.data());
  } else {
    data.emplace(t.data());  // a view: no work to release the GIL for
  }
  if (tr.bits < 8) return unpacked_array(t, *data, dtype);
  if (data->is_view()) {
    return array_over(std::make_unique<Owner>(owner), data->bytes(), dtype, shape_of(t));
  }
  auto decoded = std::make_unique<TensorData>(std::move(*data));
  const auto bytes = decoded->bytes();
  return array_over(std::move(decoded), bytes, dtype, shape_of(t));
}

// Rows [begin, end) along axis 0: a view where slice_rows can cut them and NumPy can hold them
// as stored (whole-byte elements), else a slice of the decoded whole.
py::array rows_array(const Owner& owner, const Tensor& t, Rows rows) {
  const auto [begin, end] = rows;
  if (t.dims().empty()) raise_invalid(t.path() + " is a scalar: it has no rows");
  const std::uint64_t count = t.row_count();
  if (begin > end || end > count) {
    raise_invalid(t.path() + ": rows " + std::to_string(begin) + ".." + std::to_string(end) +
                  " are not within its " + std::to_string(count) + " rows");
  }
  const DataTypeTraits tr = numpy_traits(t);
  if (!t.can_slice_rows() || tr.bits < 8) {
    return whole_array(
        owner, t)[py::slice(static_cast<py::ssize_t>(begin), static_cast<py::ssize_t>(end), 1)];
  }
  auto shape = shape_of(t);
  shape[0] = static_cast<py::ssize_t>(end - begin);
  return array_over(std::make_unique<Owner>(owner), t.slice_rows(begin, end),
                    py::dtype(std::string(tr.numpy_descr)), shape);
}

bool is_view(const Tensor& t) {
  return t.has_stored_bytes() && element_bits(t.data_type()) >= 8;
}

using PyTensor = Held<Tensor>;

py::object numpy_dtype(const PyTensor& s) {
  const auto found = traits(static_cast<DataType>(s.view.data_type()));
  if (!found) return py::none();
  if (s.view.data_type() == DataType::string) return py::dtype("O");
  return py::dtype(std::string(found->numpy_descr));
}

// "<onnxmap.Tensor w FLOAT[2, 3] raw>"; the dims as Python prints a list.
std::string repr(const PyTensor& self) {
  const auto dims = py::str(py::cast(shape_of(self.view))).cast<std::string>();
  return "<onnxmap.Tensor " + std::string(self.view.lookup_name()) + " " +
         to_string(self.view.data_type()) + dims + " " +
         std::string(to_string(self.view.storage())) + ">";
}

// onnxmap::tensor_stats of every element, as `onnxmap stats --json` has it: min, max, mean and
// std None when no value is finite. Counted without the GIL.
py::dict stats_dict(const PyTensor& self, unsigned bins) {
  const Tensor& t = self.view;
  if (!has_stats(t.data_type()))
    raise_invalid("no statistics for " + to_string(t.data_type()) + " values");
  TensorStats s;
  {
    py::gil_scoped_release unlocked;
    const TensorData data = t.data();
    s = tensor_stats(data.bytes(), t.data_type(), t.element_count(), bins);
  }
  const auto number = [](double v) {
    return std::isfinite(v) ? py::object(py::float_(v)) : py::none();
  };
  py::dict out;
  out["count"] = s.count;
  out["min"] = number(s.min);
  out["max"] = number(s.max);
  out["mean"] = number(s.mean);
  out["std"] = number(s.stddev);
  out["zeros"] = s.zeros;
  out["nans"] = s.nans;
  out["infinities"] = s.infinities;
  out["histogram"] = py::cast(s.histogram);
  return out;
}

// Tensor.__array__(dtype, copy), as NumPy 2 calls it (np.asarray passes copy=None, np.array
// copy=True, np.asarray(copy=False) copy=False); NumPy 1 passes dtype only.
py::object array_protocol(const PyTensor& s, const py::object& dtype, const py::object& copy) {
  py::array array = whole_array(s.owner, s.view);
  const bool converts = !dtype.is_none() && !array.dtype().equal(py::dtype::from_args(dtype));
  if (!copy.is_none() && !copy.cast<bool>() && (converts || !is_view(s.view))) {
    throw py::value_error("tensor " + std::string(s.view.lookup_name()) + " (" + s.view.path() +
                          ") cannot be given without a copy (copy=False): " +
                          (converts ? "its dtype is not the one asked for"
                                    : "its elements are decoded, not a view of the file"));
  }
  if (converts) return array.attr("astype")(dtype);
  if (!copy.is_none() && copy.cast<bool>()) return array.attr("copy")();
  return array;
}

}  // namespace

py::array model_bytes_array(const Owner& owner, std::span<const std::byte> bytes,
                            const py::dtype& dtype, const std::vector<py::ssize_t>& shape) {
  return array_over(std::make_unique<Owner>(owner), bytes, dtype, shape);
}

py::object wrap_tensor(const Owner& owner, const Tensor& tensor) {
  return py::cast(PyTensor{owner, tensor});
}

void bind_tensor(py::module_& m) {
  ScopedClass<PyTensor>(m, "Tensor",
                        "A tensor of an open model. numpy() is a read-only view of the file's "
                        "bytes when is_view is True, else a decoded copy.")
      .def_property_readonly(
          "name", [](const PyTensor& s) { return std::string(s.view.name()); },
          "The tensor's own name, as written in the file (\"\" when it has none).")
      .def_property_readonly(
          "lookup_name", [](const PyTensor& s) { return std::string(s.view.lookup_name()); },
          "The name the model finds it by: its own, or a Constant node's output.")
      .def_property_readonly(
          "data_type", [](const PyTensor& s) { return to_string(s.view.data_type()); },
          "The ONNX data type's name: \"FLOAT16\", \"BFLOAT16\", ...")
      .def_property_readonly("dtype", &numpy_dtype,
                             "The NumPy dtype of numpy()'s array (bit patterns for BFLOAT16 and "
                             "the FLOAT8 types; object for STRING); None for a type NumPy "
                             "cannot hold.")
      .def_property_readonly(
          "shape", [](const PyTensor& s) { return py::tuple(py::cast(shape_of(s.view))); })
      .def_property_readonly("nbytes", [](const PyTensor& s) { return s.view.byte_size(); })
      .def_property_readonly("storage",
                             [](const PyTensor& s) { return to_string(s.view.storage()); })
      .def_property_readonly("path", [](const PyTensor& s) { return s.view.path(); })
      .def_property_readonly("is_view", [](const PyTensor& s) { return is_view(s.view); })
      .def_property_readonly("data_file",
                             [](const PyTensor& s) { return std::string(s.view.data_file()); })
      .def_property_readonly("file_offset", [](const PyTensor& s) { return s.view.file_offset(); })
      .def_property_readonly("file_path",
                             [](const PyTensor& s) { return s.view.file_path().string(); })
      .def_property_readonly("row_count", [](const PyTensor& s) { return s.view.row_count(); })
      .def_property_readonly("row_bytes", [](const PyTensor& s) { return s.view.row_bytes(); })
      .def_property_readonly("can_slice_rows",
                             [](const PyTensor& s) { return s.view.can_slice_rows(); })
      .def_property_readonly("doc_string",
                             [](const PyTensor& s) { return std::string(s.view.doc_string()); })
      .def(
          "numpy", [](const PyTensor& s) { return whole_array(s.owner, s.view); },
          "Every element as a read-only array (see is_view).")
      .def("__array__", &array_protocol, py::arg("dtype") = py::none(),
           py::arg("copy") = py::none(),
           "NumPy's array protocol: numpy() as `dtype`; copy=True a writable copy, copy=False "
           "a ValueError where the array cannot be a view of the file (NumPy 2's rule).")
      .def(
          "slice_rows",
          [](const PyTensor& s, std::uint64_t begin, std::uint64_t end) {
            return rows_array(s.owner, s.view, {begin, end});
          },
          py::arg("begin"), py::arg("end"),
          "Rows [begin, end) along axis 0; only their bytes are read.")
      .def("stats", &stats_dict, py::arg("bins") = 32,
           "count, min, max, mean, std, zeros, nans, infinities and a histogram of `bins` "
           "equal bins over [min, max] (as `onnxmap stats --json`), for every numeric type.")
      .def("prefetch", [](const PyTensor& s) { onnxmap::prefetch(s.view); })
      .def("release", [](const PyTensor& s) { s.view.release(); })
      .def("__repr__", &repr);
}

}  // namespace onnxmap::python
