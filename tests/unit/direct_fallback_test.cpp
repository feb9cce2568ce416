// The direct mode where the system refuses O_DIRECT: every file system of a test machine may
// accept it (tmpfs does since Linux 6.6), so the io layer's seam makes the O_DIRECT open, or
// every O_DIRECT read, fail with EINVAL as a refusing file system or device does. The bytes must
// still be the tensors' own, external payloads at unaligned offsets included, and the loader's
// stats must say the reads were not direct.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "io/file_reader.hpp"
#include "onnxmap/builder.hpp"
#include "onnxmap/load.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/save.hpp"
#include "test_support.hpp"
#include "test_system_calls.hpp"

namespace onnxmap {
namespace {

namespace fs = std::filesystem;
using Bytes = std::map<std::string, std::vector<std::byte>>;

// Odd sizes, so the payloads packed one after another (align 1) start at unaligned offsets.
constexpr std::int64_t kSizes[] = {1, 4097, 8191, 65537, (1 << 20) + 3, 3, 12345};

class DirectFallback : public test::TempFolder {
 protected:
  void SetUp() override {
    test::TempFolder::SetUp();
    std::mt19937 random(15);
    ModelBuilder builder;
    GraphBuilder& graph = builder.graph("g");
    for (std::size_t i = 0; i < std::size(kSizes); ++i) {
      std::vector<std::byte> bytes(static_cast<std::size_t>(kSizes[i]));
      for (std::byte& b : bytes) b = static_cast<std::byte>(random() % 255 + 1);
      const std::string name = "t" + std::to_string(i);
      expected_[name] = bytes;
      graph.initializer(TensorBuilder(name, DataType::uint8, {kSizes[i]}, std::move(bytes)));
    }
    SaveOptions options;
    options.external_data = onnxmap::ExternalData::external;
    options.size_threshold = 1;
    options.align = 1;
    path_ = at("m.onnx");
    (void)save(builder, path_, options);
  }
  void TearDown() override {
    (void)test::set_direct_refusal(test::DirectRefusal::none);
    test::TempFolder::TearDown();
  }

  static Bytes bytes_of(const Model& model) {
    Bytes out;
    for (std::size_t i = 0; i < model.tensor_count(); ++i) {
      const Tensor t = model.tensor_at(i);
      out[std::string(t.name())] = {t.bytes().begin(), t.bytes().end()};
    }
    return out;
  }

  // Every tensor through the loader in the direct mode, on `threads` threads, the files evicted
  // first (resident pages are read buffered: no O_DIRECT read to refuse).
  std::pair<Bytes, LoadStats> load_direct(const Model& model, unsigned threads) {
    for (const auto& entry : fs::directory_iterator(root_)) test::evict(entry.path());
    LoadOptions options;
    options.mode = LoadMode::direct;
    options.threads = threads;
    Bytes out;
    const std::vector<LoadItem> plan = onnxmap::plan(model);
    const LoadStats stats = load(
        plan,
        [&](const LoadedTensor& t) {
          out[std::string(plan[t.item].tensor.name())] = {t.bytes.begin(), t.bytes.end()};
        },
        options);
    return {out, stats};
  }

  fs::path path_;
  Bytes expected_;
};

TEST_F(DirectFallback, PayloadsAreAtUnalignedOffsets) {
  const Model model = Model::open(path_);
  std::size_t unaligned = 0;
  for (std::size_t i = 0; i < model.tensor_count(); ++i) {
    const Tensor t = model.tensor_at(i);
    EXPECT_FALSE(t.data_file().empty()) << t.name();
    unaligned += t.file_offset() % io::kDirectAlign != 0 ? 1 : 0;
  }
  EXPECT_GE(unaligned, std::size(kSizes) - 1);
}

TEST_F(DirectFallback, DirectWhereTheSystemAllowsIt) {
  const Model model = Model::open(path_);
  const auto [bytes, stats] = load_direct(model, 2);
  EXPECT_EQ(bytes, expected_);
  OpenOptions open_direct;
  open_direct.mode = LoadMode::direct;
  EXPECT_EQ(bytes_of(Model::open(path_, open_direct)), expected_);
  // Nothing was refused by the seam; the file system of the temporary folder decides.
  EXPECT_EQ(test::set_direct_refusal(test::DirectRefusal::none), 0U);
  if (!stats.direct) GTEST_SKIP() << fs::temp_directory_path() << " refuses O_DIRECT";
}

TEST_F(DirectFallback, RefusedOpenReadsBuffered) {
  const Model model = Model::open(path_);
  (void)test::set_direct_refusal(test::DirectRefusal::refuse_open);
  const auto [bytes, stats] = load_direct(model, 2);
  OpenOptions open_direct;
  open_direct.mode = LoadMode::direct;
  const Bytes opened = bytes_of(Model::open(path_, open_direct));
  // One refused open per file: the loader's data file, then the open's model and data files.
  EXPECT_EQ(test::set_direct_refusal(test::DirectRefusal::none), 3U);
  EXPECT_EQ(bytes, expected_);
  EXPECT_EQ(opened, expected_);
  EXPECT_FALSE(stats.direct);
  EXPECT_EQ(stats.bytes, stats.bytes_read);  // buffered reads read no alignment padding
}

TEST_F(DirectFallback, RefusedReadsFallBackToBufferedOnes) {
  const Model model = Model::open(path_);
  for (const unsigned threads : {1U, 2U}) {
    (void)test::set_direct_refusal(test::DirectRefusal::refuse_read);
    const auto [bytes, stats] = load_direct(model, threads);
    // The first refusal turns the reader buffered: at most one refused read per thread.
    const std::uint64_t refused = test::set_direct_refusal(test::DirectRefusal::none);
    EXPECT_GE(refused, 1U);
    EXPECT_LE(refused, threads);
    EXPECT_EQ(bytes, expected_) << threads << " threads";
    EXPECT_FALSE(stats.direct);
  }
  (void)test::set_direct_refusal(test::DirectRefusal::refuse_read);
  OpenOptions open_direct;
  open_direct.mode = LoadMode::direct;
  const Bytes opened = bytes_of(Model::open(path_, open_direct));
  EXPECT_GE(test::set_direct_refusal(test::DirectRefusal::none), 2U);  // both files
  EXPECT_EQ(opened, expected_);
}

}  // namespace
}  // namespace onnxmap
