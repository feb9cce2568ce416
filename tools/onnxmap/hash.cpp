// onnxmap hash MODEL [-o MANIFEST]: the digests of a model's files and of each stored tensor, as
// a manifest (docs/verify.md); onnxmap verify MODEL MANIFEST: the model against one, each
// mismatch a line naming the tensor or file and both digests (exit 1 if any).

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "format.hpp"
#include "load_mode_option.hpp"
#include "onnxmap/onnxmap.hpp"
#include "remote_flags.hpp"
#include "text_file.hpp"
#include "tooling.hpp"
#include "verbs.hpp"

namespace onnxmap::cli {

namespace {

struct HashArgs {
  std::string model, manifest, out, algorithm = "sha256";
  bool json = false;
  unsigned threads = 0;
  std::vector<unsigned> ranks;
  LoadModeOption load;
  RemoteOptions remote;
};

Model open_model(const HashArgs& args, bool collect_payload_errors) {
  OpenOptions options;
  options.mode = args.load.mode();
  options.remote = args.remote;
  // verify reports a damaged tensor (a data file cut short) as a mismatch, not a failed open.
  options.collect_payload_errors = collect_payload_errors;
  return Model::open(args.model, options);
}

int run_hash(const HashArgs& args) {
  HashOptions options;
  options.algorithm = *parse_digest_algorithm(args.algorithm);
  options.threads = args.threads;
  options.ranks = args.ranks;
  const std::string manifest = to_json(hash_model(open_model(args, false), options));
  if (args.out.empty()) {
    std::cout << manifest;
    return kExitOk;
  }
  const std::span<const std::byte> bytes = std::as_bytes(std::span(manifest));
  tooling::save_bytes(args.out, std::span(&bytes, 1));
  return kExitOk;
}

int run_verify(const HashArgs& args) {
  const Manifest manifest = parse_manifest(read_text(args.manifest, "the manifest"), args.manifest);
  HashOptions options;
  options.threads = args.threads;
  const VerifyReport report = verify_model(open_model(args, true), manifest, options);
  const std::string model = shown_url(args.model);
  if (args.json) {
    nlohmann::json mismatches = nlohmann::json::array();
    for (const Mismatch& m : report.mismatches) {
      mismatches.push_back({{"what", m.what},
                            {"name", m.name},
                            {"file", m.file},
                            {"expected", m.expected},
                            {"actual", m.actual},
                            {"detail", m.detail}});
    }
    print_json(std::cout, {{"model", model},
                           {"ok", report.ok()},
                           {"algorithm", to_string(manifest.algorithm)},
                           {"files", report.files},
                           {"tensors", report.tensors},
                           {"bytes", report.bytes},
                           {"mismatches", std::move(mismatches)}});
  } else {
    for (const Mismatch& m : report.mismatches) {
      std::cout << model << ": " << m.what << " '" << m.name << "'"
                << (m.what == "tensor" ? " in '" + m.file + "'" : "") << ": " << m.detail << "\n";
    }
    if (report.ok()) {
      std::cout << model << ": ok (" << report.files << " files, " << report.tensors << " tensors, "
                << human_bytes(report.bytes) << ", " << to_string(manifest.algorithm) << ")\n";
    } else {
      std::cerr << "onnxmap: " << model << ": " << report.mismatches.size()
                << (report.mismatches.size() == 1 ? " mismatch" : " mismatches") << '\n';
    }
  }
  return report.ok() ? kExitOk : kExitInvalid;
}

void add_common(CLI::App* sub, HashArgs& args) {
  sub->add_option("MODEL", args.model, "the .onnx file (or its URL)")->required();
  add_remote_flags(sub, args.remote);
  sub->add_option("--threads", args.threads, "files hashed at once (default: one a core)");
  add_load_mode_option(sub, args.load);
}

}  // namespace

void add_hash_verb(CLI::App& app) {
  auto args = std::make_shared<HashArgs>();
  CLI::App* sub = app.add_subcommand(
      "hash", "Digests of the model's files and of each tensor's stored bytes, as a manifest");
  add_common(sub, *args);
  sub->add_option("-o,--output", args->out, "write the manifest (JSON) here, not to stdout");
  sub->add_option("--algorithm", args->algorithm, "sha256 (default) or xxh3-128")
      ->check(CLI::IsMember({"sha256", "xxh3-128"}));
  sub->add_option("--ranks", args->ranks,
                  "R,...: also the digest of the rows each of R ranks reads (load --shard RANK/R), "
                  "so a tensor-parallel rank verifies its own rows")
      ->delimiter(',')
      ->check(CLI::Range(2U, 4096U));
  add_verb(sub, [args] { return run_hash(*args); });
}

void add_verify_verb(CLI::App& app) {
  auto args = std::make_shared<HashArgs>();
  CLI::App* sub = app.add_subcommand(
      "verify", "Check the model against a manifest of digests (exit 1 on any mismatch)");
  add_common(sub, *args);
  sub->add_option("MANIFEST", args->manifest,
                  "onnxmap hash's manifest, or a model-signing tool's signed payload")
      ->required();
  sub->add_flag("--json", args->json, "the report as one JSON object");
  add_verb(sub, [args] { return run_verify(*args); });
}

}  // namespace onnxmap::cli
