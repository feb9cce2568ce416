// The synthetic LLM writer: a ModelBuilder whose payloads are generated while the file is written
// (or left as holes), saved like any other model.

#include "onnxmap/synth.hpp"

#include <string>
#include <vector>

#include "onnxmap/builder.hpp"
#include "onnxmap/error.hpp"
#include "onnxmap/save.hpp"

namespace onnxmap {

namespace {

constexpr std::uint64_t kAlign = 4096;

struct TensorSpec {
  std::string name;
  std::vector<std::int64_t> dims;
};

std::vector<TensorSpec> tensor_specs(const SynthOptions& o) {
  const std::int64_t ffn = o.ffn > 0 ? o.ffn : 4 * o.hidden;
  const std::int64_t kv = o.kv_dim > 0 ? o.kv_dim : (o.hidden >= 1024 ? o.hidden / 8 : o.hidden);
  std::vector<TensorSpec> specs{{"model.embed_tokens.weight", {o.vocab, o.hidden}}};
  for (std::int64_t l = 0; l < o.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    specs.push_back({p + "input_layernorm.weight", {o.hidden}});
    specs.push_back({p + "self_attn.q_proj.weight", {o.hidden, o.hidden}});
    specs.push_back({p + "self_attn.k_proj.weight", {kv, o.hidden}});
    specs.push_back({p + "self_attn.v_proj.weight", {kv, o.hidden}});
    specs.push_back({p + "self_attn.o_proj.weight", {o.hidden, o.hidden}});
    specs.push_back({p + "post_attention_layernorm.weight", {o.hidden}});
    specs.push_back({p + "mlp.gate_proj.weight", {ffn, o.hidden}});
    specs.push_back({p + "mlp.up_proj.weight", {ffn, o.hidden}});
    specs.push_back({p + "mlp.down_proj.weight", {o.hidden, ffn}});
  }
  specs.push_back({"model.norm.weight", {o.hidden}});
  specs.push_back({"lm_head.weight", {o.vocab, o.hidden}});
  return specs;
}

// A plausible decoder: the ops are real, the math is schematic (norms as Mul, SiLU as x*sigmoid).
void decoder_nodes(const SynthOptions& o, GraphBuilder& g) {
  const auto node = [&g](const char* op, std::vector<std::string> inputs, std::string output) {
    g.node(op, std::move(inputs), {output}).name(output);
  };
  node("Gather", {"model.embed_tokens.weight", "input_ids"}, "h0");
  std::string h = "h0";
  for (std::int64_t l = 0; l < o.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const auto t = [&](const char* what) { return p + what; };
    node("Mul", {h, t("input_layernorm.weight")}, t("norm1"));
    for (const char* proj : {"q", "k", "v"}) {
      node("MatMul", {t("norm1"), t("self_attn.") + proj + "_proj.weight"}, t(proj));
    }
    node("Transpose", {t("k")}, t("kt"));
    node("MatMul", {t("q"), t("kt")}, t("scores"));
    node("Softmax", {t("scores")}, t("probs"));
    node("MatMul", {t("probs"), t("v")}, t("attn"));
    node("MatMul", {t("attn"), t("self_attn.o_proj.weight")}, t("o"));
    node("Add", {h, t("o")}, t("res1"));
    node("Mul", {t("res1"), t("post_attention_layernorm.weight")}, t("norm2"));
    node("MatMul", {t("norm2"), t("mlp.gate_proj.weight")}, t("gate"));
    node("Sigmoid", {t("gate")}, t("sig"));
    node("Mul", {t("gate"), t("sig")}, t("silu"));
    node("MatMul", {t("norm2"), t("mlp.up_proj.weight")}, t("up"));
    node("Mul", {t("silu"), t("up")}, t("act"));
    node("MatMul", {t("act"), t("mlp.down_proj.weight")}, t("down"));
    node("Add", {t("res1"), t("down")}, t("out"));
    h = t("out");
  }
  node("Mul", {h, "model.norm.weight"}, "final_norm");
  node("MatMul", {"final_norm", "lm_head.weight"}, "logits");
}

}  // namespace

SynthResult synth(const std::filesystem::path& out, const SynthOptions& options) {
  if (options.layers < 0 || options.hidden <= 0 || options.vocab <= 0 || options.ffn < 0 ||
      !traits(options.dtype) || options.dtype == DataType::string) {
    throw Error(ErrorKind::invalid_argument, "synth: sizes must be positive and dtype numeric");
  }
  if (options.ir_version < 0) {
    throw Error(ErrorKind::invalid_argument, "synth: the IR version must be positive");
  }
  for (const auto& [domain, version] : options.opsets) {
    if (version <= 0) {
      throw Error(ErrorKind::invalid_argument,
                  "synth: opset '" + domain + "' needs a positive version");
    }
  }
  const bool sub_byte = traits(options.dtype)->bits < 8;
  ModelBuilder model;
  model.ir_version(options.ir_version != 0 ? options.ir_version
                   : sub_byte              ? 10
                                           : 8)
      .producer("onnxmap synth");
  if (options.opsets.empty()) model.opset("", sub_byte ? 21 : 17);
  for (const auto& [domain, version] : options.opsets) model.opset(domain, version);
  GraphBuilder& g = model.graph("synth_llm");
  decoder_nodes(options, g);
  SynthResult result;
  result.nodes = g.nodes.size();
  const auto specs = tensor_specs(options);
  for (std::size_t k = 0; k < specs.size(); ++k) {
    const TensorSpec& s = specs[k];
    std::uint64_t count = 1;
    for (const std::int64_t d : s.dims) count *= static_cast<std::uint64_t>(d);
    result.parameters += count;
    if (options.sparse) {
      g.initializer(TensorBuilder::zeros(s.name, options.dtype, s.dims));
      continue;
    }
    g.initializer(TensorBuilder(s.name, options.dtype, s.dims,
                                [k](std::uint64_t offset, std::span<std::byte> bytes) {
                                  for (std::size_t i = 0; i < bytes.size(); ++i) {
                                    bytes[i] = std::byte{synth_pattern_byte(k, offset + i)};
                                  }
                                }));
  }
  result.tensors = specs.size();
  g.input("input_ids", TypeSpec::tensor(DataType::int64, {{"batch", "sequence"}}));
  g.output("logits", TypeSpec::tensor(DataType::float32, {{"batch", "sequence", "vocab"}}));

  SaveOptions save_options;
  save_options.external_data =
      options.external_data ? ExternalData::external : ExternalData::inline_data;
  save_options.size_threshold = 0;
  save_options.align = kAlign;
  const SaveResult saved = save(model, out, save_options);
  result.model_bytes = saved.model_bytes;
  result.data_bytes = saved.data_bytes;
  return result;
}

}  // namespace onnxmap
