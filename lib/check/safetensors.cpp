// check's look at external data kept in safetensors files: each file's header must parse (the
// format's rules: index/safetensors_header.hpp), and each tensor the model keeps there must be
// one of the header's, with the same length, element type and shape.

#include <algorithm>
#include <optional>
#include <vector>

#include "check/checks.hpp"
#include "index/safetensors_header.hpp"

namespace onnxmap::detail {

namespace {

// What is wrong with `tensor` against `entry`, or "".
std::string disagreement(const TensorRecord& tensor, std::span<const std::int64_t> dims,
                         const SafetensorsEntry& entry) {
  const auto type = onnx_type_of_safetensors(entry.dtype);
  if (entry.end - entry.begin != tensor.payload_length) {
    return std::to_string(tensor.payload_length) + " bytes, the header's '" + entry.name + "' " +
           std::to_string(entry.end - entry.begin);
  }
  if (!type || *type != static_cast<DataType>(tensor.data_type)) {
    return std::string(to_string(static_cast<DataType>(tensor.data_type))) + ", the header's '" +
           entry.name + "' " + entry.dtype;
  }
  if (!std::ranges::equal(dims, entry.shape)) {
    return "of other dims than the header's '" + entry.name + "'";
  }
  return "";
}

// The header of each data file kept in safetensors format, by data file (none for the others and
// for a header that does not parse: that is a problem of its own).
std::vector<std::optional<SafetensorsHeader>> headers_of(const ModelIndex& index,
                                                         CheckReport& report) {
  std::vector<std::optional<SafetensorsHeader>> headers(index.data_files.size());
  for (std::size_t f = 0; f < index.data_files.size(); ++f) {
    const std::string& location = index.data_files[f].location;
    if (!location.ends_with(".safetensors")) continue;
    try {
      headers[f] = safetensors_header_of(index, f);
    } catch (const Error& e) {
      add_problem(report, ProblemKind::external_data, "", location + ": " + e.detail());
    }
  }
  return headers;
}

}  // namespace

SafetensorsHeader safetensors_header_of(const ModelIndex& index, std::size_t f) {
  const DataFile& file = index.data_files[f];
  return read_safetensors_header(file.file.bytes(), file.location, [&](std::uint64_t length) {
    if (index.fetcher) index.fetcher->fetch(file.location, 0, length);
  });
}

void check_safetensors(const Model& model, CheckReport& report) {
  const ModelIndex& index = *ViewAccess::index(model);
  const auto headers = headers_of(index, report);
  for (std::uint32_t t = 0; t < index.tensors.size(); ++t) {
    const TensorRecord& r = index.tensors[t];
    if (r.storage != TensorStorage::external || !headers[r.data_file]) continue;
    const auto& entries = headers[r.data_file]->tensors;  // by offset
    const auto entry = std::lower_bound(
        entries.begin(), entries.end(), r.payload_offset,
        [](const SafetensorsEntry& e, std::uint64_t offset) { return e.begin < offset; });
    const Tensor tensor = model.tensor_at(t);
    const bool found = entry != entries.end() && entry->begin == r.payload_offset;
    const std::string what =
        found ? disagreement(r, tensor.dims(), *entry) : "starts at no tensor of the header";
    if (what.empty()) continue;
    const std::string& location = index.data_files[r.data_file].location;
    add_problem(report, ProblemKind::external_data, tensor.path() + ".external_data",
                "tensor '" + std::string(r.name) + "' in '" + location + "' at byte " +
                    std::to_string(r.payload_offset) + " is " + what,
                offset_of(tensor));
  }
}

}  // namespace onnxmap::detail
