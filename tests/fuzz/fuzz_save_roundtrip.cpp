// Fuzz target: save round trips (save_roundtrip.hpp says what is checked). The input's size picks
// the save options, so the seeds stay whole models. A mismatch, a crash or a sanitizer report is a
// finding; keep it in tests/fuzz/regressions/fuzz_save_roundtrip/ once fixed.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

#include "save_roundtrip.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string mismatch =
      onnxmap::fuzz::compare_save_roundtrip(std::as_bytes(std::span(data, size)), size).mismatch;
  if (!mismatch.empty()) {
    std::fprintf(stderr, "save round trip: %s\n", mismatch.c_str());
    __builtin_trap();
  }
  return 0;
}
