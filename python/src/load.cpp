// Model.load and Model.prefetch: the library's streaming loader (load.hpp) from Python. Files are
// read with the GIL released; the callbacks run on the calling thread with the GIL held.

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <optional>
#include <unordered_set>
#include <variant>

#include "binding.hpp"

namespace onnxmap::python {

namespace {

// Whether `t` is the tensor Model.keys() names: the outermost tensor of a non-empty name.
bool is_keyed(const Model& model, const Tensor& t) {
  const std::string_view name = t.lookup_name();
  const auto outermost = name.empty() ? std::nullopt : model.find_tensor(name);
  return outermost && *outermost == t;
}

}  // namespace

py::dict load_stats_dict(const std::vector<StatsField>& fields) {
  py::dict out;
  for (const StatsField& field : fields) {
    const py::str name(field.name.data(), field.name.size());
    out[name] = std::visit([](const auto& value) { return py::cast(value); }, field.value);
  }
  return out;
}

// The tensors of keys() whose name matches the glob `filter`, in model order, or those `names`
// lists, in that order; with a shard, its rows of each (onnxmap::plan).
std::vector<LoadItem> plan_of(const Model& model, const Selection& s) {
  PlanOptions options;
  if (s.filter) options.filter = *s.filter;
  if (s.names) options.names = *s.names;
  if (s.shard) std::tie(options.rank, options.ranks) = *s.shard;
  std::vector<LoadItem> items = plan(model, options);
  if (!s.names) {
    std::erase_if(items, [&](const LoadItem& item) { return !is_keyed(model, item.tensor); });
  }
  return items;
}

Selection selection(py::dict& kwargs) {
  Selection s;
  take_kwarg(kwargs, "filter", s.filter);
  take_kwarg(kwargs, "names", s.names);
  take_kwarg(kwargs, "shard", s.shard);
  return s;
}

std::vector<py::ssize_t> item_shape(const LoadItem& item) {
  const auto dims = item.tensor.dims();
  std::vector<py::ssize_t> shape(dims.begin(), dims.end());
  if (item.row_end != kAllRows) shape[0] = static_cast<py::ssize_t>(item.row_end - item.row_begin);
  return shape;
}

namespace {

// Tensors the loader has no raw layout for (STRING) or NumPy cannot hold (an unknown type):
// Tensor.numpy() gives the first as object arrays and names the error of the second.
bool through_numpy(const Tensor& t) {
  const auto tr = traits(t.data_type());
  return !tr || t.data_type() == DataType::string;
}

LoadOptions load_options(py::dict& kwargs) {
  LoadOptions options;
  take_load_mode(kwargs, options.mode);
  take_kwarg(kwargs, "threads", options.threads);
  take_kwarg(kwargs, "request_bytes", options.request_bytes);
  take_kwarg(kwargs, "max_in_flight_bytes", options.max_in_flight_bytes);
  take_kwarg(kwargs, "max_gap_bytes", options.max_gap_bytes);
  take_kwarg(kwargs, "release_after_callback", options.release_after_callback);
  return options;
}

// A Python exception raised by a callback, carried through the C++ loader: the callback stores
// it and throws CallbackFailed, which stops the load; the binding raises it again.
struct CallbackFailed : std::exception {};

// Runs `call` with the GIL held, turning a Python exception into CallbackFailed.
template <class Call>
void call_python(std::optional<py::error_already_set>& failure, const Call& call) {
  const py::gil_scoped_acquire locked;
  try {
    call();
  } catch (py::error_already_set& e) {
    failure.emplace(std::move(e));
    throw CallbackFailed();
  }
}

py::dtype item_dtype(const LoadItem& item) {
  return py::dtype(std::string(traits(item.tensor.data_type())->numpy_descr));
}

std::span<std::byte> array_bytes(py::array& array) {
  return {static_cast<std::byte*>(array.mutable_data()), static_cast<std::size_t>(array.nbytes())};
}

bool is_sub_byte(const LoadItem& item) {
  return traits(item.tensor.data_type())->bits < 8;
}

// A new array of `bytes`, unpacked for sub-byte types.
py::array copied_array(const LoadItem& item, std::span<const std::byte> bytes) {
  py::array copy(item_dtype(item), item_shape(item));
  if (is_sub_byte(item)) {
    unpack_sub_byte(item.tensor.data_type(), bytes, array_bytes(copy));
  } else if (!bytes.empty()) {  // an empty tensor's span may be null: memcpy must not see it
    std::memcpy(array_bytes(copy).data(), bytes.data(), bytes.size());
  }
  return copy;
}

// An array of the bytes the loader hands over in map mode: a view of the model's bytes for raw
// and external data (valid after the callback: it holds the model), else a copy, unpacked for
// sub-byte types (library buffers last only until the callback returns).
py::array mapped_array(const Owner& owner, const LoadItem& item, std::span<const std::byte> bytes) {
  if (item.tensor.has_stored_bytes() && !is_sub_byte(item)) {
    return model_bytes_array(owner, bytes, item_dtype(item), item_shape(item));
  }
  return copied_array(item, bytes);
}

// An array over a library buffer the loader handed over (LoadedTensor::owner), which the
// array keeps: writable, as the buffer is no one else's. Sub-byte types are unpacked into a
// new array, and bytes the model holds (a model opened in the read or direct mode) copied.
py::array kept_buffer_array(const LoadItem& item, const LoadedTensor& loaded) {
  if (is_sub_byte(item) || loaded.owner == nullptr || loaded.bytes.empty()) {
    return copied_array(item, loaded.bytes);
  }
  auto keep = std::make_unique<Owner>(loaded.owner);
  py::capsule base(keep.get(), [](void* p) { delete static_cast<Owner*>(p); });
  (void)keep.release();  // the capsule owns it now
  // The loader does not write the buffer again: the const it hands bytes out with is the
  // loader's, not the memory's.
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast)
  void* data = const_cast<std::byte*>(loaded.bytes.data());
  return {item_dtype(item), item_shape(item), {}, data, base};
}

// Where load_into puts each item: a new NumPy array, or for sub-byte types a packed buffer that
// is unpacked into the array before the callback. Each is made when the loader schedules the
// item's read (with the GIL held), so the loader's max_in_flight_bytes bounds them; the
// callback takes the array and the packed buffer goes.
struct Destinations {
  explicit Destinations(std::size_t items) : arrays(items), packed(items) {}

