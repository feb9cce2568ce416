// onnxmap convert IN OUT: re-save a model inline or with external data, re-split and re-align
// its data files. Messages that do not change are copied byte for byte; payloads are copied by the
// kernel, so a 300 GB model converts at disk speed in bounded memory.

#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "format.hpp"
#include "load_mode_option.hpp"
#include "onnxmap/onnxmap.hpp"
#include "progress_bar.hpp"
#include "remote_flags.hpp"
#include "text_file.hpp"
#include "verbs.hpp"

namespace onnxmap::cli {

namespace {

struct ConvertArgs {
  std::string in, out;
  std::string location;
  CLI::Option* external = nullptr;
  bool inline_data = false;
  bool json = false;
  LoadModeOption load;
  RemoteOptions remote;
  std::string size_threshold = "1024", max_file_size = "0", align = "4096";
  std::string data_format = "raw";
  std::string weights_from, weights_names;
  bool no_content_match = false;
  SaveOptions options;
};

// The JSON object of --weights-names: initializer name -> the checkpoint's name.
std::map<std::string, std::string, std::less<>> read_names(const std::string& path) {
  const auto fail = [&](const std::string& why) {
    return Error(ErrorKind::invalid_argument, "name mapping: " + why, Error::kNoOffset, {}, path);
  };
  const auto json = nlohmann::json::parse(read_text(path, "the name mapping"), nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    throw fail("not a JSON object of initializer names to the checkpoint's names");
  }
  std::map<std::string, std::string, std::less<>> names;
  for (const auto& [onnx_name, value] : json.items()) {
    if (!value.is_string()) throw fail("the name given for '" + onnx_name + "' is not a string");
    names.emplace(onnx_name, value.get<std::string>());
  }
  return names;
}

nlohmann::json count_json(const TensorCount& count) {
  return {{"tensors", count.tensors}, {"bytes", count.bytes}};
}

nlohmann::json shared_json(const SharedWeights& shared) {
  return {{"by_name", count_json(shared.by_name)},
          {"by_content", count_json(shared.by_content)},
          {"transposed", count_json(shared.transposed)},
          {"transposed_kept", count_json(shared.transposed_kept)},
          {"own", count_json(shared.own)}};
}

// "from the checkpoint: 30 tensors, 1.1 MiB (...); 12 of the model's own, 20.0 MiB", and a line
// on the transposed copies kept.
void print_shared_text(const nlohmann::json& shared) {
  const auto count = [&](const char* key) { return shared[key]["tensors"].get<std::uint64_t>(); };
  const auto bytes = [&](const char* key) { return shared[key]["bytes"].get<std::uint64_t>(); };
  const std::uint64_t total = count("by_name") + count("by_content") + count("transposed");
  std::cout << "from the checkpoint: " << total << (total == 1 ? " tensor, " : " tensors, ")
            << human_bytes(bytes("by_name") + bytes("by_content") + bytes("transposed")) << " ("
            << count("by_name") << " by name, " << count("by_content") << " by content, "
            << count("transposed") << " through a Transpose); " << count("own")
            << " of the model's own, " << human_bytes(bytes("own")) << "\n";
  if (count("transposed_kept") > 0) {
    std::cout << count("transposed_kept") << " of the model's own ("
              << human_bytes(bytes("transposed_kept"))
              << ") are transposed copies of the checkpoint's tensors: --share-transposed "
                 "shares them\n";
  }
}

// "4096", "64K", "2G": binary units, as sizes of files are usually given.
std::optional<std::uint64_t> parse_size(const std::string& text) {
  std::size_t used = 0;
  std::uint64_t value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const std::string unit = text.substr(used);
  int shift = -1;
  if (unit.empty() || unit == "B") shift = 0;
  if (unit == "K" || unit == "KiB") shift = 10;
  if (unit == "M" || unit == "MiB") shift = 20;
  if (unit == "G" || unit == "GiB") shift = 30;
  if (unit == "T" || unit == "TiB") shift = 40;
  if (text.front() == '-' || shift < 0 || (value >> (63 - shift)) != 0) return std::nullopt;
  return value << static_cast<unsigned>(shift);
}

const CLI::Validator kSize(
    [](std::string& text) {
      return parse_size(text) ? std::string() : "'" + text + "' is not a size (like 4096, 64K, 2G)";
    },
    "SIZE");

// "OUT: 1.2 KiB + 2 data files (...); N tensors external, ...", from the JSON alone; a weights
// file (no model written): "OUT: N tensors in 1 safetensors file (18.0 MiB)".
void print_convert_text(const nlohmann::json& out) {
  const auto& files = out["data_files"];
  if (out["model_bytes"].get<std::uint64_t>() == 0) {
    std::cout << out["output"].get<std::string>() << ": "
              << out["external_tensors"].get<std::uint64_t>() << " tensors in " << files.size()
              << " file" << (files.size() > 1 ? "s" : "") << " ("
              << human_bytes(out["data_bytes"].get<std::uint64_t>()) << ", first "
              << files.front().get<std::string>() << ")\n";
    return;
  }
  std::cout << out["output"].get<std::string>() << ": "
            << human_bytes(out["model_bytes"].get<std::uint64_t>());
  if (!files.empty()) {
    std::cout << " + " << files.size() << " data file" << (files.size() > 1 ? "s" : "") << " ("
              << human_bytes(out["data_bytes"].get<std::uint64_t>()) << ", first "
              << files.front().get<std::string>() << ")";
  }
  std::cout << "; " << out["external_tensors"].get<std::uint64_t>() << " tensors external, "
            << out["reencoded_tensors"].get<std::uint64_t>() << " re-encoded, "
            << out["copied_messages"].get<std::uint64_t>() << " messages copied verbatim\n";
  if (out.contains("shared")) print_shared_text(out["shared"]);
}

int run_convert(ConvertArgs& args) {
  SaveOptions& options = args.options;
  options.size_threshold = *parse_size(args.size_threshold);
  options.max_external_file_size = *parse_size(args.max_file_size);
  options.align = *parse_size(args.align);
  OpenOptions open_options;
  open_options.mode = args.load.mode();
  open_options.remote = args.remote;
  const Model model = Model::open(args.in, open_options);
  // Without --external-data or --inline, the data stays where the input keeps it.
  options.data_format =
      args.data_format == "safetensors" ? DataFormat::safetensors : DataFormat::raw;
  // Without --external-data or --inline, the data stays where the input keeps it (safetensors:
  // external).
  options.external_data = args.external->count() > 0 ? ExternalData::external
                          : args.inline_data         ? ExternalData::inline_data
                                                     : ExternalData::keep;
  options.location = args.location;
  options.weights_from.source = args.weights_from;
  options.weights_from.match_content = !args.no_content_match;
  if (!args.weights_names.empty()) options.weights_from.names = read_names(args.weights_names);

  ProgressBar bar("converting");
  options.progress = [&bar](std::uint64_t done, std::uint64_t total) { bar.update(done, total); };
  const SaveResult r = save(model, args.out, options);
  options.progress = nullptr;

  nlohmann::json out{{"output", args.out},
                     {"model_bytes", r.model_bytes},
                     {"data_files", nlohmann::json::array()},
                     {"data_bytes", r.data_bytes},
                     {"external_tensors", r.external_tensors},
                     {"reencoded_tensors", r.reencoded_tensors},
                     {"copied_messages", r.copied_messages}};
  for (const auto& file : r.data_files) out["data_files"].push_back(file.string());
  if (!args.weights_from.empty()) out["shared"] = shared_json(r.shared);
  if (args.json) {
    print_json(std::cout, out);
  } else {
    print_convert_text(out);
  }
  return kExitOk;
}

}  // namespace

void add_convert_verb(CLI::App& app) {
  auto args = std::make_shared<ConvertArgs>();
  CLI::App* sub = app.add_subcommand(
      "convert",
      "Save IN as OUT, inline or with external data; unchanged messages are copied verbatim");
  sub->add_option("IN", args->in, "the model to read (a file or a URL)")->required();
  add_remote_flags(sub, args->remote);
  sub->add_option("OUT", args->out,
                  "the .onnx file to write (never IN itself), or a .safetensors file: the "
                  "weights alone")
      ->required();
  args->external =
      sub->add_option("--external-data", args->location,
                      "tensors to a data file, LOCATION relative to OUT's folder (default "
                      "OUT's name + .data)")
          ->expected(0, 1);
  auto* inline_flag =
      sub->add_flag("--inline", args->inline_data, "every tensor inline in OUT (raw_data)");
  inline_flag->excludes(args->external);
  sub->add_option("--size-threshold", args->size_threshold,
                  "tensors smaller than this stay inline (default 1024)")
      ->check(kSize);
  sub->add_option("--max-file-size,--shard-size", args->max_file_size,
                  "split data into LOCATION.00001, .00002, ... of at most this size (safetensors: "
                  "shards model-00001-of-0000N.safetensors and their index)")
      ->check(kSize);
  sub->add_option("--data-format", args->data_format,
                  "external data files as raw payloads (default) or safetensors files (LOCATION "
                  "default model.safetensors; data inline in IN goes external)")
      ->check(CLI::IsMember({"raw", "safetensors"}));
  sub->add_option("--align", args->align,
                  "external payload offsets are multiples of this (default 4096)")
      ->check(kSize);
  auto* weights = sub->add_option(
      "--weights-from", args->weights_from,
      "point each initializer found in these safetensors files (a file, an index or a folder, in "
      "OUT's folder or below) into them, writing none of their bytes; the rest go to LOCATION "
      "(or inline, with --inline)");
  sub->add_option("--weights-names", args->weights_names,
                  "a JSON object of initializer names to the checkpoint's, where they differ")
      ->needs(weights);
  sub->add_flag("--compare-all-bytes", args->options.weights_from.compare_all_bytes,
                "compare every byte of an initializer found by name (default: 16 places)")
      ->needs(weights);
  sub->add_flag("--no-content-match", args->no_content_match,
                "find initializers by name only, not by content")
      ->needs(weights);
  sub->add_flag("--share-transposed", args->options.weights_from.share_transposed,
                "replace a transposed copy of a checkpoint tensor by that tensor and a Transpose "
                "node")
      ->needs(weights);
  add_load_mode_option(sub, args->load);
  sub->add_flag("--json", args->json, "report what was written as one JSON object");
  sub->add_flag("--one-file-per-tensor", args->options.one_file_per_tensor,
                "one data file per tensor, named after it, in LOCATION's folder");
  sub->add_flag("--convert-attributes", args->options.convert_attribute,
                "tensors held in attributes (Constant nodes) go external too");
  sub->add_flag("--durable", args->options.durable, "fsync every file before renaming it");
  sub->add_flag("--checksum", args->options.checksum,
                "give each external tensor ONNX's checksum key: the SHA-1 of its data file (the "
                "payloads are read twice)");
  add_verb(sub, [args] { return run_convert(*args); });
}

}  // namespace onnxmap::cli
