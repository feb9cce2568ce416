// Whole-file operations: peek, check, save and convert, with the GIL released while they run.

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "binding.hpp"

namespace onnxmap::python {

namespace {

namespace fs = std::filesystem;

struct PySummary {
  std::shared_ptr<const ModelSummary> summary;
};

// A Python callable called with (done, total) from the writing thread, holding the GIL.
std::function<void(std::uint64_t, std::uint64_t)> progress_callback(const py::object& callable) {
  if (callable.is_none()) return {};
  return [callable](std::uint64_t done, std::uint64_t total) {
    const py::gil_scoped_acquire locked;
    callable(done, total);
  };
}

// weights_from (a path), weights_names (a dict of str), compare_all_bytes, match_content and
// share_transposed: SaveOptions::weights_from.
void take_weights_from(py::dict& kwargs, WeightsFrom& weights) {
  take_kwarg(kwargs, "weights_from", weights.source);
  if (kwargs.contains("weights_names")) {
    for (const auto& [key, value] : kwargs["weights_names"].cast<py::dict>()) {
      weights.names.emplace(key.cast<std::string>(), value.cast<std::string>());
    }
    PyDict_DelItemString(kwargs.ptr(), "weights_names");
  }
  take_kwarg(kwargs, "compare_all_bytes", weights.compare_all_bytes);
  take_kwarg(kwargs, "match_content", weights.match_content);
  take_kwarg(kwargs, "share_transposed", weights.share_transposed);
}

SaveOptions take_save_options(py::dict& kwargs) {
  SaveOptions options;
  // external_data: True, False, or None (where the source keeps it).
  if (kwargs.contains("external_data")) {
    const py::object value = kwargs["external_data"];
    options.external_data = value.is_none()      ? ExternalData::keep
                            : value.cast<bool>() ? ExternalData::external
                                                 : ExternalData::inline_data;
    PyDict_DelItemString(kwargs.ptr(), "external_data");
  }
  if (kwargs.contains("data_format")) {
    const auto format = kwargs["data_format"].cast<std::string>();
    if (format != "raw" && format != "safetensors") {
      throw Error(ErrorKind::invalid_argument,
                  "data_format is \"raw\" or \"safetensors\", not \"" + format + "\"");
    }
    options.data_format = format == "raw" ? DataFormat::raw : DataFormat::safetensors;
    PyDict_DelItemString(kwargs.ptr(), "data_format");
  }
  take_kwarg(kwargs, "location", options.location);
  take_kwarg(kwargs, "size_threshold", options.size_threshold);
  take_kwarg(kwargs, "one_file_per_tensor", options.one_file_per_tensor);
  take_kwarg(kwargs, "max_external_file_size", options.max_external_file_size);
  take_kwarg(kwargs, "align", options.align);
  take_kwarg(kwargs, "convert_attribute", options.convert_attribute);
  take_kwarg(kwargs, "durable", options.durable);
  take_kwarg(kwargs, "checksum", options.checksum);
  if (kwargs.contains("progress")) {
    options.progress = progress_callback(kwargs["progress"]);
    PyDict_DelItemString(kwargs.ptr(), "progress");
  }
  take_weights_from(kwargs, options.weights_from);
  return options;
}

py::dict count_dict(const TensorCount& count) {
  py::dict out;
  out["tensors"] = count.tensors;
  out["bytes"] = count.bytes;
  return out;
}

py::dict shared_dict(const SharedWeights& shared) {
  py::dict out;
  out["by_name"] = count_dict(shared.by_name);
  out["by_content"] = count_dict(shared.by_content);
  out["transposed"] = count_dict(shared.transposed);
  out["transposed_kept"] = count_dict(shared.transposed_kept);
  out["own"] = count_dict(shared.own);
  return out;
}

py::dict result_dict(const SaveResult& r) {
  py::list files;
  for (const fs::path& f : r.data_files) files.append(f.string());
  py::dict out;
  out["model_bytes"] = r.model_bytes;
  out["data_files"] = files;
  out["data_bytes"] = r.data_bytes;
  out["external_tensors"] = r.external_tensors;
  out["copied_messages"] = r.copied_messages;
  out["reencoded_tensors"] = r.reencoded_tensors;
  out["shared"] = shared_dict(r.shared);
  return out;
}

py::dict save_model(const py::handle& model, const fs::path& path, py::kwargs kwargs) {
  py::dict args(kwargs);
  const SaveOptions options = take_save_options(args);
  reject_unknown(args, "save");
  const ModelPtr source = model_of(model);
  SaveResult result;
  {
    py::gil_scoped_release unlocked;
    result = save(*source, path, options);
  }
  return result_dict(result);
}

// Opens `src` and saves it as `dst`. external_data=None keeps the data where the source keeps
// it (external if any tensor is), as `onnxmap convert` does without --external-data/--inline.
py::dict convert_model(const fs::path& src, const fs::path& dst, py::kwargs kwargs) {
  py::dict args(kwargs);
  if (!args.contains("external_data")) args["external_data"] = py::none();
  const OpenOptions open_options = take_open_options(args);
  const SaveOptions options = take_save_options(args);
  reject_unknown(args, "convert");
  SaveResult result;
  {
    py::gil_scoped_release unlocked;
    const Model model = Model::open(src, open_options);
    result = save(model, dst, options);
  }
  return result_dict(result);
}

// The model's bytes with its large raw_data tensors as external data naming their own bytes in
// the model file, `location` (serialize_in_place): the graph onnxmap.ort hands ONNX Runtime.
py::bytes serialize_model_in_place(const py::handle& model, const std::string& location,
                                   std::uint64_t size_threshold) {
  const ModelPtr source = model_of(model);
  std::vector<std::byte> bytes;
  {
    py::gil_scoped_release unlocked;
    bytes = serialize_in_place(*source, location, size_threshold);
  }
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

py::list check_model(const fs::path& path, py::kwargs kwargs) {
  py::dict args(kwargs);
  CheckOptions options;
  take_kwarg(args, "read_data", options.read_data);
  options.open = take_open_options(args);
  reject_unknown(args, "check");
  CheckReport report;
  {
    py::gil_scoped_release unlocked;
    report = check(path, options);
  }
  // (kind, path, detail, offset) tuples; the package makes them onnxmap.Problem.
  py::list out;
  for (const Problem& p : report.problems) {
    out.append(py::make_tuple(std::string(to_string(p.kind)), p.path, p.detail,
                              p.offset == Error::kNoOffset ? py::none() : py::cast(p.offset)));
  }
  return out;
}

PySummary peek_model(const fs::path& path, py::kwargs kwargs) {
  py::dict args(kwargs);
  const OpenOptions options = take_open_options(args);
  reject_unknown(args, "peek");
  py::gil_scoped_release unlocked;
  return PySummary{std::make_shared<const ModelSummary>(peek(path, options))};
}

void bind_summary(py::module_& m) {
  ScopedClass<PySummary>(
      m, "ModelSummary",
      "What peek() reads: the model's own fields and the main graph's inputs and outputs.")
      .def_property_readonly("ir_version",
                             [](const PySummary& s) { return s.summary->ir_version(); })
      .def_property_readonly(
          "producer_name",
          [](const PySummary& s) { return std::string(s.summary->producer_name()); })
      .def_property_readonly(
          "producer_version",
          [](const PySummary& s) { return std::string(s.summary->producer_version()); })
      .def_property_readonly("domain",
                             [](const PySummary& s) { return std::string(s.summary->domain()); })
      .def_property_readonly("model_version",
                             [](const PySummary& s) { return s.summary->model_version().raw; })
      .def_property_readonly(
          "doc_string", [](const PySummary& s) { return std::string(s.summary->doc_string()); })
      .def_property_readonly(
          "opset_imports",
          [](const PySummary& s) { return opset_dict(s.summary->opset_imports()); })
      .def_property_readonly(
          "metadata_props",
          [](const PySummary& s) { return string_dict(s.summary->metadata_props()); })
      .def_property_readonly(
          "graph_name", [](const PySummary& s) { return std::string(s.summary->graph_name()); })
      .def_property_readonly(
          "inputs",
          [](const PySummary& s) { return wrap_value_infos(s.summary, s.summary->inputs()); })
      .def_property_readonly(
          "outputs",
          [](const PySummary& s) { return wrap_value_infos(s.summary, s.summary->outputs()); })
      .def_property_readonly("file_size",
                             [](const PySummary& s) { return s.summary->file_size(); });
}

}  // namespace

void bind_files(py::module_& m) {
  bind_summary(m);
  def_function(m, "_peek", &peek_model, py::arg("path"));
  def_function(m, "_check", &check_model, py::arg("path"));
  def_function(m, "_save", &save_model, py::arg("model"), py::arg("path"));
  def_function(m, "_convert", &convert_model, py::arg("src"), py::arg("dst"));
  def_function(m, "_serialize_in_place", &serialize_model_in_place, py::arg("model"),
               py::arg("location"), py::arg("size_threshold"));
}

}  // namespace onnxmap::python
