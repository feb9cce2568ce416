// onnxmap synth OUT: an LLM-shaped model of any size, for testing loaders.

#include <iostream>
#include <map>
#include <string>

#include "format.hpp"
#include "onnxmap/onnxmap.hpp"
#include "onnxmap/synth.hpp"
#include "verbs.hpp"

namespace onnxmap::cli {

namespace {

struct SynthArgs {
  std::string out;
  std::string dtype = "float16";
  SynthOptions options;
};

int run_synth(SynthArgs args) {
  static const std::map<std::string, DataType> kTypes{{"float16", DataType::float16},
                                                      {"bfloat16", DataType::bfloat16},
                                                      {"float32", DataType::float32},
                                                      {"int4", DataType::int4}};
  args.options.dtype = kTypes.at(args.dtype);
  const SynthResult r = synth(args.out, args.options);
  std::cout << args.out << ": " << r.tensors << " tensors, " << r.nodes << " nodes, "
            << r.parameters << " parameters, " << human_bytes(r.model_bytes);
  if (args.options.external_data) std::cout << " + " << human_bytes(r.data_bytes) << " of data";
  std::cout << (args.options.sparse ? " (payloads are holes)" : "") << '\n';
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
  sub->add_flag("--external-data", args->options.external_data,
                "put payloads in OUT.data, 4096-aligned");
  sub->add_flag("--sparse", args->options.sparse, "leave payloads as file holes");
  add_verb(sub, [args] { return run_synth(*args); });
}

}  // namespace onnxmap::cli
