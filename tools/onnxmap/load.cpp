// onnxmap load MODEL: reads every selected tensor's bytes with the loader and reports tensors,
// bytes, seconds and GB/s (the load's own, LoadStats: planning and a URL's fetch included, the
// open not), and the command's CPU time: how fast this machine loads this model.

#include <sys/resource.h>

#include <array>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>

#include "format.hpp"
#include "onnxmap/onnxmap.hpp"
#include "progress_bar.hpp"
#include "remote_flags.hpp"
#include "text_file.hpp"
#include "tooling.hpp"
#include "verbs.hpp"

namespace onnxmap::cli {

namespace {

struct LoadArgs {
  std::string model;
  // "" and 0: the destination's defaults. Into host memory: read, 4 threads. Into a device:
  // DeviceLoadOptions' own (direct; 4 workers, or one per core for a warm model).
  std::string mode;
  unsigned threads = 0;
  std::string filter;
  std::string shard;  // "RANK/RANKS" or ""
  bool json = false;
  std::string device;  // "" (host memory through the loader), "host" or "cuda:N"
  std::string verify;  // a manifest: each tensor's digest checked as it lands
  RemoteOptions remote;
};

std::vector<LoadItem> plan_of(const Model& model, const LoadArgs& args) {
  PlanOptions options = PlanOptions::matching(args.filter);
  if (!args.shard.empty()) {
    char slash = 0;
    if (std::sscanf(args.shard.c_str(), "%u%c%u", &options.rank, &slash, &options.ranks) != 3 ||
        slash != '/') {
      throw CLI::ValidationError("--shard", "expected RANK/RANKS, e.g. 3/8");
    }
    if (options.ranks == 0 || options.rank >= options.ranks) {
      throw CLI::ValidationError("--shard", args.shard + ": RANK must be below RANKS");
    }
  }
  return plan(model, options);
}

// CPU seconds this process has spent, every thread: user, system.
struct CpuSeconds {
  double user = 0;
  double system = 0;

