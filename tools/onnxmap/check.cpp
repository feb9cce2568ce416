// onnxmap check MODEL: every problem of a model, one line each (`FILE: PATH: what`), or JSON.
// Exit 0 when clean, 1 when anything was found.

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "format.hpp"
#include "load_mode_option.hpp"
#include "onnxmap/onnxmap.hpp"
#include "progress_bar.hpp"
#include "remote_flags.hpp"
#include "verbs.hpp"

namespace onnxmap::cli {

namespace {

struct CheckArgs {
  std::string model;
  bool json = false;
  bool data = false;
  LoadModeOption load;
  RemoteOptions remote;
};

nlohmann::json report_json(const std::string& model, const CheckReport& report) {
  nlohmann::json problems = nlohmann::json::array();
  for (const Problem& p : report.problems) {
    nlohmann::json entry{
        {"kind", std::string(to_string(p.kind))}, {"path", p.path}, {"detail", p.detail}};
    if (p.offset != Error::kNoOffset) entry["offset"] = p.offset;
    problems.push_back(std::move(entry));
  }
  return {{"model", model},
          {"ok", report.ok()},
          {"opened", report.opened},
          {"nodes", report.nodes},
          {"tensors", report.tensors},
          {"bytes_read", report.bytes_read},
          {"problems", std::move(problems)}};
}

void print_check_text(const std::string& model, const CheckReport& report, bool data) {
  for (const Problem& p : report.problems) {
    std::cout << model << ": " << (p.path.empty() ? "" : p.path + ": ") << p.detail << " ("
              << to_string(p.kind);
    if (p.offset != Error::kNoOffset) std::cout << " at byte " << p.offset;
    std::cout << ")\n";
  }
  if (report.ok()) {
    std::cout << model << ": ok (" << report.nodes << (report.nodes == 1 ? " node, " : " nodes, ")
              << report.tensors << (report.tensors == 1 ? " tensor" : " tensors")
              << (data ? ", " + human_bytes(report.bytes_read) + " of data read" : "") << ")\n";
  } else {
    std::cerr << "onnxmap: " << model << ": " << report.problems.size()
              << (report.problems.size() == 1 ? " problem" : " problems") << '\n';
  }
}

int run_check(const CheckArgs& args) {
  CheckOptions options;
  options.open.mode = args.load.mode();
  options.open.remote = args.remote;
  options.read_data = args.data;
  CheckReport report;
  {
    ProgressBar bar("checking data");
    options.progress = [&bar](std::uint64_t done, std::uint64_t total) { bar.update(done, total); };
    report = check(args.model, options);
  }
  if (args.json) {
    print_json(std::cout, report_json(shown_url(args.model), report));
  } else {
    print_check_text(shown_url(args.model), report, args.data);
  }
  return report.ok() ? kExitOk : kExitInvalid;
}

}  // namespace

void add_check_verb(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* sub = app.add_subcommand(
      "check", "Report every problem of a model with its field path (exit 1 if any)");
  sub->add_option("MODEL", args->model, "the .onnx file")->required();
  add_remote_flags(sub, args->remote);
  sub->add_flag("--json", args->json, "the report as one JSON object");
  sub->add_flag("--data", args->data,
                "also read every payload: BOOL values, SHA-1 checksums of external data");
  add_load_mode_option(sub, args->load);
  add_verb(sub, [args] { return run_check(*args); });
}

}  // namespace onnxmap::cli
