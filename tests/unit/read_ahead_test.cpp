// MappedFile::read_ahead (behind Tensor::prefetch and the slice_rows of a cold slice) reads
// through a descriptor of its own, advised for random access. It opens that descriptor once per
// mapped file, on its first call, however many calls and threads follow: a serving loop that
// prefetches every tensor must not open and close the file thousands of times. The descriptors
// are counted in /proc/self/fd.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "io/mapped_file.hpp"
#include "test_support.hpp"

namespace onnxmap::test {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kFileBytes = std::size_t{3} << 20U;

// Descriptors of this process open on `path`.
std::size_t descriptors_of(const fs::path& path) {
  const fs::path target = fs::canonical(path);
  std::size_t count = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd", ec)) {
    const fs::path link = fs::read_symlink(entry.path(), ec);
    if (!ec && link == target) ++count;
  }
  return count;
}

class ReadAhead : public TempFolder {
 protected:
  void SetUp() override {
    TempFolder::SetUp();
    if (!fs::is_directory("/proc/self/fd")) GTEST_SKIP() << "no /proc/self/fd to count descriptors";
    std::vector<std::byte> bytes(kFileBytes);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 7 % 251);
    path_ = at("data.bin");
    write(path_, bytes);
  }
  fs::path path_;
};

TEST_F(ReadAhead, OpensOneDescriptorForAllCalls) {
  std::optional<MappedFile> file = MappedFile::open(path_);
  ASSERT_TRUE(file->is_mapped());
  EXPECT_EQ(descriptors_of(path_), 1U);  // the map's own; read_ahead opens nothing yet
  file->read_ahead(0, kFileBytes);
  EXPECT_EQ(descriptors_of(path_), 2U);  // and keeps the one it opened
  for (std::uint64_t offset = 0; offset < kFileBytes; offset += 4096) {
    file->read_ahead(offset, 65536);
  }
  EXPECT_EQ(descriptors_of(path_), 2U);
  EXPECT_EQ(file->bytes()[kFileBytes - 1], static_cast<std::byte>((kFileBytes - 1) * 7 % 251));
  {
    const MappedFile copy = *file;  // copies share the map and its descriptors
    copy.read_ahead(4096, 4096);
    EXPECT_EQ(descriptors_of(path_), 2U);
  }
  file.reset();
  EXPECT_EQ(descriptors_of(path_), 0U);
}

// The first calls race to open the descriptor (run under TSan by tools/test.sh).
TEST_F(ReadAhead, ThreadsShareTheDescriptor) {
  const MappedFile file = MappedFile::open(path_);
  constexpr unsigned kThreads = 4;
  std::vector<std::jthread> threads;
  for (unsigned t = 0; t < kThreads; ++t) {
    threads.emplace_back([&file, t] {
      for (std::uint64_t i = 0; i < 64; ++i)
        file.read_ahead((t * 64 + i) * 8192 % kFileBytes, 8192);
    });
  }
  threads.clear();  // joins
  EXPECT_EQ(descriptors_of(path_), 2U);
}

TEST_F(ReadAhead, CopiedFilesOpenNothing) {
  const MappedFile file = MappedFile::open(path_, LoadMode::read);
  EXPECT_FALSE(file.is_mapped());
  file.read_ahead(0, kFileBytes);
  EXPECT_EQ(descriptors_of(path_), 0U);
}

}  // namespace
}  // namespace onnxmap::test
