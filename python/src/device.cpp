// Model._device_plan and _DevicePlan: the library's load_to_device (device.hpp) under
// Model.load_to_torch (onnxmap/device.py). The plan is made once; Python allocates a tensor per
// item from its shape and type, then the plan copies every item into those tensors with the
// GIL released. The progress callback runs on the calling thread with the GIL held.

#include <pybind11/stl.h>

#include <cstdint>
#include <optional>

#include "binding.hpp"

namespace onnxmap::python {

namespace {

class DevicePlan {
 public:
  DevicePlan(ModelPtr model, std::vector<LoadItem> items)
      : model_(std::move(model)), items_(std::move(items)) {}

  // (name, ONNX type name, shape, bytes) per item, in plan order.
  [[nodiscard]] py::list items() const {
    py::list out;
    for (const LoadItem& item : items_) {
      out.append(py::make_tuple(std::string(item.tensor.lookup_name()),
                                to_string(item.tensor.data_type()), item_shape(item),
                                item.byte_size()));
    }
    return out;
  }

  [[nodiscard]] py::dict load(const std::vector<std::uintptr_t>& pointers, py::kwargs kwargs);

 private:
  ModelPtr model_;  // the items' tensors are views of it
  std::vector<LoadItem> items_;
};

DevicePath device_path_named(const std::string& name) {
  if (name == "automatic") return DevicePath::automatic;
  if (name == "registered") return DevicePath::registered;
  if (name == "pinned") return DevicePath::pinned;
  raise_invalid("path '" + name + "': expected automatic, registered or pinned");
}

// A Python exception from the progress callback or a signal (Ctrl-C) noticed meanwhile,
// carried through the loader, which stops; the binding raises it again.
struct PythonFailed : std::exception {};

py::dict DevicePlan::load(const std::vector<std::uintptr_t>& pointers, py::kwargs kwargs) {
  py::dict args(kwargs);
  DeviceLoadOptions options;
  take_kwarg(args, "device", options.device);
  std::string path = "automatic";
  take_kwarg(args, "path", path);
  options.path = device_path_named(path);
  take_load_mode(args, options.load.mode);
  take_kwarg(args, "threads", options.load.threads);
  take_kwarg(args, "max_in_flight_bytes", options.load.max_in_flight_bytes);
  py::object progress = py::none();
  take_kwarg(args, "progress", progress);
  const std::optional<Manifest> manifest = take_manifest(args);
  reject_unknown(args, "load_to_device");
  std::optional<LandedVerifier> verifier;
  if (manifest) {
    verifier = verify_as_loaded(*manifest, items_);
    options.on_piece = verifier->on_piece;
  }

  std::vector<void*> destinations;
  destinations.reserve(pointers.size());
  // NOLINTNEXTLINE(performance-no-int-to-ptr): torch's data_ptr() is an address
  for (const std::uintptr_t p : pointers) destinations.push_back(reinterpret_cast<void*>(p));

  std::optional<py::error_already_set> failure;
  if (!progress.is_none()) {
    options.load.progress = [&](std::uint64_t done, std::uint64_t total) {
      const py::gil_scoped_acquire locked;
      try {
        progress(done, total);
      } catch (py::error_already_set& e) {
        failure.emplace(std::move(e));
        throw PythonFailed();
      }
    };
  }
  // Ctrl-C while the GIL is released: the interpreter only notes the signal; asking for it
  // here turns it into KeyboardInterrupt, raised once the copies in flight have ended.
  options.load.cancelled = [&] {
    const py::gil_scoped_acquire locked;
    if (PyErr_CheckSignals() == 0) return false;
    failure.emplace();
    return true;
  };
  DeviceLoadStats stats;
  try {
    const py::gil_scoped_release unlocked;
    stats = load_to_device(items_, destinations, options);
  } catch (const PythonFailed&) {
    throw std::move(*failure);
  } catch (const Error&) {
    if (failure) throw std::move(*failure);
    throw;
  }
  py::dict out = load_stats_dict(fields_of(stats));
  add_verified(out, verifier);
  return out;
}

DevicePlan device_plan(const py::handle& self, py::kwargs kwargs) {
  py::dict args(kwargs);
  const Selection chosen = selection(args);
  reject_unknown(args, "_device_plan");
  ModelPtr model = model_of(self);
  std::vector<LoadItem> items = plan_of(*model, chosen);
  return {std::move(model), std::move(items)};
}

// Checks a device name ("host", "cuda", "cuda:N") and that the device is there, before
// anything is allocated for it: invalid_argument or device errors as load_to_device gives them.
void check_device(const std::string& device) {
  DeviceLoadOptions options;
  options.device = device;
  const py::gil_scoped_release unlocked;
  (void)load_to_device({}, std::span<void* const>{}, options);
}

}  // namespace

void bind_device(py::module_& m) {
  ScopedClass<DevicePlan>(m, "_DevicePlan",
                          "Model._device_plan(): tensors chosen as Model.load chooses them, to "
                          "be copied into memory the caller allocated (load_to_device)")
      .def_property_readonly("items", &DevicePlan::items,
                             "(name, ONNX type, shape, bytes) of each item, in plan order")
      .def("load", &DevicePlan::load, py::arg("pointers"),
           "load(pointers, *, device=\"cuda:0\", path=\"automatic\", mode=\"direct\", "
           "threads=None, max_in_flight_bytes=None, progress=None, verify=None): copies item i "
           "to the address pointers[i] on `device` (\"host\": host memory) with the GIL "
           "released, each tensor verified against the manifest `verify` as it is read; "
           "returns the stats as a dict");
  def_method(m.attr("Model"), "_device_plan", &device_plan,
             py::doc("_device_plan(*, filter=None, names=None, shard=None) -> _DevicePlan"));
  def_function(m, "_check_device", &check_device, py::arg("device"),
               "Raises onnxmap.Error when `device` is not a device name or not on this machine");
}

}  // namespace onnxmap::python
