// Saving by kernel copies: payloads of at least 256 KiB are copied from their source file with
// one descriptor kept for all the copies from it, and a SEEK_DATA / SEEK_HOLE walk that goes on
// from the extent the previous copy ended in. These check the bytes (and holes) that come out
// where data and holes alternate within and between payloads, and where every payload has a
// source file of its own.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "onnxmap/onnxmap.hpp"
#include "test_support.hpp"

namespace onnxmap::test {
namespace {

constexpr std::uint64_t kKernelCopied = std::uint64_t{256} << 10U;

SaveOptions layout(ExternalData where) {
  SaveOptions options;
  options.external_data = where;
  return options;
}

class SaveCopy : public TempFolder {
 protected:
  // Every tensor of `a` has the same bytes in `b`.
  static void expect_same_payloads(const Model& a, const Model& b) {
    ASSERT_EQ(a.tensor_count(), b.tensor_count());
    for (std::size_t i = 0; i < a.tensor_count(); ++i) {
      const TensorData x = a.tensor_at(i).data();
      const TensorData y = b.tensor_at(i).data();
      EXPECT_TRUE(std::ranges::equal(x.bytes(), y.bytes())) << a.tensor_at(i).lookup_name();
    }
  }

  static std::uint64_t allocated(const std::filesystem::path& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0);
    return static_cast<std::uint64_t>(st.st_blocks) * 512U;
  }

  // A sparse synth model (payloads of 512 KiB to 2 MiB, all holes), then a byte written at the
  // start, past the middle and at the end of every payload the kernel copies: each copy finds
  // data, a hole, data, a hole, and its last extent runs into the next payload's first.
  void make_sparse_with_data(const std::filesystem::path& path) {
    SynthOptions options;
    options.layers = 2;
    options.hidden = 512;
    options.vocab = 1000;
    options.sparse = true;
    (void)synth(path, options);
    std::vector<std::uint64_t> offsets;
    {
      const Model model = Model::open(path);
      for (std::size_t i = 0; i < model.tensor_count(); ++i) {
        const Tensor t = model.tensor_at(i);
        if (t.byte_size() < kKernelCopied) continue;
        for (const std::uint64_t at :
             {std::uint64_t{0}, t.byte_size() / 2 + 5000, t.byte_size() - 1}) {
          offsets.push_back(t.file_offset() + at);
        }
      }
    }
    ASSERT_GE(offsets.size(), 9U);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    for (std::size_t i = 0; i < offsets.size(); ++i) {
      const auto byte = static_cast<char>(i + 1);
      ASSERT_EQ(::pwrite(fd, &byte, 1, static_cast<off_t>(offsets[i])), 1);
    }
    ::close(fd);
  }
};

TEST_F(SaveCopy, DataBetweenHolesComesOutBothWays) {
  make_sparse_with_data(at("sparse.onnx"));
  const Model source = Model::open(at("sparse.onnx"));
  save(source, at("ext.onnx"), layout(ExternalData::external));
  const Model external = Model::open(at("ext.onnx"));
  expect_same_payloads(source, external);
  save(external, at("back.onnx"), layout(ExternalData::inline_data));
  // Back inline, the model is the one synth wrote (and the bytes written into it), byte for byte.
  EXPECT_EQ(read(at("sparse.onnx")), read(at("back.onnx")));
  // The holes stayed holes: a few blocks of data around each written byte, not megabytes.
  const std::uint64_t data_size = std::filesystem::file_size(at("ext.onnx.data"));
  EXPECT_GT(data_size, std::uint64_t{8} << 20U);
  EXPECT_LT(allocated(at("ext.onnx.data")), data_size / 8);
  EXPECT_LT(allocated(at("back.onnx")), std::filesystem::file_size(at("back.onnx")) / 8);
}

TEST_F(SaveCopy, OneSourceFilePerPayloadComesBackInline) {
  SynthOptions options;
  options.layers = 1;
  options.hidden = 512;
  options.vocab = 1000;
  (void)synth(at("model.onnx"), options);
  SaveOptions split = layout(ExternalData::external);
  split.location = "weights/w.data";
  split.one_file_per_tensor = true;
  const SaveResult r = save(Model::open(at("model.onnx")), at("split.onnx"), split);
  EXPECT_GE(r.data_files.size(), 5U);
  // Each payload from another file: the kept descriptor is swapped at every copy.
  save(Model::open(at("split.onnx")), at("back.onnx"), layout(ExternalData::inline_data));
  EXPECT_EQ(read(at("model.onnx")), read(at("back.onnx")));
}

}  // namespace
}  // namespace onnxmap::test
