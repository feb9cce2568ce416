// Keyword arguments shared by open, peek, check and convert: how a model is opened.

#include <string>

#include "binding.hpp"

namespace onnxmap::python {

void take_load_mode(py::dict& kwargs, LoadMode& mode) {
  std::string name(to_string(mode));
  take_kwarg(kwargs, "mode", name);
  const auto named = parse_load_mode(name);
  if (!named) {
    raise_invalid("load mode must be \"map\", \"read\" or \"direct\", not \"" + name + "\"");
  }
  mode = *named;
}

OpenOptions take_open_options(py::dict& kwargs) {
  OpenOptions options;
  take_load_mode(kwargs, options.mode);
  take_kwarg(kwargs, "max_depth", options.max_depth);
  take_kwarg(kwargs, "max_tensors", options.max_tensors);
  take_kwarg(kwargs, "max_messages", options.max_messages);
  take_kwarg(kwargs, "allow_external_outside_folder", options.allow_external_outside_folder);
  take_kwarg(kwargs, "collect_payload_errors", options.collect_payload_errors);
  std::string cache_dir;
  std::string ca_file;
  take_kwarg(kwargs, "cache_dir", cache_dir);
  take_kwarg(kwargs, "timeout_seconds", options.remote.timeout_seconds);
  take_kwarg(kwargs, "retry_attempts", options.remote.retry_attempts);
  take_kwarg(kwargs, "retry_base_seconds", options.remote.retry_base_seconds);
  take_kwarg(kwargs, "retry_max_wait_seconds", options.remote.retry_max_wait_seconds);
  take_kwarg(kwargs, "retry_total_wait_seconds", options.remote.retry_total_wait_seconds);
  take_kwarg(kwargs, "ca_file", ca_file);
  options.remote.cache_dir = cache_dir;
  options.remote.ca_file = ca_file;
  return options;
}

void reject_unknown(const py::dict& kwargs, const char* function) {
  for (const auto& item : kwargs) {
    throw py::type_error(std::string(function) + "() got an unexpected keyword argument '" +
                         py::str(item.first).cast<std::string>() + "'");
  }
}

ModelPtr open_model(const std::filesystem::path& path, const OpenOptions& options) {
  py::gil_scoped_release unlocked;
  return std::make_shared<const Model>(Model::open(path, options));
}

}  // namespace onnxmap::python
