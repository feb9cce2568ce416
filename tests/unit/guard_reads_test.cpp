// Metadata read through the map while the model file shrinks (onnxmap/guard_reads.hpp): name
// look-ups and any other work run in guard_reads end in onnxmap::Error (io) naming the file, never
// SIGBUS; the lost pages are mapped from the file again afterwards (the next read faults again,
// no zeros are left behind); what the work threw is replaced by the fault; guarded copies inside
// still throw at once; work that meets no fault keeps its results.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "model_builder.hpp"
#include "onnxmap/guard_reads.hpp"
#include "onnxmap/onnxmap.hpp"
#include "test_support.hpp"

namespace onnxmap {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kKeptMetadata = 8192;  // bytes left when the model is cut: two pages

// "head" in the first page, "pad" across the cut, then 64 tensors with long names past it.
std::vector<std::byte> metadata_model_bytes() {
  return test::message([&](wire::Writer& m) {
    m.field_int64(schema::ModelProto::kIrVersion, 8);
    test::sub(m, schema::ModelProto::kGraph, [&](wire::Writer& g) {
      g.field_string(schema::GraphProto::kName, "main");
      test::sub(g, schema::GraphProto::kInitializer,
                test::raw_tensor("head", DataType::uint8, {16},
                                 std::vector<std::byte>(16, std::byte{1})));
      test::sub(g, schema::GraphProto::kInitializer,
                test::raw_tensor("pad", DataType::uint8, {8192},
                                 std::vector<std::byte>(8192, std::byte{0})));
      for (int i = 0; i < 64; ++i) {
        test::sub(
            g, schema::GraphProto::kInitializer,
            test::raw_tensor("layers." + std::to_string(i) + std::string(200, 'n'), DataType::uint8,
                             {1024}, std::vector<std::byte>(1024, std::byte{2})));
      }
    });
  });
}

class GuardReads : public test::TempFolder {
 protected:
  void SetUp() override {
    TempFolder::SetUp();
    path_ = at("m.onnx");
    write(path_, metadata_model_bytes());
    model_.emplace(Model::open(path_));
    last_ = model_->tensor_at(model_->tensor_count() - 1);  // a view: nothing read yet
    ASSERT_GT(last_->file_offset(), 2 * kKeptMetadata);
    fs::resize_file(path_, kKeptMetadata);
  }
  [[nodiscard]] std::string last_name() const { return "layers.63" + std::string(200, 'n'); }

  // Expects `call()` to throw the error of a fault past the cut: io, naming the file and its size.
  template <class Call>
  void expect_shrunk(Call&& call) const {
    test::expect_shrunk(call, path_, kKeptMetadata);
  }

  fs::path path_;
  std::optional<Model> model_;
  std::optional<Tensor> last_;
};

TEST_F(GuardReads, NameLookUpsPastTheCutAreErrors) {
  // The look-ups are not guarded themselves (a guard would make each 2-3x slower): in a guard.
  expect_shrunk([&] { guard_reads([&] { (void)model_->find_tensor(last_name()); }); });
  expect_shrunk([&] { guard_reads([&] { (void)model_->tensor(last_name()); }); });
  expect_shrunk([&] { guard_reads([&] { (void)model_->tensors(last_name()); }); });
  // Not found: the close names are read, past the cut too.
  expect_shrunk([&] { guard_reads([&] { (void)model_->tensor("no such tensor"); }); });
  // Before the cut: found.
  EXPECT_EQ(model_->tensor("head").byte_size(), 16U);
}

TEST_F(GuardReads, WorkThatReadsLostMetadataEndsInAnErrorEachTime) {
  std::string name;
  expect_shrunk([&] { guard_reads([&] { name = std::string(last_->name()); }); });
  // The file is mapped again under the lost page: the next guard faults there again, rather
  // than reading zeros a first guard left.
  expect_shrunk([&] { guard_reads([&] { name = std::string(last_->name()); }); });
  // Written back in place (same file), the bytes are the file's again.
  write(path_, metadata_model_bytes());
  guard_reads([&] { name = std::string(last_->name()); });
  EXPECT_EQ(name, last_name());
}

TEST_F(GuardReads, TheFaultReplacesWhatTheWorkThrew) {
  expect_shrunk([&] {
    guard_reads([&] {
      if (!last_->name().starts_with('l')) throw std::runtime_error("read zeros");
    });
  });
  // No fault: the work's own exception and results pass unchanged.
  EXPECT_THROW(guard_reads([] { throw std::out_of_range("mine"); }), std::out_of_range);
  std::string head;
  guard_reads([&] { head = std::string(model_->tensor_at(0).name()); });
  EXPECT_EQ(head, "head");
}

TEST_F(GuardReads, AGuardedCopyInsideThrowsAtOnce) {
  std::vector<std::byte> copy(last_->byte_size());
  bool after_copy = false;
  expect_shrunk([&] {
    guard_reads([&] {
      copy_bytes(last_->bytes(), copy);
      after_copy = true;
    });
  });
  EXPECT_FALSE(after_copy);
}

TEST_F(GuardReads, ASaveThatReadLostBytesLeavesTheDestinationAsItWas) {
  // The small payloads past the cut are copied through the map (no kernel copy): the copy reads
  // zeros, and the save must not put that file in place before the guard reports the fault.
  const fs::path out = at("out.onnx");
  const std::vector<std::byte> old(3, std::byte{7});
  write(out, old);
  expect_shrunk([&] { guard_reads([&] { (void)save(*model_, out); }); });
  EXPECT_EQ(read(out), old);
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(out.parent_path())) {
    left.push_back(entry.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"m.onnx", "out.onnx"}));
}

TEST_F(GuardReads, GuardsNest) {
  bool inner_threw = false;
  expect_shrunk([&] {
    guard_reads([&] {
      try {
        guard_reads([&] { (void)last_->name().size(); });
      } catch (const Error&) {
        inner_threw = true;
      }
    });
  });
  EXPECT_TRUE(inner_threw);
}

}  // namespace
}  // namespace onnxmap
