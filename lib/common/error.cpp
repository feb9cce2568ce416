#include "onnxmap/error.hpp"

namespace onnxmap {

namespace {

// "file: path: detail (truncated at byte 42)": what a user needs to find the problem.
std::string compose(ErrorKind kind, const std::string& detail, std::uint64_t offset,
                    const std::string& path, const std::string& file) {
  std::string text;
  if (!file.empty()) text += file + ": ";
  if (!path.empty()) text += path + ": ";
  text += detail;
  text += " (";
  text += to_string(kind);
  if (offset != Error::kNoOffset) text += " at byte " + std::to_string(offset);
  text += ")";
  return text;
}

}  // namespace

std::string_view to_string(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::truncated: return "truncated";
    case ErrorKind::bad_varint: return "bad_varint";
    case ErrorKind::bad_wire_type: return "bad_wire_type";
    case ErrorKind::bad_field_number: return "bad_field_number";
    case ErrorKind::out_of_bounds: return "out_of_bounds";
    case ErrorKind::depth_limit: return "depth_limit";
    case ErrorKind::limit_exceeded: return "limit_exceeded";
    case ErrorKind::bad_tensor: return "bad_tensor";
    case ErrorKind::unsafe_path: return "unsafe_path";
    case ErrorKind::not_found: return "not_found";
    case ErrorKind::io: return "io";
    case ErrorKind::invalid_argument: return "invalid_argument";
    case ErrorKind::http: return "http";
    case ErrorKind::cancelled: return "cancelled";
    case ErrorKind::device: return "device";
  }
  return "error";
}

Error::Error(ErrorKind kind, std::string detail, std::uint64_t offset, std::string field_path,
             std::string file)
    : std::runtime_error(compose(kind, detail, offset, field_path, file)),
      kind_(kind),
      detail_(std::move(detail)),
      offset_(offset),
      field_path_(std::move(field_path)),
      file_(std::move(file)) {}

Error Error::in_context(std::string_view file, std::string_view outer_path) const {
  std::string path(outer_path);
  if (!path.empty() && !field_path_.empty() && field_path_.front() != '[') path += '.';
  path += field_path_;
  return Error(kind_, detail_, offset_, std::move(path), file.empty() ? file_ : std::string(file));
}

}  // namespace onnxmap
