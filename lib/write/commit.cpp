#include "write/commit.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <system_error>

#include "io/system_calls.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::detail {

namespace {

namespace fs = std::filesystem;

fs::path folder_of(const fs::path& path) {
  return path.parent_path().empty() ? fs::path(".") : path.parent_path();
}

void sync_folder(const fs::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const bool ok = fd >= 0 && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok) {
    throw Error(ErrorKind::io, "cannot fsync the folder", Error::kNoOffset, {}, folder.string());
  }
}

bool name_taken(const fs::path& path) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(path, ec));
}

// Removes the model at the destination before data files replace its own, so that no reader
// opens it with the new data.
void remove_old_model(const fs::path& model, bool durable) {
  if (io::system_calls().unlink(model.c_str()) != 0 && errno != ENOENT) {
    throw Error(ErrorKind::io,
                std::string("cannot remove the old model before replacing its data files: ") +
                    std::strerror(errno),
                Error::kNoOffset, {}, model.string());
  }
  if (durable) sync_folder(folder_of(model));
}

}  // namespace

void commit_model(std::vector<io::NewFile>& data_files, io::NewFile& model, bool durable) {
  const bool replaces_data =
      std::any_of(data_files.begin(), data_files.end(),
                  [](const io::NewFile& f) { return name_taken(f.final_path()); });
  if (replaces_data) remove_old_model(model.final_path(), durable);
  std::vector<fs::path> placed;
  try {
    for (io::NewFile& file : data_files) {
      file.commit();
      placed.push_back(file.final_path());
    }
    model.commit();
  } catch (...) {
    for (const fs::path& path : placed) ::unlink(path.c_str());
    throw;
  }
  if (durable) {  // the renames themselves survive a power cut
    std::set<fs::path> folders{folder_of(model.final_path())};
    for (const fs::path& path : placed) folders.insert(folder_of(path));
    for (const fs::path& folder : folders) sync_folder(folder);
  }
}

}  // namespace onnxmap::detail
