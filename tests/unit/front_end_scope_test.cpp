// Metadata read through the map while the model file shrinks (onnxmap/front_end_scope.hpp): in a
// FrontEndScope, name look-ups and the views' getters end in onnxmap::Error (io) naming the file,
// never SIGBUS, each time; guarded copies throw with or without one; a save that meets the cut
// leaves the destination as it was; and a thread that holds a plain view of a lost page, while
// another thread's scope meets the cut, dies of SIGBUS when it reads it: never reads a zero.

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "index/model_index.hpp"
#include "model_builder.hpp"
#include "onnxmap/front_end_scope.hpp"
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

class FrontEndChecks : public test::TempFolder {
 protected:
  void SetUp() override {
    TempFolder::SetUp();
    path_ = at("m.onnx");
    write(path_, metadata_model_bytes());
    model_.emplace(Model::open(path_));
    last_ = model_->tensor_at(model_->tensor_count() - 1);  // a view: nothing read yet
    ASSERT_GT(last_->file_offset(), 2 * kKeptMetadata);
  }
  void cut() const { fs::resize_file(path_, kKeptMetadata); }
  [[nodiscard]] static std::string last_name() { return "layers.63" + std::string(200, 'n'); }

  // Expects `call()` to throw the error of a fault past the cut: io, naming the file and its size.
  template <class Call>
  void expect_shrunk(Call&& call) const {
    test::expect_shrunk(call, path_, kKeptMetadata);
  }

  fs::path path_;
  std::optional<Model> model_;
  std::optional<Tensor> last_;
};

// Runs call() inside a scope of its own.
template <class Call>
auto in_scope(Call&& call) {
  const onnxmap::FrontEndScope scope;
  return call();
}

TEST_F(FrontEndChecks, NameLookUpsPastTheCutAreErrors) {
  cut();
  expect_shrunk([&] { in_scope([&] { (void)model_->find_tensor(last_name()); }); });
  expect_shrunk([&] { in_scope([&] { (void)model_->tensor(last_name()); }); });
  expect_shrunk([&] { in_scope([&] { (void)model_->tensors(last_name()); }); });
  // Not found: the close names are read, past the cut too.
  expect_shrunk([&] { in_scope([&] { (void)model_->tensor("no such tensor"); }); });
  // Before the cut: found, in a scope and outside one.
  EXPECT_EQ(in_scope([&] { return model_->tensor("head").byte_size(); }), 16U);
  EXPECT_EQ(model_->tensor("head").byte_size(), 16U);
}

TEST_F(FrontEndChecks, GettersOfLostMetadataAreErrorsEachTime) {
  cut();
  std::string name;
  expect_shrunk([&] { in_scope([&] { name = std::string(last_->name()); }); });
  expect_shrunk([&] { in_scope([&] { name = std::string(last_->lookup_name()); }); });
  expect_shrunk([&] { in_scope([&] { name = std::string(last_->name()); }); });
  // Written back in place (same file), the bytes are the file's again.
  write(path_, metadata_model_bytes());
  EXPECT_EQ(in_scope([&] { return std::string(last_->name()); }), last_name());
}

TEST_F(FrontEndChecks, AnOpenThatMeetsTheCutIsAnError) {
  // As the CLI meets it: the file cut after it was mapped, before the pass read it.
  const fs::path copy = at("copy.onnx");
  write(copy, metadata_model_bytes());
  MappedFile file = MappedFile::open(copy);
  fs::resize_file(copy, kKeptMetadata);
  test::expect_shrunk(
      [&] {
        in_scope([&] {
          (void)detail::build_index(std::move(file), copy.string(), copy.parent_path(),
                                    schema::MessageKind::ModelProto, OpenOptions{},
                                    detail::IndexScope::full);
        });
      },
      copy, kKeptMetadata);
}

TEST_F(FrontEndChecks, AGuardedCopyThrowsWithOrWithoutAScope) {
  cut();
  std::vector<std::byte> copy(last_->byte_size());
  expect_shrunk([&] { copy_bytes(last_->bytes(), copy); });
  expect_shrunk([&] { in_scope([&] { copy_bytes(last_->bytes(), copy); }); });
}

TEST_F(FrontEndChecks, ASaveThatMeetsTheCutLeavesTheDestinationAsItWas) {
  // The small payloads past the cut are copied through the map (no kernel copy): the check
  // before the copy fails the save before anything is put in place.
  const fs::path out = at("out.onnx");
  const std::vector<std::byte> old(3, std::byte{7});
  write(out, old);
  cut();
  expect_shrunk([&] { in_scope([&] { (void)save(*model_, out); }); });
  EXPECT_EQ(read(out), old);
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(out.parent_path())) {
    left.push_back(entry.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"m.onnx", "out.onnx"}));
}

TEST_F(FrontEndChecks, ScopesNest) {
  cut();
  const onnxmap::FrontEndScope outer;
  { const onnxmap::FrontEndScope inner; }
  // The outer one still holds after the inner one ended.
  expect_shrunk([&] { (void)last_->name(); });
}

// In a child process (a death test).
class FrontEndChecksDeath : public FrontEndChecks {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    FrontEndChecks::SetUp();
  }
};

TEST_F(FrontEndChecksDeath, APlainViewOfALostPageMeetsTheSignalNeverAZero) {
  const auto run = [this] {
    // Thread A (this one) holds a plain span over a page of payload past the cut; it was read
    // whole before the cut (the model's bytes, 2s).
    const std::span<const std::byte> held = last_->bytes();
    if (held[0] != std::byte{2}) ::_exit(5);
    cut();
    // Thread B's scope meets the cut reading metadata: the clean error.
    bool clean_error = false;
    std::thread b([&] {
      try {
        const onnxmap::FrontEndScope scope;
        (void)model_->find_tensor(last_name());
      } catch (const Error& e) {
        clean_error = e.kind() == ErrorKind::io;
      }
    });
    b.join();
    if (!clean_error) ::_exit(6);
    // A's read of its span now: SIGBUS, as without onnxmap; a value read (a zero) exits.
    const volatile std::byte value = held[0];
    ::_exit(value == std::byte{0} ? 7 : 8);
  };
  if (test::kSanitizerTakesSigbus) {
    EXPECT_DEATH(run(), "Sanitizer: BUS");
  } else {
    EXPECT_EXIT(run(), ::testing::KilledBySignal(SIGBUS), "");
  }
}

}  // namespace
}  // namespace onnxmap
