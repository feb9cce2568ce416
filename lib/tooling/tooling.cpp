#include "tooling.hpp"

#include "check/checks.hpp"
#include "io/fault_guard.hpp"
#include "io/guarded_bytes.hpp"
#include "schema/descriptors.hpp"
#include "schema/fields.hpp"
#include "stats/values.hpp"
#include "wire/wire.hpp"
#include "write/commit.hpp"
#include "write/files.hpp"

namespace onnxmap::tooling {

void save_bytes(const std::filesystem::path& path,
                std::span<const std::span<const std::byte>> parts, bool durable) {
  std::uint64_t total = 0;
  for (const auto part : parts) total += part.size();
  detail::Progress progress(total, {});
  detail::OutputFile out(path, progress, total);
  for (const auto part : parts) out.write(part);
  std::vector<io::NewFile> no_data;
  io::NewFile file = out.finish(durable);
  detail::commit_model(no_data, file, durable);
}

bool equal_bytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return detail::equal_bytes(a, b);
}

std::byte touch_pages(std::span<const std::byte> bytes) {
  return detail::touch_pages(bytes);
}

std::string_view message_name(schema::MessageKind kind) noexcept {
  return schema::descriptor(kind).name;
}

std::optional<schema::MessageKind> parse_message_kind(std::string_view name) noexcept {
  for (int k = 0; k < schema::kMessageKindCount; ++k) {
    const auto kind = static_cast<schema::MessageKind>(k);
    if (message_name(kind) == name) return kind;
  }
  return std::nullopt;
}

std::vector<std::byte> encoded_strings(const Tensor& tensor) {
  wire::Writer fields;
  for (const std::string_view s : tensor.strings()) {
    fields.field_string(schema::TensorProto::kStringData, s);
  }
  return fields.take();
}

std::vector<double> decode_values(std::span<const std::byte> bytes, DataType type,
                                  std::uint64_t count) {
  detail::check_values(bytes, type, count);
  std::vector<double> out;
  out.reserve(count);  // so that the guarded loop allocates nothing
  detail::guard_faults(bytes, [&]() noexcept {
    detail::for_each_value(bytes.data(), type, count, [&](double v) { out.push_back(v); });
  });
  return out;
}

std::vector<DataFileInfo> data_files(const Model& model) {
  const detail::ModelIndex& index = *detail::ViewAccess::index(model);
  std::vector<DataFileInfo> files;
  for (std::size_t f = 0; f < index.data_files.size(); ++f) {
    const detail::DataFile& data = index.data_files[f];
    DataFileInfo& file = files.emplace_back();
    file.location = data.location;
    file.size = data.file.size();
    file.safetensors = data.location.ends_with(".safetensors");
    if (!file.safetensors) continue;
    try {
      detail::SafetensorsHeader header = detail::safetensors_header_of(index, f);
      file.header_bytes = header.data_start;
      file.metadata = std::move(header.metadata);
      for (detail::SafetensorsEntry& e : header.tensors) {
        file.entries.push_back(
            {std::move(e.name), std::move(e.dtype), std::move(e.shape), e.begin, e.end});
      }
    } catch (const Error& e) {
      file.error = e.detail();
    }
  }
  return files;
}

}  // namespace onnxmap::tooling