  static CpuSeconds now() {
    rusage usage{};
    (void)getrusage(RUSAGE_SELF, &usage);
    const auto of = [](const timeval& t) {
      return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
    };
    return {of(usage.ru_utime), of(usage.ru_stime)};
  }
};

// A JSON object of statistics, one member a field (fields_of).
nlohmann::json stats_json(const std::vector<StatsField>& fields) {
  nlohmann::json out;
  for (const StatsField& field : fields) {
    std::visit([&](const auto& v) { out[std::string(field.name)] = v; }, field.value);
  }
  return out;
}

// The load's bytes per second, for both destinations.
double gb_per_s(const LoadStats& stats) {
  return stats.seconds > 0 ? static_cast<double>(stats.bytes) / stats.seconds / 1e9 : 0.0;
}

nlohmann::json load_json(const LoadArgs& args, const LoadStats& stats, const CpuSeconds& cpu) {
  nlohmann::json out = stats_json(fields_of(stats));
  out["gb_per_s"] = gb_per_s(stats);
  out["cpu_user_seconds"] = cpu.user;
  out["cpu_system_seconds"] = cpu.system;
  out["mode"] = args.mode;
  out["threads"] = args.threads;
  return out;
}

// ", 2 retries after 1.5 s of waiting" where a URL's fetch retried (both destinations' lines).
void print_retries(const nlohmann::json& out) {
  const auto retries = out["retries"].get<std::uint64_t>();
  if (retries == 0) return;
  std::array<char, 32> waited{};
  std::snprintf(waited.data(), waited.size(), "%.1f",
                static_cast<double>(out["retry_wait_ms"].get<std::uint64_t>()) / 1000.0);
  std::cout << ", " << retries << (retries == 1 ? " retry" : " retries") << " after "
            << waited.data() << " s of waiting";
}

// "4 threads", "1 thread".
std::string threads_text(const nlohmann::json& out) {
  const auto threads = out["threads"].get<unsigned>();
  return std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

// ", 12 verified (2 not: slices without digests, or typed fields)" after a load with --verify.
void print_verified(const nlohmann::json& out) {
  if (!out.contains("verified")) return;
  std::cout << ", " << out["verified"].get<std::uint64_t>() << " verified";
  const auto left = out["not_verified"].get<std::uint64_t>();
  if (left > 0) std::cout << " (" << left << " not: slices without digests, or typed fields)";
}

// "3 tensors, 1.2 GiB in 0.812 s, 1.59 GB/s (mode read, 4 threads; CPU 0.02 s user, 0.91 s
// system)", from the JSON alone.
void print_load_text(const nlohmann::json& out) {
  std::array<char, 64> rate{};
  std::snprintf(rate.data(), rate.size(), "%.3f s, %.2f GB/s", out["seconds"].get<double>(),
                out["gb_per_s"].get<double>());
  const std::string mode = out["mode"].get<std::string>();
  std::cout << out["tensors"].get<std::uint64_t>() << " tensors, "
            << human_bytes(out["bytes"].get<std::uint64_t>()) << " in " << rate.data() << " (mode "
            << mode << ", " << threads_text(out);
  if (mode == "direct") {
    std::cout << (out["direct"].get<bool>() ? ", O_DIRECT" : ", O_DIRECT refused: buffered");
  }
  print_retries(out);
  print_verified(out);
  std::array<char, 64> cpu{};
  std::snprintf(cpu.data(), cpu.size(), "; CPU %.2f s user, %.2f s system",
                out["cpu_user_seconds"].get<double>(), out["cpu_system_seconds"].get<double>());
  std::cout << cpu.data() << ")\n";
}

// Every tensor into device memory (one allocation of onnxmap's, each tensor 256-aligned in it):
// tensors, bytes, seconds, GB/s, CPU seconds and the path the bytes took.
nlohmann::json device_load_json(const LoadArgs& args, const std::vector<LoadItem>& plan,
                                const LandedVerifier* verifier) {
  constexpr std::uint64_t kAlign = 256;
  std::vector<std::uint64_t> at;
  std::uint64_t total = 0;
  for (const LoadItem& item : plan) {
    at.push_back(total);
    total += (item.byte_size() + kAlign - 1) / kAlign * kAlign;
  }
  const DeviceBuffer memory(args.device, total);
  std::vector<void*> destinations;
  for (const std::uint64_t offset : at) {
    destinations.push_back(static_cast<std::byte*>(memory.data()) + offset);
  }
  DeviceLoadOptions options;
  options.device = args.device;
  if (!args.mode.empty()) options.load.mode = *parse_load_mode(args.mode);
  options.load.threads = args.threads;
  ProgressBar bar("load");
  options.load.progress = [&](std::uint64_t done, std::uint64_t all) { bar.update(done, all); };
  if (verifier != nullptr) options.on_piece = verifier->on_piece;
  const DeviceLoadStats s = load_to_device(plan, destinations, options);
  nlohmann::json out = stats_json(fields_of(s));
  out["gb_per_s"] = gb_per_s(s);
  out["device"] = args.device;
  out["mode"] = std::string(to_string(options.load.mode));
  return out;
}

// "3 tensors, 1.2 GiB in 0.081 s, 15.90 GB/s to cuda:0 (path registered, mode direct, 4
// threads; CPU 0.05 s)", from the JSON alone.
void print_device_text(const nlohmann::json& out) {
  std::array<char, 128> line{};
  std::snprintf(line.data(), line.size(), "%.3f s, %.2f GB/s to %s", out["seconds"].get<double>(),
                out["gb_per_s"].get<double>(), out["device"].get<std::string>().c_str());
  std::cout << out["tensors"].get<std::uint64_t>() << " tensors, "
            << human_bytes(out["bytes"].get<std::uint64_t>()) << " in " << line.data() << " (path "
            << out["path"].get<std::string>() << ", mode " << out["mode"].get<std::string>() << ", "
            << threads_text(out);
  print_retries(out);
  print_verified(out);
  std::snprintf(line.data(), line.size(), "; CPU %.2f s)\n", out["cpu_seconds"].get<double>());
  std::cout << line.data();
}

// What a load with --verify checked: "verified" (tensors) and "not_verified" (row slices,
// typed fields).
void add_verified(nlohmann::json& out, const std::optional<LandedVerifier>& verifier) {
  if (!verifier) return;
  out["verified"] = verifier->verified->load();
  out["not_verified"] = verifier->not_verifiable;
}

int run_load(const LoadArgs& args) {
  const CpuSeconds cpu_before = CpuSeconds::now();
  OpenOptions open_options;
  open_options.remote = args.remote;
  const Model model = Model::open(args.model, open_options);
  const std::vector<LoadItem> plan = plan_of(model, args);
  std::optional<LandedVerifier> verifier;
  if (!args.verify.empty()) {
    verifier =
        verify_as_loaded(parse_manifest(read_text(args.verify, "the manifest"), args.verify), plan);
  }
  if (!args.device.empty()) {
    nlohmann::json out = device_load_json(args, plan, verifier ? &*verifier : nullptr);
    add_verified(out, verifier);
    if (args.json) {
      print_json(std::cout, out);
    } else {
      print_device_text(out);
    }
    return kExitOk;
  }
  LoadArgs into_memory = args;
  if (into_memory.mode.empty()) into_memory.mode = "read";
  if (into_memory.threads == 0) into_memory.threads = 4;
  LoadOptions options;
  options.mode = *parse_load_mode(into_memory.mode);
  options.threads = into_memory.threads;
  ProgressBar bar("load");
  options.progress = [&](std::uint64_t done, std::uint64_t total) { bar.update(done, total); };
  // Every page of every tensor is read once, so map-mode bytes are really in this process; a
  // file that shrank while open is then an error, not SIGBUS (touch_pages is guarded).
  if (verifier) options.on_landed = verifier->on_landed;
  std::byte sink{};
  const LoadStats stats = load(
      plan, [&](const LoadedTensor& t) { sink ^= tooling::touch_pages(t.bytes); }, options);
  [[maybe_unused]] volatile std::byte keep = sink;
  const CpuSeconds cpu_after = CpuSeconds::now();
  const CpuSeconds cpu{cpu_after.user - cpu_before.user, cpu_after.system - cpu_before.system};
  nlohmann::json out = load_json(into_memory, stats, cpu);
  add_verified(out, verifier);
  if (args.json) {
    print_json(std::cout, out);
  } else {
    print_load_text(out);
  }
  return kExitOk;
}

}  // namespace

void add_load_verb(CLI::App& app) {
  auto args = std::make_shared<LoadArgs>();
  CLI::App* sub =
      app.add_subcommand("load", "Read every tensor's bytes and report how fast (open included)");
  sub->add_option("MODEL", args->model, "the .onnx file or its URL")->required();
  add_remote_flags(sub, args->remote);
  sub->add_option("--mode,--load-mode", args->mode,
                  "read (default): pread into buffers; direct (default with --device): O_DIRECT "
                  "into buffers, bypassing the page cache; map: fill the page cache and touch "
                  "the map")
      ->check(CLI::IsMember({"map", "read", "direct"}));
  sub->add_option("--threads", args->threads,
                  "reading threads (default 4; with --device, for a model mostly in the page "
                  "cache: one per core, at most " +
                      std::to_string(kMaxDeviceThreads) + ")")
      ->check(CLI::Range(1U, 256U));
  sub->add_option("--filter", args->filter, "only tensors whose name matches this glob");
  sub->add_option("--shard", args->shard,
                  "RANK/RANKS: only that rank's rows of each weight (tensor parallelism)");
  sub->add_option("--device", args->device,
                  "cuda:N or host: copy every tensor into that device's memory (CUDA loaded at "
                  "run time) and report GB/s, CPU seconds and the path taken");
  sub->add_option("--verify", args->verify,
                  "a manifest of onnxmap hash: each tensor's digest checked as it lands; a "
                  "mismatch stops the load (exit 1)");
  sub->add_flag("--json", args->json, "an object with tensors, bytes, seconds, gb_per_s, ...");
  add_verb(sub, [args] { return run_load(*args); });
}

}  // namespace onnxmap::cli