  std::span<std::byte> make(std::size_t i, const LoadItem& item) {
    py::array array(item_dtype(item), item_shape(item));
    arrays[i] = array;
    if (!is_sub_byte(item)) return array_bytes(array);
    const std::uint64_t bits = traits(item.tensor.data_type())->bits;
    packed[i].resize(static_cast<std::size_t>((array.size() * bits + 7) / 8));
    return packed[i];
  }

  std::vector<py::object> arrays;  // handed to the callback
  std::vector<std::vector<std::byte>> packed;
};

// Tensors without a raw layout go first, through Tensor.numpy(); the rest through the loader.
std::vector<LoadItem> deliver_through_numpy(const ModelPtr& model, std::vector<LoadItem> plan,
                                            const py::object& callback) {
  std::vector<LoadItem> rest;
  for (LoadItem& item : plan) {
    if (!through_numpy(item.tensor)) {
      rest.push_back(std::move(item));
      continue;
    }
    const std::string name(item.tensor.lookup_name());
    callback(name, wrap_tensor(model, item.tensor).attr("numpy")());
  }
  return rest;
}

py::dict load_tensors(const py::handle& self, const py::object& callback, py::kwargs kwargs) {
  py::dict args(kwargs);
  const Selection chosen = selection(args);
  LoadOptions options = load_options(args);
  py::object progress = py::none();
  take_kwarg(args, "progress", progress);
  const std::optional<Manifest> manifest = take_manifest(args);
  reject_unknown(args, "load");
  const ModelPtr model = model_of(self);
  const std::vector<LoadItem> plan =
      deliver_through_numpy(model, plan_of(*model, chosen), callback);
  std::optional<LandedVerifier> verifier;
  if (manifest) {
    verifier = verify_as_loaded(*manifest, plan);
    options.on_landed = verifier->on_landed;
  }

  std::optional<py::error_already_set> failure;
  if (!progress.is_none()) {
    options.progress = [&](std::uint64_t done, std::uint64_t total) {
      call_python(failure, [&] { progress(done, total); });
    };
  }
  Destinations into(plan.size());
  const BufferFor buffer_for = [&](std::size_t item) {
    std::span<std::byte> buffer;
    call_python(failure, [&] { buffer = into.make(item, plan[item]); });
    return buffer;
  };
  const auto on_tensor = [&](const LoadedTensor& loaded) {
    call_python(failure, [&] {
      const LoadItem& item = plan[loaded.item];
      py::object array;
      if (options.mode == LoadMode::map) {
        array = mapped_array(model, item, loaded.bytes);
      } else if (options.mode == LoadMode::direct) {
        array = kept_buffer_array(item, loaded);
      } else {
        array = std::move(into.arrays[loaded.item]);  // the callback owns it from here
        if (is_sub_byte(item)) {
          py::array unpacked = py::reinterpret_borrow<py::array>(array);
          unpack_sub_byte(item.tensor.data_type(), loaded.bytes, array_bytes(unpacked));
          into.packed[loaded.item] = std::vector<std::byte>();
        }
      }
      callback(std::string(item.tensor.lookup_name()), array);
    });
  };
  LoadStats stats;
  try {
    const py::gil_scoped_release unlocked;
    // read: straight into new arrays (preadv); direct: into the loader's aligned buffers, which
    // the arrays keep (a direct read lands in place only there); map: views.
    stats = options.mode == LoadMode::read ? load_into(plan, buffer_for, on_tensor, options)
                                           : load(plan, on_tensor, options);
  } catch (const CallbackFailed&) {
    throw std::move(*failure);
  }
  py::dict out = load_stats_dict(fields_of(stats));
  add_verified(out, verifier);
  return out;
}

void prefetch_tensors(const py::handle& self, const py::object& filter, py::kwargs kwargs) {
  py::dict args(kwargs);
  if (!filter.is_none()) args["filter"] = filter;
  const Selection chosen = selection(args);
  LoadOptions options;
  take_kwarg(args, "threads", options.threads);
  take_kwarg(args, "request_bytes", options.request_bytes);
  take_kwarg(args, "max_gap_bytes", options.max_gap_bytes);
  reject_unknown(args, "prefetch");
  const ModelPtr model = model_of(self);
  const std::vector<LoadItem> plan = plan_of(*model, chosen);
  const py::gil_scoped_release unlocked;
  prefetch(plan, options);
}

}  // namespace

