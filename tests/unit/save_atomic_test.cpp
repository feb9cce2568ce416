// Saves are all-or-nothing (write/commit.hpp): a failure or a kill while writing leaves the old
// destination byte for byte and no temporary file; while the files are put in place, a reader of
// the model's path finds the old version, the new one or none, never the old model naming new
// data; a failure while putting them in place removes what it placed. And a model replaced by
// rename keeps reading (and copying) the version it opened.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "onnxmap/onnxmap.hpp"
#include "test_support.hpp"
#include "test_system_calls.hpp"

namespace onnxmap::test::save_atomic {
namespace {

namespace fs = std::filesystem;

constexpr int kTensors = 4;
// Larger than the writer's generator chunk (1 MiB), so a source fails in the middle of a file.
constexpr std::int64_t kTensorBytes = std::int64_t{3} << 19U;

// Byte i of tensor k in version v.
std::byte version_byte(int v, int k, std::uint64_t i) {
  return static_cast<std::byte>((i * 13 + static_cast<std::uint64_t>(k) * 7 + v * 101) & 0xFFU);
}

// Four uint8 tensors of 1.5 MiB whose bytes say which version they belong to. `on_write` is called
// with each tensor's index and the offset of each piece the writer asks for, before it is filled.
ModelBuilder versioned_model(int v, std::function<void(int, std::uint64_t)> on_write = {}) {
  ModelBuilder m;
  m.ir_version(8).opset("", 17).producer("save_atomic_test", std::to_string(v));
  GraphBuilder& g = m.graph("main");
  for (int k = 0; k < kTensors; ++k) {
    g.initializer(TensorBuilder("t" + std::to_string(k), DataType::uint8, {kTensorBytes},
                                [v, k, on_write](std::uint64_t offset, std::span<std::byte> out) {
                                  if (on_write) on_write(k, offset);
                                  for (std::size_t i = 0; i < out.size(); ++i) {
                                    out[i] = version_byte(v, k, offset + i);
                                  }
                                }));
  }
  g.input("x", TypeSpec::tensor(DataType::uint8, {{1}}));
  g.output("x", TypeSpec::tensor(DataType::uint8, {{1}}));
  return m;
}

// External data split into one file per tensor (m.onnx.data.00001 ...).
SaveOptions sharded() {
  SaveOptions o;
  o.external_data = ExternalData::external;
  o.size_threshold = 0;
  o.max_external_file_size = kTensorBytes;
  return o;
}

// The version whose bytes every tensor of `model` holds; fails the test on a mix.
int version_of(const Model& model) {
  int found = -1;
  for (int k = 0; k < kTensors; ++k) {
    const TensorData data = model.tensor("t" + std::to_string(k)).data();
    int v = -1;
    for (const int candidate : {1, 2}) {
      bool all = data.bytes().size() == static_cast<std::size_t>(kTensorBytes);
      for (std::size_t i = 0; all && i < data.bytes().size(); ++i) {
        all = data.bytes()[i] == version_byte(candidate, k, i);
      }
      if (all) v = candidate;
    }
    EXPECT_NE(v, -1) << "t" << k << " holds bytes of no version";
    EXPECT_TRUE(found == -1 || found == v) << "t" << k << " is version " << v << ", t0 " << found;
    found = v;
  }
  return found;
}

class SaveAtomic : public TempFolder {
 protected:
  // Every file of the folder and its bytes.
  [[nodiscard]] std::map<std::string, std::vector<std::byte>> snapshot() const {
    std::map<std::string, std::vector<std::byte>> out;
    for (const std::string& name : listing()) out[name] = read(at(name));
    return out;
  }

