// save(): checks the destinations, plans, then writes each file beside its destination and puts
// them in place when all are complete (write/commit.hpp: data files first, the model last).

#include "onnxmap/save.hpp"

#include <algorithm>
#include <system_error>

#include "common/location.hpp"
#include "onnxmap/error.hpp"
#include "onnxmap/model.hpp"
#include "view/view_access.hpp"
#include "write/builder_plan.hpp"
#include "write/commit.hpp"
#include "write/files.hpp"
#include "write/model_plan.hpp"

namespace onnxmap {

namespace {

namespace fs = std::filesystem;
using detail::Plan;

// Finished data files kept unnamed (and open) until the commit: a process killed before then
// leaves none of them behind.
constexpr std::size_t kUnnamedFiles = 64;

Error unsafe(const fs::path& path, const std::string& why) {
  return {ErrorKind::unsafe_path, why, Error::kNoOffset, {}, path.string()};
}

// A destination must not be a symlink (we never write through one), a folder, or a file the
// model is read from (the source stays intact until the new file is complete).
void check_destination(const fs::path& path, const std::vector<fs::path>& sources) {
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(path, ec);
  if (ec || !fs::exists(status)) return;
  if (fs::is_symlink(status)) {
    throw unsafe(path, "is a symlink; onnxmap never writes through one (remove it first)");
  }
  if (fs::is_directory(status)) {
    throw Error(ErrorKind::io, "is a directory", Error::kNoOffset, {}, path.string());
  }
  for (const fs::path& source : sources) {
    if (fs::equivalent(path, source, ec)) {
      throw unsafe(
          path, "is a file the model is read from (" + source.string() + "); save to another name");
    }
  }
}

// Makes the subfolders a data location names, refusing symlinks on the way; adds those it made to
// `made`, outermost first.
void make_folders(const fs::path& folder, const std::string& location,
                  std::vector<fs::path>& made) {
  fs::path at = folder;
  const fs::path parent = fs::path(location).parent_path();
  for (const fs::path& part : parent) {
    at /= part;
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(at, ec);
    if (fs::is_symlink(status)) throw unsafe(at, "data folder is a symlink; refusing to follow it");
    if (fs::exists(status)) {
      if (!fs::is_directory(status)) throw unsafe(at, "data folder is not a directory");
      continue;
    }
    if (!fs::create_directory(at, ec) && ec) {
      throw Error(ErrorKind::io, "cannot create folder: " + ec.message(), Error::kNoOffset, {},
                  at.string());
    }
    made.push_back(at);
  }
}

// A model opened by URL: every byte of the model file and every external payload is fetched, so
// that the verbatim copy reads the files whole. Nothing for a local model.
void fetch_whole_model(const detail::ModelIndex& index) {
  if (!index.fetcher) return;
  index.fetcher->fetch("", 0, index.file.size());
  std::vector<std::vector<ByteRange>> external(index.data_files.size());
  for (const detail::TensorRecord& t : index.tensors) {
    if (t.storage == TensorStorage::external) {
      external[t.data_file].push_back({t.payload_offset, t.payload_length});
    }
  }
  for (std::size_t f = 0; f < external.size(); ++f) {
    index.fetcher->fetch(index.data_files[f].location, external[f]);
  }
}

// Writes every file of `plan` beside its destination, then puts them in place; the model file
// only `with_model` (else the last data file, a weights file or its index, is put in place last).
void write_files(Plan& plan, const fs::path& path, const fs::path& folder,
                 const SaveOptions& options, SaveResult& result, bool with_model) {
  plan.fill_checksums();
  result.model_bytes = with_model ? plan.compute_sizes() : 0;
  result.data_bytes = plan.data_bytes();
  detail::Progress progress(result.model_bytes + result.data_bytes, options.progress);
  std::vector<io::NewFile> data_files;
  for (const detail::DataFilePlan& file : plan.data_files) {
    detail::OutputFile out(folder / file.location, progress, file.size);
    plan.emit_data_file(file, out);
    data_files.push_back(out.finish(options.durable));
    // Unnamed files need a descriptor each until they are put in place: past a few, they get
    // their temporary names now, so a model of thousands of data files needs no more.
    if (data_files.size() > kUnnamedFiles) data_files.back().name();
    result.data_files.emplace_back(file.location);
  }
  if (!with_model) {
    io::NewFile last = std::move(data_files.back());
    data_files.pop_back();
    detail::commit_model(data_files, last, options.durable);
    progress.finish();
    return;
  }
  detail::OutputFile out(path, progress, result.model_bytes);
  plan.emit(0, out);
  io::NewFile model = out.finish(options.durable);
  detail::commit_model(data_files, model, options.durable);
  progress.finish();
}

SaveResult write_plan(Plan& plan, const fs::path& path, const std::vector<fs::path>& sources,
                      const SaveOptions& options, SaveResult result, bool with_model = true) {
  if (!path.has_filename()) {
    throw Error(ErrorKind::invalid_argument, "the model path names no file", Error::kNoOffset, {},
                path.string());
  }
  const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    throw Error(ErrorKind::io, "folder does not exist", Error::kNoOffset, {}, folder.string());
  }
  check_destination(path, sources);
  // A failed save removes the folders it made for its data files too (when they are empty).
  std::vector<fs::path> made;
  try {
    for (const detail::DataFilePlan& file : plan.data_files) {
      make_folders(folder, file.location, made);
      check_destination(folder / file.location, sources);
    }
    write_files(plan, path, folder, options, result, with_model);
  } catch (...) {
    std::error_code ignored;
    for (auto it = made.rbegin(); it != made.rend(); ++it) fs::remove(*it, ignored);
    throw;
  }
  return result;
}

// The files `model` is read from, which a save must not overwrite.
std::vector<fs::path> source_files(const detail::ModelIndex& index) {
  std::vector<fs::path> sources;
  if (!index.file.path().empty() && index.file.path() != "-") sources.push_back(index.file.path());
  for (const detail::DataFile& file : index.data_files) sources.push_back(file.file.path());
  return sources;
}

// A ".safetensors" path: the tensors alone.
SaveResult save_weights(const Model& model, const std::filesystem::path& path,
                        const SaveOptions& options) {
  const detail::ModelIndex& index = *detail::ViewAccess::index(model);
  if (!options.weights_from.source.empty()) {
    throw Error(ErrorKind::invalid_argument,
                "a weights file is written from the model's tensors, not from a checkpoint",
                Error::kNoOffset, {}, path.string());
  }
  SaveOptions weights = options;
  weights.data_format = DataFormat::safetensors;
  weights.external_data = ExternalData::external;
  weights.location = path.filename().string();
  weights.size_threshold = 0;
  detail::DataLayout layout(weights, true, path.filename().string() + ".onnx");
  layout.set_weights_only();
  Plan plan;
  SaveResult result;
  detail::plan_model(model, layout, plan, result);
  layout.finish(plan);
  if (plan.data_files.empty()) {
    throw Error(ErrorKind::invalid_argument, "the model has no tensor to write as safetensors",
                Error::kNoOffset, {}, index.file.path().string());
  }
  result.copied_messages = 0;
  return write_plan(plan, path, source_files(index), weights, std::move(result), false);
}

}  // namespace

