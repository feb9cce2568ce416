// The loader's progress and cancellation: progress never goes back and reaches the total (how
// often it is reported inside one tensor depends on when the calling thread wakes, which no test
// can pin down), and a load the caller cancels stops with ErrorKind::cancelled.

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "onnxmap/load.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/synth.hpp"
#include "test_support.hpp"

namespace onnxmap {
namespace {

class LoadProgress : public test::TempFolder {
 protected:
  // A model whose embedding is a few MB, read in 64 KiB requests.
  std::filesystem::path model_path() {
    SynthOptions options;
    options.layers = 1;
    options.hidden = 256;
    options.vocab = 8000;
    const auto path = at("m.onnx");
    (void)synth(path, options);
    return path;
  }
  static LoadOptions small_reads(LoadMode mode) {
    LoadOptions options;
    options.mode = mode;
    options.request_bytes = 64 << 10U;
    return options;
  }
};

TEST_F(LoadProgress, NeverGoesBackAndEndsAtTheTotal) {
  const Model model = Model::open(model_path());
  const Tensor big = model.tensor("model.embed_tokens.weight");
  const LoadItem item{big};
  for (const LoadMode mode : {LoadMode::map, LoadMode::read}) {
    std::vector<std::uint64_t> seen;
    LoadOptions options = small_reads(mode);
    options.progress = [&](std::uint64_t done, std::uint64_t total) {
      EXPECT_EQ(total, big.byte_size());
      seen.push_back(done);
    };
    (void)load(std::span(&item, 1), {}, options);
    ASSERT_FALSE(seen.empty());
    EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
    EXPECT_EQ(seen.back(), big.byte_size());
  }
}

TEST_F(LoadProgress, CancelStopsTheLoad) {
  const Model model = Model::open(model_path());
  const std::vector<LoadItem> items = plan(model);
  std::uint64_t delivered = 0;
  LoadOptions options = small_reads(LoadMode::read);
  options.cancelled = [&] { return true; };
  try {
    (void)load(
        items, [&](const LoadedTensor&) { ++delivered; }, options);
    FAIL() << "a cancelled load finished";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::cancelled) << e.what();
    // The loaders' one cancellation (LoadLoop): the tensors and bytes done of the total.
    EXPECT_NE(std::string(e.what()).find("the load was cancelled after "), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(" tensors, "), std::string::npos) << e.what();
  }
  EXPECT_LT(delivered, items.size());
  // prefetch, which the viewer's statistics read with, stops the same way.
  const LoadItem one{model.tensor("model.embed_tokens.weight")};
  try {
    prefetch(std::span(&one, 1), options);
    FAIL() << "a cancelled prefetch finished";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::cancelled) << e.what();
  }
}

}  // namespace
}  // namespace onnxmap