constexpr const char* kLoadDoc =
    "load(callback, *, filter=None, names=None, shard=None, mode=\"read\", threads=None, "
    "progress=None, request_bytes=None, max_in_flight_bytes=None, max_gap_bytes=None, "
    "release_after_callback=None, verify=None); None keeps LoadOptions' default.\n\n"
    "Streams tensors from the disk with the library's loader: large reads in file order on "
    "`threads` threads, callback(name, array) on this thread as soon as a tensor is "
    "complete.\n\nWhich tensors: those keys() names, or only those matching the glob "
    "`filter` (\"*.weight\"), or those in `names`; shard=(rank, ranks) takes rows "
    "[rows*rank//ranks, rows*(rank+1)//ranks) of every tensor with at least `ranks` rows "
    "whose rows are whole bytes, the others whole.\n\nmode \"read\" (buffered) and "
    "\"direct\" (O_DIRECT, the page cache left alone) read each tensor straight into a new "
    "writable array, which is the callback's to keep (no further copy; in direct mode the "
    "array is over an aligned buffer laid out like the file, so tensors under 1 MiB, read "
    "with their neighbours, are copied once); each is made when its read is scheduled, so "
    "max_in_flight_bytes bounds those the loader holds. "
    "mode \"map\" fills the page cache with "
    "large reads and gives read-only views of the mapped file (no copy; they keep the model "
    "mapped), dropping each tensor's pages from this process after its callback unless "
    "release_after_callback=False (a view stays valid: its pages are read again when "
    "touched). Typed-field tensors, 4- and 2-bit types (unpacked) and STRING tensors come "
    "as copies, as Tensor.numpy() gives them. progress(bytes_done, bytes_total) is called "
    "after each tensor.\n\nThe GIL is released while files are read; callbacks run with it "
    "held. An exception in a callback stops the load and is raised here. Returns a dict: "
    "tensors, bytes, seconds and cpu_seconds (the load's wall and CPU time), bytes_read, "
    "requests, fresh_buffer_bytes (library buffers allocated, not reused), bytes_copied (copied "
    "after their read), direct (every file was read with O_DIRECT), and for a model opened by "
    "URL retries and retry_wait_ms (its fetch's).\n\nverify: a Manifest (Model.hash, "
    "Manifest.read) or a path to one: each whole tensor's digest is computed as its bytes land, "
    "on the reading threads, and a tensor that differs stops the load with an onnxmap.Error "
    "(kind bad_tensor) naming it, its file and both digests, before its callback; the dict then "
    "also holds verified and not_verified (typed fields, and the row slices of a shard whose "
    "digests the manifest lacks: Model.hash(ranks=) gives them).";

constexpr const char* kPrefetchDoc =
    "prefetch(filter=None, *, names=None, shard=None, threads=None, request_bytes=None, "
    "max_gap_bytes=None)\n\n"
    "Reads the chosen tensors' bytes (as load() chooses them) into the page cache with "
    "large requests on `threads` threads, so that touching them through the map later costs "
    "no disk read; returns when they are read. For a model opened with mode=\"map\"; the "
    "GIL is released.";

void bind_load(py::module_& m) {
  def_method(m.attr("Model"), "load", &load_tensors, py::arg("callback"), py::doc(kLoadDoc));
  def_method(m.attr("Model"), "prefetch", &prefetch_tensors, py::arg("filter") = py::none(),
             py::doc(kPrefetchDoc));
}

}  // namespace onnxmap::python
