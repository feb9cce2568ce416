// Fuzz target: any bytes as a ModelProto. Opens them (Model::from_bytes) with the number of
// indexing threads the input picks, walks every view, and prints the canonical JSON; the index
// must be the same on one thread and on several (the same tables, or the same error). Either each
// step succeeds or it throws onnxmap::Error; a crash, a sanitizer report, a hang or any other
// exception is a finding.

#include <cstddef>
#include <cstdint>
#include <span>

#include "index_compare.hpp"
#include "onnxmap/onnxmap.hpp"
#include "walk.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  onnxmap::OpenOptions options;
  // Small limits keep each run short; the limits themselves are part of what is fuzzed.
  options.max_depth = 32;
  // 2..8 threads, with the pool on every level: compare_thread_counts splits even a tiny file.
  options.threads = 2 + static_cast<unsigned>(size % 7);
  if (!onnxmap::fuzz::compare_thread_counts(
           bytes, options, onnxmap::schema::MessageKind::ModelProto, options.threads)
           .empty()) {
    __builtin_trap();  // the parallel pass built another index, or failed otherwise
  }
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
