// Replays the inputs kept in tests/fuzz/regressions/fuzz_save_roundtrip/ through the check
// fuzz_save_roundtrip runs (fuzz/save_roundtrip.hpp): first with the options the fuzzer picked for
// the input (its size), then under every choice of save options. Run in the plain and the
// ASan+UBSan builds, where a regression of a crash the fuzzer found would show.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz/save_roundtrip.hpp"
#include "test_support.hpp"

namespace onnxmap::fuzz {
namespace {

namespace fs = std::filesystem;

// The kept inputs, sorted; meson test names their folder in ONNXMAP_FUZZ_REGRESSIONS.
std::vector<fs::path> kept_inputs() {
  const char* root = std::getenv("ONNXMAP_FUZZ_REGRESSIONS");
  if (root == nullptr) return {};
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(root) / "fuzz_save_roundtrip", ec)) {
    if (entry.path().extension() == ".onnx") out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class SaveRoundTripReplay : public test::TempFolder {};

TEST_F(SaveRoundTripReplay, KeptInputs) {
  if (std::getenv("ONNXMAP_FUZZ_REGRESSIONS") == nullptr) {
    GTEST_SKIP() << "ONNXMAP_FUZZ_REGRESSIONS is not set (meson test sets it)";
  }
  const std::vector<fs::path> inputs = kept_inputs();
  ASSERT_GE(inputs.size(), 4U) << "the kept inputs are missing";
  for (const fs::path& path : inputs) {
    const std::vector<std::byte> input = read(path);
    ASSERT_FALSE(input.empty()) << path.filename();
    EXPECT_EQ(compare_save_roundtrip(input, input.size()).mismatch, "")
        << path.filename() << ", as the fuzzer ran it";
    std::size_t saved = 0;
    for (std::size_t choice = 0; choice < kSaveChoices; ++choice) {
      const SaveRoundTrip run = compare_save_roundtrip(input, choice);
      EXPECT_EQ(run.mismatch, "") << path.filename() << ", save options choice " << choice;
      saved += run.saved ? 1 : 0;
    }
    // A kept input is a model that save writes: one that never got that far would test nothing.
    EXPECT_GT(saved, 0U) << path.filename() << " was never saved";
  }
}

}  // namespace
}  // namespace onnxmap::fuzz
