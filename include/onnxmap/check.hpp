#pragma once
// Checking a model: every problem the file has, each with its field path, not just the first.
//
//   onnxmap::CheckReport report = onnxmap::check("model.onnx");
//   for (const onnxmap::Problem& p : report.problems) std::cout << p.path << ": " << p.detail;
//
// What is checked: the structure (the index validates every byte at open; a file that cannot be
// indexed is one `structure` problem), payload sizes against dims and data type, external data
// (present, inside the model's folder, in bounds, ranges not overlapping within a file), names
// (an initializer given twice in one graph, a value assigned twice in one scope), node inputs
// that nothing defines or that are defined only by a later node, graph outputs nothing defines,
// node domains without an opset import, fields and data types newer than the declared IR
// version, and external data in safetensors files against each file's header (its format, and
// each tensor's length, element type and dims). The same name in sibling scopes (the two branches
// of an If) is not a problem.
// With `read_data`, every payload is read: typed fields are decoded, BOOL values must be 0 or 1,
// and the SHA-1 `checksum` of external data is verified.
//
// Threads: check only reads the model: any number of checks, of one model or of several, may
// run at once, beside any other reader. The progress callback is called on the checking thread.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "onnxmap/error.hpp"
#include "onnxmap/export.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/options.hpp"

namespace onnxmap {

enum class ProblemKind {
  structure,           // the file cannot be indexed (then nothing else is checked), or has no graph
  payload,             // a tensor's payload disagrees with its dims and data type, or is unreadable
  external_data,       // an external data file is missing, unsafe, or too short for its range
  overlapping_data,    // two tensors' external ranges share bytes of one file
  duplicate_name,      // an initializer or graph input name given twice in one graph
  ssa,                 // a value assigned twice in one scope (node outputs, inputs, initializers)
  undefined_input,     // a node input no graph input, initializer or node defines anywhere
  out_of_order,        // a node input defined only by a later node (or by the node itself)
  undefined_output,    // a graph or function output nothing defines
  missing_opset,       // a node domain with no opset import, or no opset import at all
  ir_version,          // a field or data type newer than the declared IR version, or none declared
  duplicate_function,  // two functions with the same (domain, name, overload)
  checksum,            // read_data: an external data checksum that does not match
};

// "undefined_input"
[[nodiscard]] ONNXMAP_API std::string_view to_string(ProblemKind kind) noexcept;

struct Problem {
  ProblemKind kind = ProblemKind::structure;
  std::string path;                         // field path: "graph.node[3].input[1]"
  std::string detail;                       // what is wrong, for people
  std::uint64_t offset = Error::kNoOffset;  // in the model file, where known
};

struct CheckOptions {
  // How the model is opened (OpenOptions::collect_payload_errors is always set by check).
  OpenOptions open;
  // Read every payload: decode typed fields, check BOOL values, verify external checksums.
  bool read_data = false;
  // Called from the checking thread while read_data reads, with bytes done and bytes in all.
  ProgressCallback progress;
};

struct CheckReport {
  std::vector<Problem> problems;  // in the order the checks met them
  bool opened = false;            // false: one structure problem, nothing else was checked
  std::uint64_t nodes = 0;        // nodes checked, in every graph and function
  std::uint64_t tensors = 0;      // tensors checked
  std::uint64_t bytes_read = 0;   // payload bytes read (read_data)

  [[nodiscard]] bool ok() const noexcept { return problems.empty(); }
};

// Opens `path` and checks it. A model that cannot be opened is reported, not thrown; only a
// failure of the machine (out of memory) throws.
[[nodiscard]] ONNXMAP_API CheckReport check(const std::filesystem::path& path,
                                            const CheckOptions& options = {});

// Checks an opened model. Payload problems beyond what the open refused are only seen when it
// was opened with OpenOptions::collect_payload_errors.
[[nodiscard]] ONNXMAP_API CheckReport check(const Model& model, const CheckOptions& options = {});

}  // namespace onnxmap
