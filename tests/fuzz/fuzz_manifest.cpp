// Fuzz target: any bytes as a manifest (verify.hpp): onnxmap's JSON, a model-signing tool's
// in-toto statement, a DSSE envelope or Sigstore bundle holding one. Beyond "no crash, only
// onnxmap::Error": a manifest that parses is written and read back unchanged.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "onnxmap/error.hpp"
#include "onnxmap/verify.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const onnxmap::Manifest manifest = onnxmap::parse_manifest(text, "fuzz");
    const std::string json = onnxmap::to_json(manifest);
    if (onnxmap::to_json(onnxmap::parse_manifest(json, "again")) != json) __builtin_trap();
  } catch (const onnxmap::Error&) {
  }
  return 0;
}
