// Fuzz target: any bytes as a ModelProto. Opens them (Model::from_bytes), walks every view, and
// prints the canonical JSON. Either each step succeeds or it throws onnxmap::Error; a crash, a
// sanitizer report, a hang or any other exception is a finding.

#include <cstddef>
#include <cstdint>
#include <span>

#include "onnxmap/onnxmap.hpp"
#include "walk.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  onnxmap::OpenOptions options;
  // Small limits keep each run short; the limits themselves are part of what is fuzzed.
  options.max_depth = 32;
  try {
    const onnxmap::Model model = onnxmap::Model::from_bytes(bytes, options);
    onnxmap::fuzz::walk_model(model);
  } catch (const onnxmap::Error&) {
  }
  try {
    onnxmap::DumpOptions dump;
    dump.omit_data = size % 2 == 0;
    (void)onnxmap::dump_json(bytes, onnxmap::schema::MessageKind::ModelProto, dump);
  } catch (const onnxmap::Error&) {
  }
  return 0;
}
