#pragma once
// protobuf's canonical JSON mapping of any onnx.proto message, as
// google.protobuf.json_format.MessageToJson prints it: lowerCamelCase names, 64-bit integers as
// strings, bytes in base64, enums by name, NaN and Infinity as strings, only fields present.
// Of bytes here; of an opened model, dump_json(const Model&) in model.hpp.
//
// Threads: dump_json reads only its arguments: any number of threads may call it at once.

#include <cstdint>
#include <span>
#include <string>

#include "onnxmap/export.hpp"
#include "onnxmap/schema.hpp"

namespace onnxmap {

struct DumpOptions {
  bool omit_data = false;  // leave out TensorProto payloads (raw_data and the typed fields)
  int max_depth = 64;      // nested messages deeper than this are an error
};

// The JSON text (2-space indented, ending in a newline) of the message of `kind` held in
// `bytes`, whose first byte is at file offset `base`. Throws onnxmap::Error on malformed input,
// with the field path and byte offset.
[[nodiscard]] ONNXMAP_API std::string dump_json(std::span<const std::byte> bytes,
                                                schema::MessageKind kind,
                                                const DumpOptions& options = {},
                                                std::uint64_t base = 0);

}  // namespace onnxmap
