#include "remote/cache_record.hpp"

#include <cstdio>
#include <fstream>
#include <span>
#include <sstream>

#include "io/new_file.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::remote {

namespace {

constexpr std::string_view kMagic = "onnxmap-mirror 1";

// "key value" on one line; false when the line is not `key`.
bool take(std::istream& in, std::string_view key, std::string& value) {
  std::string line;
  if (!std::getline(in, line) || !line.starts_with(key) || line.size() < key.size() + 1 ||
      line[key.size()] != ' ') {
    return false;
  }
  value = line.substr(key.size() + 1);
  return true;
}

bool take_number(std::istream& in, std::string_view key, std::uint64_t& value) {
  std::string text;
  if (!take(in, key, text)) return false;
  try {
    std::size_t used = 0;
    value = std::stoull(text, &used);
    return used == text.size();
  } catch (const std::exception&) {
    return false;
  }
}

bool read_file(std::istream& in, CachedFile& file) {
  std::uint64_t ranges = 0;
  if (!take(in, "location", file.location) || !take_number(in, "size", file.validators.size) ||
      !take(in, "etag", file.validators.etag) ||
      !take(in, "last-modified", file.validators.last_modified) ||
      !take_number(in, "ranges", ranges)) {
    return false;
  }
  for (std::uint64_t i = 0; i < ranges; ++i) {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    if (!(in >> begin >> end) || begin >= end || end > file.validators.size) return false;
    file.held.add(begin, end - begin);
  }
  in >> std::ws;
  return true;
}

}  // namespace

std::optional<CacheRecord> read_record(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line) || line != kMagic) return std::nullopt;
  CacheRecord record;
  std::uint64_t files = 0;
  if (!take(in, "url", record.url) || !take_number(in, "files", files) || files == 0) {
    return std::nullopt;
  }
  for (std::uint64_t i = 0; i < files; ++i) {
    CachedFile file;
    if (!read_file(in, file)) return std::nullopt;
    record.files.push_back(std::move(file));
  }
  return record;
}

void write_record(const std::filesystem::path& path, const CacheRecord& record) {
  std::ostringstream out;
  out << kMagic << "\nurl " << record.url << "\nfiles " << record.files.size() << '\n';
  for (const CachedFile& file : record.files) {
    out << "location " << file.location << "\nsize " << file.validators.size << "\netag "
        << file.validators.etag << "\nlast-modified " << file.validators.last_modified
        << "\nranges " << file.held.ranges().size() << '\n';
    for (const auto& [begin, end] : file.held.ranges()) out << begin << ' ' << end << '\n';
  }
  // Beside the record and renamed over it (io::NewFile): a reader finds the old record or the
  // new one, and two processes recording the same mirror never write into one file.
  io::NewFile file(path);
  const std::string text = out.str();
  file.write_all(std::as_bytes(std::span(text)));
  file.commit();
}

std::filesystem::path cache_folder(const std::filesystem::path& cache_dir, std::string_view url) {
  std::uint64_t hash = 14695981039346656037ULL;  // FNV-1a, stable across runs and builds
  for (const char c : url) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  char name[17];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(hash));
  return cache_dir / name;
}

}  // namespace onnxmap::remote
