#pragma once
// What only onnxmap's own front ends need of the library: the command (tools/onnxmap/) and its
// viewer (tools/onnxmap/viewer/), and the Python extension (python/src/) when it needs any of it
// (it needs nothing today). Not part of the API: a static library of its own
// (lib/tooling/meson.build), so nothing of it is in libonnxmap.so, in lib/onnxmap.map or among
// the installed headers. This header includes only public headers; its definitions may use the
// library's internals.
//
// Threads: every function here is safe to call from several threads at once, as the views they
// read are (views.hpp); save_bytes calls writing one path at once race on which file stays.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnxmap/message_kind.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/schema.hpp"
#include "onnxmap/tensor.hpp"

namespace onnxmap::tooling {

// Writes `parts` one after another to `path` as onnxmap::save writes a model: under a temporary
// name in the same folder, renamed into place only when complete (`path` never holds half a
// file), and synced to disk first when `durable`. Throws onnxmap::Error (io). For `get`'s files.
void save_bytes(const std::filesystem::path& path,
                std::span<const std::span<const std::byte>> parts, bool durable = false);

// The name of a message kind as onnx.proto spells it ("TensorProto", "TypeProto.Tensor"), and
// the kind of such a name (nullopt for a name no message of onnx.proto has): `dump --message`.
[[nodiscard]] std::string_view message_name(schema::MessageKind kind) noexcept;
[[nodiscard]] std::optional<schema::MessageKind> parse_message_kind(std::string_view name) noexcept;

// Whether `a` and `b` hold the same bytes, and a touch of each page of `bytes` (their XOR), with
// a fault reading them an onnxmap::Error (io), as copy_bytes (bytes.hpp): `diff`, `load`, the
// viewer's names.
[[nodiscard]] bool equal_bytes(std::span<const std::byte> a, std::span<const std::byte> b);
[[nodiscard]] std::byte touch_pages(std::span<const std::byte> bytes);

// A STRING tensor's elements as the file stores them, one string_data field (tag, length,
// bytes) each, in order, which any protobuf reader splits again: what `onnxmap get --raw`
// writes, as STRING tensors have no raw_data layout. Throws onnxmap::Error (invalid_argument)
// for other types, as Tensor::strings() does.
[[nodiscard]] std::vector<std::byte> encoded_strings(const Tensor& tensor);

// The first `count` elements of `type` in `bytes` (the raw_data layout) as numbers, as
// tensor_stats (stats.hpp) reads them (64-bit integers past 2^53 rounded): the viewer's cells.
// A double per element, for showing values, not for computing with them. Throws as
// tensor_stats does.
[[nodiscard]] std::vector<double> decode_values(std::span<const std::byte> bytes, DataType type,
                                                std::uint64_t count);

// An external data file of a model (the viewer's data files), and for a safetensors file (its
// name ends in ".safetensors") what its header says; entries' offsets count from the file's
// start, the header included.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // safetensors' name: "F16"
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;
};
struct DataFileInfo {
  std::string location;  // as the model names it
  std::uint64_t size = 0;
  bool safetensors = false;
  std::uint64_t header_bytes = 0;  // the 8-byte length and the JSON: where the data starts
  std::map<std::string, std::string> metadata;
  std::vector<SafetensorsEntry> entries;  // by offset
  std::string error;                      // why the header does not parse; then no entries
};
// Every external data file of `model`, in the order the model first names them, each
// safetensors file's header read (fetched first for a model opened by URL). A header that
// breaks the format's rules is the file's `error`, not an exception.
[[nodiscard]] std::vector<DataFileInfo> data_files(const Model& model);

}  // namespace onnxmap::tooling
