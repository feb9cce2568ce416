#pragma once
// The check of fuzz_save_roundtrip, shared with the unit test that replays its regression inputs
// (tests/fuzz/regressions/fuzz_save_roundtrip/): any bytes that open as a model are saved (inline,
// or with external data under options `choice` picks) and opened again; the copy must hold the
// same tensors: names, types, dims and decoded bytes. Saving may refuse (onnxmap::Error), but what
// it writes must open.

#include <cstddef>
#include <span>
#include <string>

namespace onnxmap::fuzz {

// `choice` picks the save options and the index threads (the fuzzer passes the input's size, so
// its seeds stay whole models); choices 0..kSaveChoices-1 cover every combination of options.
inline constexpr std::size_t kSaveChoices = 128;

struct SaveRoundTrip {
  bool saved = false;    // the input opened as a model and save wrote it
  std::string mismatch;  // what differs between the copy and the source; "" when nothing does
};

// Saves the model `input` holds into a fresh folder of scratch_folder() and compares the copy
// with it. An input that does not open, or that save refuses, is no mismatch.
[[nodiscard]] SaveRoundTrip compare_save_roundtrip(std::span<const std::byte> input,
                                                   std::size_t choice);

}  // namespace onnxmap::fuzz
