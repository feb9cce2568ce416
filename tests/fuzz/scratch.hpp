#pragma once
// A folder for the files a fuzz target writes, made on first use and removed at exit. In /dev/shm
// when the machine has it: rewriting a file thousands of times a second on a disk filesystem
// waits for the disk (ext4 flushes a file truncated and written again), which starves the fuzzer.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace onnxmap::fuzz {

inline const std::filesystem::path& scratch_folder() {
  namespace fs = std::filesystem;
  static const fs::path folder = [] {
    std::error_code ec;
    const fs::path base =
        fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    std::string name = (base / "onnxmap-fuzz-XXXXXX").string();
    if (::mkdtemp(name.data()) == nullptr) std::abort();
    return fs::path(name);
  }();
  // Registered after the path exists, so it runs before the path is destroyed at exit.
  static const bool cleanup = std::atexit([] { fs::remove_all(scratch_folder()); }) == 0;
  (void)cleanup;
  return folder;
}

}  // namespace onnxmap::fuzz
