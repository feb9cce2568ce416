#pragma once
// What the unit tests share: a fresh temporary folder per test (removed afterwards, also when a
// death test's child dies in it), bytes spelled out by hand, and the error a call throws.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "onnxmap/error.hpp"

namespace onnxmap::test {

// AddressSanitizer and ThreadSanitizer install a SIGBUS handler of their own at start, which
// reports the fault and exits. A test of a
// fault outside every guard expects their exit, not the default SIGBUS.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ONNXMAP_TEST_SANITIZER_HANDLER
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || \
    defined(ONNXMAP_TEST_SANITIZER_HANDLER)
inline constexpr bool kSanitizerTakesSigbus = true;
#else
inline constexpr bool kSanitizerTakesSigbus = false;
#endif

// The folder of the running test, named after it and the test process. A death test's child
// (gtest's "threadsafe" style runs the test again in a new process, with this process's
// environment) gets a folder inside its parent's, so the parent's TearDown removes what a child
// that died left behind.
[[nodiscard]] inline std::filesystem::path test_folder_path() {
  static constexpr const char* kOwner = "ONNXMAP_TEST_OWNER_PID";
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string pid = std::to_string(::getpid());
  const char* owner = std::getenv(kOwner);
  if (owner == nullptr) ::setenv(kOwner, pid.c_str(), 0);
  const std::string owner_pid = owner == nullptr ? pid : owner;
  const auto folder =
      std::filesystem::temp_directory_path() /
      ("onnxmap-" + std::string(info->test_suite_name()) + "-" + info->name() + "-" + owner_pid);
  return owner_pid == pid ? folder : folder / ("child-" + pid);
}

// test_folder_path() for a plain TEST: made by the constructor, removed by the destructor.
class ScopedTestFolder {
 public:
  ScopedTestFolder() : path_(test_folder_path()) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScopedTestFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScopedTestFolder(const ScopedTestFolder&) = delete;
  ScopedTestFolder& operator=(const ScopedTestFolder&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

// Flushes `path` and asks the kernel to drop its pages from the page cache (the pages this
// process maps stay), so that a load reads it from the disk: every load reads pages the page
// cache holds buffered, whatever its mode.
inline void evict(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0) << path;
  (void)::fdatasync(fd);
  EXPECT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0) << path;
  ::close(fd);
}

// A fixture with test_folder_path() made before each test and removed after it.
class TempFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_.emplace();
    root_ = folder_->path();
  }
  void TearDown() override { folder_.reset(); }

  [[nodiscard]] std::filesystem::path at(const std::string& name) const { return root_ / name; }

  static std::vector<std::byte> read(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> out(chars.size());
    std::memcpy(out.data(), chars.data(), chars.size());
    return out;
  }
  static void write(const std::filesystem::path& path, std::span<const std::byte> bytes) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  static void write(const std::filesystem::path& path, std::string_view text) {
    write(path, std::as_bytes(std::span(text.data(), text.size())));
  }
  // Names in the folder (recursively), relative to it, sorted.
  [[nodiscard]] std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root_)) {
      names.push_back(std::filesystem::relative(entry.path(), root_).generic_string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  std::filesystem::path root_;

 private:
  std::optional<ScopedTestFolder> folder_;
};

// {0x0a, 0x01, ...} as bytes.
[[nodiscard]] inline std::vector<std::byte> bytes_of(std::initializer_list<unsigned> values) {
  std::vector<std::byte> out;
  for (const unsigned v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

[[nodiscard]] inline std::vector<std::byte> bytes_of(std::string_view text) {
  std::vector<std::byte> out;
  for (const char c : text) out.push_back(static_cast<std::byte>(c));
  return out;
}

// The onnxmap::Error that `call()` throws, or nullopt when it returns.
template <class Call>
[[nodiscard]] std::optional<Error> error_of(Call&& call) {
  try {
    call();
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

// The onnxmap::Error that `call()` throws while this process may write files of at most `bytes`
// (RLIMIT_FSIZE, SIGXFSZ ignored): writes past it fail with EFBIG the way a full disk fails them
// with ENOSPC. The limit and the signal's handler are put back before it returns.
template <class Call>
[[nodiscard]] std::optional<Error> error_under_file_size_limit(rlim_t bytes, Call&& call) {
  rlimit old{};
  EXPECT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = bytes;
  EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::optional<Error> error = error_of(call);
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous);
  return error;
}

// Expects `call()` to throw an Error of `kind` whose field path is `path` (any path when
// `path` is nullopt); returns its message ("" when it did not throw).
template <class Call>
std::string expect_error(Call&& call, ErrorKind kind,
                         const std::optional<std::string>& path = std::nullopt) {
  const std::optional<Error> error = error_of(call);
  if (!error) {
    ADD_FAILURE() << "no error; expected " << to_string(kind);
    return {};
  }
  EXPECT_EQ(error->kind(), kind) << error->what();
  if (path) {
    EXPECT_EQ(error->field_path(), *path) << error->what();
  }
  return error->what();
}

// Expects `call()` to throw the error of a read past the end of `file`, cut to `kept` bytes while
// mapped (the fault guards): io, naming the file, its size now and that it shrank.
template <class Call>
void expect_shrunk(Call&& call, const std::filesystem::path& file, std::uint64_t kept) {
  const std::string message = expect_error(call, ErrorKind::io);
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
  EXPECT_NE(message.find("now " + std::to_string(kept) + " bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("shrink"), std::string::npos) << message;
}

}  // namespace onnxmap::test
