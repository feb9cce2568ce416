// Files that change under us, and the copy mode that is immune: LoadMode::read copies the file
// through Boost.Iostreams (also for pipes), so truncating the file afterwards changes nothing;
// a mapped file truncated after open faults (SIGBUS) on the next touch of a lost page, which is
// why the copy mode exists.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "fuzz/walk.hpp"
#include "model_builder.hpp"
#include "onnxmap/model.hpp"
#include "test_support.hpp"

namespace onnxmap {
namespace {

namespace fs = std::filesystem;
using test::sub;

// A model with one FLOAT[floats] initializer "w" (byte i of raw_data = i mod 251); the default
// 4 KiB payload spans a page of its own.
std::vector<std::byte> model_bytes(std::int64_t floats = 1024) {
  std::vector<std::byte> payload(static_cast<std::size_t>(floats) * 4);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::byte>(i % 251);
  return test::message([&](wire::Writer& m) {
    m.field_int64(schema::ModelProto::kIrVersion, 8);
    sub(m, schema::ModelProto::kGraph, [&](wire::Writer& g) {
      g.field_string(schema::GraphProto::kName, "main");
      sub(g, schema::GraphProto::kInitializer,
          test::raw_tensor("w", DataType::float32, {floats}, payload));
    });
  });
}

class LoadModes : public test::TempFolder {
 protected:
  [[nodiscard]] fs::path write_model(const std::string& name) const {
    const fs::path path = at(name);
    write(path, model_bytes());
    return path;
  }
};

TEST_F(LoadModes, ReadAndMapAgree) {
  const fs::path path = write_model("m.onnx");
  OpenOptions copy;
  copy.mode = LoadMode::read;
  const Model mapped = Model::open(path);
  const Model copied = Model::open(path, copy);
  const auto a = mapped.tensor("w").bytes();
  const auto b = copied.tensor("w").bytes();
  ASSERT_EQ(a.size(), 4096U);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
  EXPECT_NE(a.data(), b.data());
  EXPECT_EQ(peek(path, copy).graph_name(), "main");
  fuzz::walk_model(copied);
}

TEST_F(LoadModes, ACopiedFileMayBeTruncatedAfterOpen) {
  const fs::path path = write_model("m.onnx");
  OpenOptions copy;
  copy.mode = LoadMode::read;
  const Model model = Model::open(path, copy);
  fs::resize_file(path, 0);
  const auto bytes = model.tensor("w").bytes();
  ASSERT_EQ(bytes.size(), 4096U);
  EXPECT_EQ(bytes[250], std::byte{250});
  fuzz::walk_model(model);
}

TEST_F(LoadModes, AMappedFileTruncatedAfterOpenFaultsOnTouch) {
  // What the copy mode protects against, shown in a child process: the payload's pages are gone,
  // and touching them raises SIGBUS (ASan turns it into an abort). Documented in
  // docs/format-and-limits.md.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const fs::path path = write_model("m.onnx");
  EXPECT_DEATH(
      {
        const Model model = Model::open(path);
        const auto bytes = model.tensor("w").bytes();
        fs::resize_file(path, 0);
        volatile std::byte last = bytes.back();
        (void)last;
      },
      "");
}

TEST_F(LoadModes, PipesAreRead) {
  const fs::path fifo = root_ / "pipe.onnx";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // 3 MiB: more than the growing read chunks (64 KiB up to 1 MiB) take at once.
  const auto bytes = model_bytes(786432);
  std::jthread writer([&] {
    std::ofstream(fifo, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  });
  const Model model = Model::open(fifo);  // map mode asked, but a pipe cannot be mapped
  const auto w = model.tensor("w").bytes();
  ASSERT_EQ(w.size(), 3U << 20U);
  EXPECT_EQ(w[250], std::byte{250});
  EXPECT_EQ(w.back(), static_cast<std::byte>((w.size() - 1) % 251));

  // The same bytes from a regular file in read mode: read by its size, then to the end.
  const fs::path file = root_ / "big.onnx";
  std::ofstream(file, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  OpenOptions copy;
  copy.mode = LoadMode::read;
  const Model copied = Model::open(file, copy);
  EXPECT_EQ(copied.file_size(), bytes.size());
  EXPECT_TRUE(std::ranges::equal(copied.tensor("w").bytes(), w));
}

TEST_F(LoadModes, ModelFilesThatAreNotFiles) {
  for (const LoadMode mode : {LoadMode::map, LoadMode::read}) {
    OpenOptions options;
    options.mode = mode;
    try {
      (void)Model::open(root_, options);
      ADD_FAILURE() << "opened a folder";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::io) << e.what();
    }
    EXPECT_THROW((void)Model::open(root_ / "missing.onnx", options), Error);
  }
}

}  // namespace
}  // namespace onnxmap
