#pragma once
// The one exception type of onnxmap. Every failure a caller can see, from a bad varint to an unsafe
// external-data path, arrives as an onnxmap::Error naming what went wrong, where in the message
// tree (field path) and where in the file (byte offset).
//
// Threads: an Error is not changed after it is made: copies may be read on any thread.

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

#include "onnxmap/export.hpp"

namespace onnxmap {

enum class ErrorKind {
  truncated,         // input ends inside a value
  bad_varint,        // a varint longer than 10 bytes
  bad_wire_type,     // wire type 6 or 7, or an end-group tag with no start
  bad_field_number,  // field number 0 or above 2^29-1
  out_of_bounds,     // a length or offset that points past the end of its container
  depth_limit,       // messages or groups nested deeper than the configured limit
  limit_exceeded,    // a configured size or count limit
  bad_tensor,        // tensor metadata and payload disagree
  unsafe_path,       // an external-data location outside the model's folder
  not_found,         // a tensor or field the caller asked for does not exist
  io,                // the operating system refused (open, map, read, write)
  invalid_argument,  // the caller passed something unusable
  http,              // a URL's server failed or answered wrongly (status, range, size, redirect)
  cancelled,         // the caller asked a running operation to stop (LoadOptions::cancelled)
  device,            // no GPU runtime, a GPU call that failed, too little device memory
};

// The kind as its enumerator is spelled ("bad_tensor"): in every message, and Python's
// Error.kind.
[[nodiscard]] ONNXMAP_API std::string_view to_string(ErrorKind kind) noexcept;

class ONNXMAP_API Error : public std::runtime_error {
 public:
  static constexpr std::uint64_t kNoOffset = std::numeric_limits<std::uint64_t>::max();

  Error(ErrorKind kind, std::string detail, std::uint64_t offset = kNoOffset,
        std::string field_path = {}, std::string file = {});

  [[nodiscard]] ErrorKind kind() const noexcept { return kind_; }
  [[nodiscard]] const std::string& detail() const noexcept { return detail_; }
  [[nodiscard]] std::uint64_t offset() const noexcept { return offset_; }
  [[nodiscard]] const std::string& field_path() const noexcept { return field_path_; }
  [[nodiscard]] const std::string& file() const noexcept { return file_; }

  // The same error seen from further out: `file` names the file, `outer_path` is prepended to the
  // field path ("graph" + "node[3].name" -> "graph.node[3].name").
  [[nodiscard]] Error in_context(std::string_view file, std::string_view outer_path) const;

 private:
  ErrorKind kind_;
  std::string detail_;
  std::uint64_t offset_;
  std::string field_path_;
  std::string file_;
};

}  // namespace onnxmap
