#include "write/data_layout.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <utility>

#include "common/location.hpp"
#include "onnxmap/error.hpp"
#include "onnxmap/schema.hpp"
#include "schema/fields.hpp"
#include "wire/wire.hpp"

namespace onnxmap::detail {

namespace {

using TP = schema::TensorProto;

std::uint64_t align_up(std::uint64_t offset, std::uint64_t align) {
  return (offset + align - 1) / align * align;
}

// A location must stay inside the model's folder (location.hpp) and end in a file name.
std::string checked_location(const std::string& location) {
  const std::filesystem::path path(location);
  const auto fail = [&](const char* why) {
    return Error(ErrorKind::unsafe_path, "external data location \"" + location + "\" " + why);
  };
  if (const char* why = location_text_problem(location)) throw fail(why);
  const std::filesystem::path normal = path.lexically_normal();
  if (!normal.has_filename() || normal.filename() == ".") throw fail("must name a file");
  return normal.generic_string();
}

// A tensor name as a file name: bytes outside [A-Za-z0-9._-] become '_', no leading dot (no
// hidden files, no ".."), at most 200 bytes.
std::string file_name_for(std::string_view tensor_name) {
  std::string name(tensor_name.substr(0, 200));
  for (char& c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (!std::isalnum(u) && c != '.' && c != '_' && c != '-') c = '_';
  }
  if (!name.empty() && name.front() == '.') name.front() = '_';
  return name.empty() ? "tensor" : name;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

void append_entry(wire::Writer& w, std::string_view key, std::string_view value) {
  wire::Writer entry;
  entry.field_string(schema::StringStringEntryProto::kKey, key);
  entry.field_string(schema::StringStringEntryProto::kValue, value);
  w.field_bytes(TP::kExternalData, entry.bytes());
}

}  // namespace

DataLayout::DataLayout(const SaveOptions& options, bool external,
                       const std::string& model_file_name)
    : options_(options), external_(external) {
  if (options.align == 0 || (options.align & (options.align - 1)) != 0) {
    throw Error(ErrorKind::invalid_argument,
                "align must be a power of two, not " + std::to_string(options.align));
  }
  if (!external_) return;
  const bool safetensors = options.data_format == DataFormat::safetensors;
  if (safetensors && options.one_file_per_tensor) {
    throw Error(ErrorKind::invalid_argument,
                "one file per tensor is not a safetensors layout (use a shard size)");
  }
  const std::string default_location =
      safetensors ? "model.safetensors" : model_file_name + ".data";
  location_ = checked_location(options.location.empty() ? default_location : options.location);
  const auto slash = location_.rfind('/');
  folder_ = slash == std::string::npos ? "" : location_.substr(0, slash + 1);
  if (location_ == model_file_name) {
    throw Error(ErrorKind::invalid_argument,
                "external data location \"" + location_ + "\" is the model file itself");
  }
  used_names_.insert(lower(model_file_name));
}

DataLayout::DataLayout(const SaveOptions& options, std::string model_location)
    : options_(options), external_(true), in_place_(true), location_(std::move(model_location)) {}

bool DataLayout::may_go_external(const PayloadInfo& tensor) const {
  return tensor.movable && tensor.size > 0 && tensor.size >= options_.size_threshold &&
         (!tensor.in_attribute || options_.convert_attribute);
}

std::string DataLayout::per_tensor_location(std::string_view tensor_name) {
  const std::string base = file_name_for(tensor_name);
  std::string name = base;
  for (int n = 2; !used_names_.insert(lower(folder_ + name)).second; ++n) {
    name = base + "." + std::to_string(n);
  }
  return folder_ + name;
}

DataLayout::Placement DataLayout::place(std::string_view tensor_name, std::uint64_t size) {
  const auto new_file = [&](std::string location) {
    files_.push_back(DataFilePlan{std::move(location), {}, 0});
  };
  if (options_.one_file_per_tensor) {
    new_file(per_tensor_location(tensor_name));
  } else if (options_.max_external_file_size > 0) {
    // Numbered files, a new one when this tensor would push the current one past the cap.
    if (files_.empty() ||
        (!files_.back().payloads.empty() &&
         align_up(files_.back().size, options_.align) + size > options_.max_external_file_size)) {
      char suffix[16];
      std::snprintf(suffix, sizeof suffix, ".%05zu", files_.size() + 1);
      new_file(location_ + suffix);
    }
  } else if (files_.empty()) {
    new_file(location_);
  }
  DataFilePlan& file = files_.back();
  const std::uint64_t offset = align_up(file.size, options_.align);
  file.size = offset + size;
  return {files_.size() - 1, offset};
}

void DataLayout::plan_safetensors(std::span<const PayloadInfo> tensors, std::string_view source) {
  safetensors_.emplace(tensors, location_, options_.max_external_file_size, options_.align, source);
  for (const SafetensorsFile& file : safetensors_->files()) {
    files_.push_back(DataFilePlan{file.location, {}, file.size});
  }
}

void DataLayout::append_data(Plan& plan, std::uint32_t tensor, const PayloadInfo& info,
                             const Chunk& payload, std::span<const KeptEntry> kept) {
  wire::Writer w;
  if (!goes_external(info)) {
    w.field_len_header(TP::kRawData, payload.size);
    plan.add_bytes(tensor, w.bytes());
    plan.add_chunk(tensor, payload);
    return;
  }
  std::string_view location = location_;
  std::uint64_t offset = payload.offset;  // in place: where the bytes are in the model file
  std::optional<std::size_t> file;        // of files_, where a data file of this save holds it
  if (safetensors()) {
    if (!safetensors_) {
      throw Error(ErrorKind::invalid_argument,
                  "the safetensors data format is for saving an opened model");
    }
    const SafetensorsLayout::Placement where = safetensors_->placement(info.tensor);
    files_[where.file].payloads.push_back({where.offset, payload});
    location = files_[where.file].location;
    offset = where.offset;
    file = where.file;
  } else if (!in_place_) {
    const Placement where = place(info.name, payload.size);
    files_[where.file].payloads.push_back({where.offset, payload});
    location = files_[where.file].location;
    offset = where.offset;
    file = where.file;
  }
  append_entries(plan, tensor, {location, offset, payload.size}, kept,
                 options_.checksum ? file : std::nullopt);
}

void DataLayout::append_shared(Plan& plan, std::uint32_t tensor, std::string_view location,
                               std::uint64_t offset, std::uint64_t length,
                               std::span<const KeptEntry> kept) {
  append_entries(plan, tensor, {location, offset, length}, kept, std::nullopt);
}

void DataLayout::append_entries(Plan& plan, std::uint32_t tensor, const Place& place,
                                std::span<const KeptEntry> kept,
                                std::optional<std::size_t> checksum_of) {
  wire::Writer w;
  append_entry(w, "location", place.location);
  append_entry(w, "offset", std::to_string(place.offset));
  append_entry(w, "length", std::to_string(place.length));
  for (const KeptEntry& entry : kept) {
    if (!checksum_of || entry.key != "checksum") append_entry(w, entry.key, entry.value);
  }
  plan.add_bytes(tensor, w.bytes());
  if (checksum_of) {
    // A placeholder of the digest's length, filled once the file's bytes are hashed.
    wire::Writer c;
    append_entry(c, "checksum", std::string(Plan::kChecksumDigits, '0'));
    const Chunk placed = plan.own_bytes(c.bytes());
    plan.add_chunk(tensor, placed);
    plan.checksum_slots.push_back(
        {*checksum_of, placed.offset + placed.size - Plan::kChecksumDigits});
  }
  wire::Writer d;
  d.field_int32(TP::kDataLocation, static_cast<std::int32_t>(DataLocation::external));
  plan.add_bytes(tensor, d.bytes());
}

void DataLayout::finish(Plan& plan) {
  if (safetensors_) {
    // Each file's header first, then its payloads by offset (they were appended in the model's
    // order, and are laid out widest first); the index last.
    for (std::size_t f = 0; f < files_.size(); ++f) {
      auto& payloads = files_[f].payloads;
      std::sort(payloads.begin(), payloads.end(),
                [](const auto& a, const auto& b) { return a.offset < b.offset; });
      payloads.insert(payloads.begin(), {0, plan.own_bytes(safetensors_->files()[f].header)});
    }
    if (!safetensors_->index_location().empty()) {
      const std::string& json = safetensors_->index_json();
      const Chunk index = plan.own_bytes(std::as_bytes(std::span(json.data(), json.size())));
      files_.push_back(DataFilePlan{safetensors_->index_location(), {{0, index}}, json.size()});
    }
  }
  plan.data_files = std::move(files_);
  files_.clear();
}

}  // namespace onnxmap::detail