SaveResult save(const Model& model, const std::filesystem::path& path, const SaveOptions& options) {
  const detail::ModelIndex& index = *detail::ViewAccess::index(model);
  fetch_whole_model(index);  // untouched bytes are copied from the files verbatim
  if (path.extension() == ".safetensors") return save_weights(model, path, options);
  const std::vector<fs::path> sources = source_files(index);

  // keep: external where the source has any external tensor.
  const bool sharing = !options.weights_from.source.empty();
  const bool external =
      options.external_data == ExternalData::external ||
      (options.external_data == ExternalData::keep &&
       (sharing || options.data_format == DataFormat::safetensors ||
        std::any_of(index.tensors.begin(), index.tensors.end(),
                    [](const auto& r) { return r.storage == TensorStorage::external; })));
  detail::DataLayout layout(options, external, path.filename().string());
  Plan plan;
  SaveResult result;
  const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  detail::plan_model(model, layout, plan, result, sharing ? &options.weights_from : nullptr,
                     folder);
  layout.finish(plan);
  return write_plan(plan, path, sources, options, std::move(result));
}

std::vector<std::byte> serialize_in_place(const Model& model, const std::string& location,
                                          std::uint64_t size_threshold) {
  if (const char* why = detail::location_text_problem(location)) {
    throw Error(ErrorKind::unsafe_path, "external data location \"" + location + "\" " + why);
  }
  fetch_whole_model(*detail::ViewAccess::index(model));
  SaveOptions options;
  options.size_threshold = size_threshold;
  detail::DataLayout layout(options, location);
  Plan plan;
  SaveResult result;
  detail::plan_model(model, layout, plan, result);
  detail::MemoryOutput out(plan.compute_sizes());
  plan.emit(0, out);
  return out.take();
}

SaveResult save(const ModelBuilder& model, const std::filesystem::path& path,
                const SaveOptions& options) {
  detail::DataLayout layout(options, options.external_data == ExternalData::external,
                            path.filename().string());
  Plan plan;
  SaveResult result;
  detail::plan_builder(model, layout, plan, result);
  layout.finish(plan);
  return write_plan(plan, path, {}, options, std::move(result));
}

}  // namespace onnxmap