  // Whether the folder gives unnamed files (O_TMPFILE): then a killed writer leaves no file.
  [[nodiscard]] bool unnamed_files() const {
    const int fd = ::open(at("").c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
    return fd >= 0;
  }
};

TEST_F(SaveAtomic, AnErrorMidWriteLeavesTheOldModel) {
  save(versioned_model(1), at("m.onnx"), sharded());
  const auto before = snapshot();
  ASSERT_EQ(before.size(), 5U);
  // The source of the third tensor fails halfway through its data file.
  const auto failing = [](int k, std::uint64_t offset) {
    if (k == 2 && offset > 0) throw std::runtime_error("the source failed");
  };
  EXPECT_THROW(save(versioned_model(2, failing), at("m.onnx"), sharded()), std::runtime_error);
  EXPECT_EQ(snapshot(), before);
  // Inline too.
  save(versioned_model(1), at("inline.onnx"));
  const auto with_inline = snapshot();
  EXPECT_THROW(save(versioned_model(2, failing), at("inline.onnx")), std::runtime_error);
  EXPECT_EQ(snapshot(), with_inline);
}

TEST_F(SaveAtomic, AFullDiskLeavesTheOldModel) {
  save(versioned_model(1), at("m.onnx"), sharded());
  const auto before = snapshot();
  // The old files are larger than the limit already, and stay as they are.
  const auto error = test::error_under_file_size_limit(
      5000, [&] { save(versioned_model(2), at("m.onnx"), sharded()); });
  const std::string what = error ? error->what() : "";
  EXPECT_NE(what.find("m.onnx.data.00001"), std::string::npos) << what;
  EXPECT_EQ(snapshot(), before);
}

TEST_F(SaveAtomic, AKillMidWriteLeavesTheOldModel) {
  save(versioned_model(1), at("m.onnx"), sharded());
  const auto before = snapshot();
  // SIGKILL while the third data file is written (no destructor runs): the two before it are
  // complete but not in place.
  const auto kill = [](int k, std::uint64_t offset) {
    if (k == 2 && offset > 0) std::raise(SIGKILL);
  };
  // A fork writing into this test's folder (the threadsafe style would run it in a folder of
  // its own).
  GTEST_FLAG_SET(death_test_style, "fast");
  EXPECT_EXIT(save(versioned_model(2, kill), at("m.onnx"), sharded()),
              ::testing::KilledBySignal(SIGKILL), "");
  const auto after = snapshot();
  for (const auto& [name, bytes] : before) EXPECT_EQ(after.at(name), bytes) << name;
  for (const auto& [name, bytes] : after) {
    // Unnamed files vanish with the process; elsewhere only hidden temporary names remain.
    if (!before.contains(name)) {
      EXPECT_FALSE(unnamed_files()) << name << " is left behind";
      EXPECT_NE(name.find(".onnxmap-"), std::string::npos) << name;
    }
  }
  EXPECT_EQ(version_of(Model::open(at("m.onnx"))), 1);
}

TEST_F(SaveAtomic, ReadersSeeTheOldModelTheNewOneOrNone) {
  for (const bool replaces_data : {false, true}) {
    SCOPED_TRACE(replaces_data ? "the new data files replace the old ones" : "new data names");
    // Old: inline (no data file to replace) or sharded with the same names as the new one.
    const fs::path model = at(replaces_data ? "r.onnx" : "n.onnx");
    save(versioned_model(1), model, replaces_data ? sharded() : SaveOptions{});
    std::vector<std::string> seen;  // what a reader opening the path finds after each step
    {
      const test::WatchedSteps watched([&](const fs::path&) {
        seen.push_back(fs::exists(model) ? std::to_string(version_of(Model::open(model))) : "none");
      });
      save(versioned_model(2), model, sharded());
    }
    // Four data files, then the model; the old model first where data files replace its own.
    const std::vector<std::string> expected =
        replaces_data ? std::vector<std::string>{"none", "none", "none", "none", "none", "2"}
                      : std::vector<std::string>{"1", "1", "1", "1", "2"};
    EXPECT_EQ(seen, expected);
  }
}

TEST_F(SaveAtomic, AFailureWhilePlacingRemovesWhatWasPlaced) {
  for (const bool replaces_data : {false, true}) {
    SCOPED_TRACE(replaces_data ? "the new data files replace the old ones" : "new data names");
    const fs::path model = at(replaces_data ? "r.onnx" : "n.onnx");
    save(versioned_model(1), model, replaces_data ? sharded() : SaveOptions{});
    const auto before = snapshot();
    {
      const test::WatchedSteps third_fails({}, 3);  // a data file's rename, either way
      EXPECT_THROW(save(versioned_model(2), model, sharded()), Error);
    }
    const auto after = snapshot();
    if (!replaces_data) {
      EXPECT_EQ(after, before);  // the old model, and nothing of the new one
    } else {
      // The old model was removed before its data files were replaced: none is left, and of the
      // files the failed save placed none is left either.
      EXPECT_FALSE(fs::exists(model));
      for (const auto& [name, bytes] : after) {
        EXPECT_TRUE(before.contains(name)) << name;
        EXPECT_EQ(bytes, before.at(name)) << name;
      }
    }
    for (const auto& file : fs::directory_iterator(at(""))) fs::remove(file.path());
  }
}

TEST_F(SaveAtomic, ManyDataFilesFailCleanly) {
  // More data files than are kept unnamed: the later ones have temporary names when the source
  // fails, and are removed all the same.
  ModelBuilder m;
  m.ir_version(8).opset("", 17);
  GraphBuilder& g = m.graph("main");
  for (int k = 0; k < 80; ++k) {
    g.initializer(TensorBuilder("w" + std::to_string(k), DataType::uint8, {64},
                                [k](std::uint64_t, std::span<std::byte> out) {
                                  if (k == 79) throw std::runtime_error("the last source failed");
                                  std::fill(out.begin(), out.end(), std::byte{7});
                                }));
  }
  SaveOptions o;
  o.external_data = ExternalData::external;
  o.size_threshold = 0;
  o.one_file_per_tensor = true;
  o.location = "weights/w.data";
  EXPECT_THROW(save(m, at("m.onnx"), o), std::runtime_error);
  EXPECT_EQ(listing(), std::vector<std::string>{});  // the folder it made is gone too
}

TEST_F(SaveAtomic, AModelReplacedByRenameKeepsItsVersion) {
  save(versioned_model(1), at("m.onnx"), sharded());
  const Model opened = Model::open(at("m.onnx"));
  ASSERT_TRUE(opened.opened_version().has_value());
  EXPECT_EQ(opened.opened_version(), file_version(at("m.onnx")));
  EXPECT_EQ(opened.changed_on_disk(), std::vector<fs::path>{});

  save(versioned_model(2), at("m.onnx"), sharded());  // a new version, renamed into place
  EXPECT_EQ(version_of(Model::open(at("m.onnx"))), 2);
  EXPECT_EQ(version_of(opened), 1);  // the data files too: they were opened with the model
  const std::vector<fs::path> changed = opened.changed_on_disk();
  ASSERT_EQ(changed.size(), 5U);
  EXPECT_EQ(changed.front(), at("m.onnx"));
  EXPECT_NE(opened.opened_version(), file_version(at("m.onnx")));

  // A copy of the opened model is the version opened, though the files at its paths are not.
  save(opened, at("copy.onnx"), sharded());
  EXPECT_EQ(version_of(Model::open(at("copy.onnx"))), 1);
}

TEST_F(SaveAtomic, ACopyOfAReplacedInlineModelIsTheVersionOpened) {
  // Inline payloads of 1 MiB are copied from the source by the kernel, through a descriptor;
  // the source was replaced by a file of the same size meanwhile.
  const auto big = [](int v) {
    ModelBuilder m;
    m.ir_version(8).opset("", 17);
    m.graph("main").initializer(TensorBuilder("w", DataType::uint8, {1 << 20},
                                              [v](std::uint64_t offset, std::span<std::byte> out) {
                                                for (std::size_t i = 0; i < out.size(); ++i) {
                                                  out[i] = version_byte(v, 0, offset + i);
                                                }
                                              }));
    return m;
  };
  save(big(1), at("m.onnx"));
  const auto v1 = read(at("m.onnx"));
  const Model opened = Model::open(at("m.onnx"));
  save(big(2), at("m.onnx"));
  ASSERT_EQ(read(at("m.onnx")).size(), v1.size());
  ASSERT_NE(read(at("m.onnx")), v1);
  save(opened, at("copy.onnx"));
  EXPECT_EQ(read(at("copy.onnx")), v1);
}

}  // namespace
}  // namespace onnxmap::test::save_atomic
