// check: opens the model leniently (payload problems collected, not thrown), then runs every
// check in turn. An open that fails anyway is a structure problem: nothing past it can be trusted.

#include "onnxmap/check.hpp"

#include "check/checks.hpp"
#include "onnxmap/front_end_scope.hpp"

namespace onnxmap {

std::string_view to_string(ProblemKind kind) noexcept {
  switch (kind) {
    case ProblemKind::structure: return "structure";
    case ProblemKind::payload: return "payload";
    case ProblemKind::external_data: return "external_data";
    case ProblemKind::overlapping_data: return "overlapping_data";
    case ProblemKind::duplicate_name: return "duplicate_name";
    case ProblemKind::ssa: return "ssa";
    case ProblemKind::undefined_input: return "undefined_input";
    case ProblemKind::out_of_order: return "out_of_order";
    case ProblemKind::undefined_output: return "undefined_output";
    case ProblemKind::missing_opset: return "missing_opset";
    case ProblemKind::ir_version: return "ir_version";
    case ProblemKind::duplicate_function: return "duplicate_function";
    case ProblemKind::checksum: return "checksum";
  }
  return "unknown";
}

CheckReport check(const std::filesystem::path& path, const CheckOptions& options) {
  OpenOptions open = options.open;
  open.collect_payload_errors = true;
  try {
    return check(Model::open(path, open), options);
  } catch (const Error& e) {
    CheckReport report;
    detail::add_problem(report, ProblemKind::structure, e.field_path(), e.detail(), e.offset());
    return report;
  }
}

CheckReport check(const Model& model, const CheckOptions& options) {
  CheckReport report;
  report.opened = true;
  // The checks read names, nodes and attributes through the map: a model file that shrank
  // while open is an Error (io), as a lost payload is, never SIGBUS.
  const FrontEndScope checked;
  detail::check_payloads(model, report);
  detail::check_scopes(model, report);
  detail::check_ir_version(model, report);
  detail::check_safetensors(model, report);
  if (options.read_data) detail::check_data(model, options, report);
  return report;
}

}  // namespace onnxmap
