#include "io/lfs_pointer.hpp"

#include <charconv>
#include <string_view>
#include <vector>

#include "onnxmap/bytes.hpp"

namespace onnxmap::detail {

namespace {

constexpr std::size_t kMaxPointer = 1024;  // the specification's bound
constexpr std::string_view kVersion = "version https://git-lfs.github.com/spec/";

// The value of line `key ...` in `text`, or empty.
std::string_view value_of(std::string_view text, std::string_view key) {
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    if (line.starts_with(key)) return line.substr(key.size());
    at = end + 1;
  }
  return {};
}

}  // namespace

std::optional<LfsPointer> lfs_pointer(std::span<const std::byte> file) {
  if (file.size() >= kMaxPointer || file.size() < kVersion.size()) return std::nullopt;
  std::vector<std::byte> bytes(file.size());
  copy_bytes(file, bytes);
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (!text.starts_with(kVersion)) return std::nullopt;
  const std::string_view oid = value_of(text, "oid ");
  const std::string_view size = value_of(text, "size ");
  LfsPointer pointer{std::string(oid), 0};
  const auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), pointer.size);
  if (oid.empty() || ec != std::errc{} || end != size.data() + size.size()) return std::nullopt;
  return pointer;
}

std::string lfs_pointer_message(const LfsPointer& pointer) {
  return "is a Git LFS pointer to an object of " + std::to_string(pointer.size) + " bytes (" +
         pointer.oid +
         "), not the file itself: the repository was cloned without Git LFS; run "
         "`git lfs install && git lfs pull` in it (or download the file)";
}

}  // namespace onnxmap::detail
