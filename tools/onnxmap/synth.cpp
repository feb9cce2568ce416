// onnxmap synth OUT: an LLM-shaped model of any size, for testing loaders.

#include <charconv>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "format.hpp"
#include "onnxmap/onnxmap.hpp"
#include "onnxmap/synth.hpp"
#include "verbs.hpp"

namespace onnxmap::cli {

namespace {

struct SynthArgs {
  std::string out;
  std::string dtype = "float16";
  std::vector<std::string> opsets;  // DOMAIN=VERSION
  bool json = false;
  SynthOptions options;
};

// "OUT: N tensors, N nodes, N parameters, SIZE [+ SIZE of data] [(payloads are holes)]".
void print_synth_text(const nlohmann::json& out) {
  std::cout << out["output"].get<std::string>() << ": " << out["tensors"].get<std::uint64_t>()
            << " tensors, " << out["nodes"].get<std::uint64_t>() << " nodes, "
            << out["parameters"].get<std::uint64_t>() << " parameters, "
            << human_bytes(out["model_bytes"].get<std::uint64_t>());
  if (out["external_data"].get<bool>()) {
    std::cout << " + " << human_bytes(out["data_bytes"].get<std::uint64_t>()) << " of data";
  }
  std::cout << (out["sparse"].get<bool>() ? " (payloads are holes)" : "") << '\n';
}

// "DOMAIN=VERSION" (ai.onnx or an empty domain: the default one) as an opset import.
std::pair<std::string, std::int64_t> parse_opset(const std::string& text) {
  const std::size_t equals = text.rfind('=');
  std::int64_t version = 0;
  const char* end = text.data() + text.size();
  // No '=': no version to parse (text.data() + npos + 1 would point outside the string).
  const bool parsed = equals != std::string::npos && [&] {
    const auto [ptr, ec] = std::from_chars(text.data() + equals + 1, end, version);
    return ec == std::errc{} && ptr == end;
  }();
  if (!parsed || version <= 0) {
    throw CLI::ValidationError("--opset",
                               "takes DOMAIN=VERSION with a positive version, not '" + text + "'");
  }
  std::string domain = text.substr(0, equals);
  if (domain == "ai.onnx") domain.clear();
  return {std::move(domain), version};
}

int run_synth(SynthArgs args) {
  static const std::map<std::string, DataType> kTypes{{"float16", DataType::float16},
                                                      {"bfloat16", DataType::bfloat16},
                                                      {"float32", DataType::float32},
                                                      {"int4", DataType::int4}};
  args.options.dtype = kTypes.at(args.dtype);
  for (const std::string& opset : args.opsets) args.options.opsets.push_back(parse_opset(opset));
  const SynthResult r = synth(args.out, args.options);
  const nlohmann::json out{{"output", args.out},
                           {"tensors", r.tensors},
                           {"nodes", r.nodes},
                           {"parameters", r.parameters},
                           {"model_bytes", r.model_bytes},
                           {"data_bytes", r.data_bytes},
                           {"external_data", args.options.external_data},
                           {"sparse", args.options.sparse}};
  if (args.json) {
    print_json(std::cout, out);
  } else {
    print_synth_text(out);
  }
  return kExitOk;
}

}  // namespace

void add_synth_verb(CLI::App& app) {
  auto args = std::make_shared<SynthArgs>();
  CLI::App* sub =
      app.add_subcommand("synth",
                         "Write an LLM-shaped model of any size (payload byte i of tensor k is "
                         "(i*131 + k*17 + i/4096) mod 256, or a hole with --sparse)");
  sub->add_option("OUT", args->out, "the .onnx file to write")->required();
  sub->add_option("--layers", args->options.layers, "decoder layers")
      ->required()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--hidden", args->options.hidden, "hidden size")
      ->required()
      ->check(CLI::PositiveNumber);
  sub->add_option("--ffn", args->options.ffn, "MLP width (default 4 x hidden)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--vocab", args->options.vocab, "vocabulary size (default 1000)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--kv-dim", args->options.kv_dim, "key/value width (default hidden/8 from 1024)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--dtype", args->dtype, "float16 (default), bfloat16, float32 or int4")
      ->check(CLI::IsMember({"float16", "bfloat16", "float32", "int4"}));
  sub->add_option("--ir-version", args->options.ir_version,
                  "IR version (default 8, or 10 for int4)")
      ->check(CLI::PositiveNumber);
  sub->add_option(
      "--opset", args->opsets,
      "an opset import DOMAIN=VERSION, repeatable (default ai.onnx=17, or 21 for int4)");
  sub->add_flag("--external-data", args->options.external_data,
                "put payloads in OUT.data, 4096-aligned");
  sub->add_flag("--sparse", args->options.sparse, "leave payloads as file holes");
  sub->add_flag("--finite", args->options.finite,
                "fix each float's exponent byte so that every weight is finite and small (a "
                "model ONNX Runtime runs without NaNs)");
  sub->add_flag("--json", args->json, "report what was written as one JSON object");
  add_verb(sub, [args] { return run_synth(*args); });
}

}  // namespace onnxmap::cli
