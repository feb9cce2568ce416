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

std::int64_t kv_width(const SynthOptions& o) {
  return o.kv_dim > 0 ? o.kv_dim : (o.hidden >= 1024 ? o.hidden / 8 : o.hidden);
}

std::vector<TensorSpec> tensor_specs(const SynthOptions& o) {
  const std::int64_t ffn = o.ffn > 0 ? o.ffn : 4 * o.hidden;
  const std::int64_t kv = kv_width(o);
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

// The element types the decoder computes in (Gemm, Softmax and Sigmoid take them); a model of any
// other type reads each weight through a Cast to FLOAT.
bool computes_in(DataType type) {
  return type == DataType::float16 || type == DataType::float32 || type == DataType::bfloat16 ||
         type == DataType::float64;
}

// A plausible decoder over a sequence of token ids: the ops are real, the math is schematic (norms
// as Mul, SiLU as x*sigmoid). Weights are stored [out, in], as checkpoints hold them, and applied
// by Gemm with transB; with grouped-query attention the keys and values are repeated (Concat) to
// the query's width, as a decoder repeats its key/value heads.
class DecoderNodes {
 public:
  DecoderNodes(const SynthOptions& o, GraphBuilder& g) : o_(o), g_(g) {}

  void add() {
    std::string h = node("Gather", {weight("model.embed_tokens.weight"), "input_ids"}, "h0");
    for (std::int64_t l = 0; l < o_.layers; ++l)
      h = layer("model.layers." + std::to_string(l) + ".", h);
    const std::string final_norm = node("Mul", {h, weight("model.norm.weight")}, "final_norm");
    linear(final_norm, "lm_head.weight", "logits");
  }

 private:
  std::string node(const char* op, std::vector<std::string> inputs, std::string output) {
    g_.node(op, std::move(inputs), {output}).name(output);
    return output;
  }
  // The weight `value` in the type the decoder computes in.
  std::string weight(const std::string& value) {
    if (computes_in(o_.dtype)) return value;
    g_.node("Cast", {value}, {value + ".float"})
        .name(value + ".float")
        .attribute("to", static_cast<std::int64_t>(DataType::float32));
    return value + ".float";
  }
  std::string linear(const std::string& x, const std::string& w, std::string output) {
    g_.node("Gemm", {x, weight(w)}, {output}).name(output).attribute("transB", std::int64_t{1});
    return output;
  }
  std::string repeated_to_hidden(const std::string& value) {
    const std::int64_t kv = kv_width(o_);
    if (kv == o_.hidden) return value;
    g_.node("Concat", std::vector<std::string>(o_.hidden / kv, value), {value + "_rep"})
        .name(value + "_rep")
        .attribute("axis", std::int64_t{-1});
    return value + "_rep";
  }

  std::string layer(const std::string& p, const std::string& h) {
    const auto t = [&](const char* what) { return p + what; };
    const std::string norm1 = node("Mul", {h, weight(t("input_layernorm.weight"))}, t("norm1"));
    const std::string q = linear(norm1, t("self_attn.q_proj.weight"), t("q"));
    const std::string k = repeated_to_hidden(linear(norm1, t("self_attn.k_proj.weight"), t("k")));
    const std::string v = repeated_to_hidden(linear(norm1, t("self_attn.v_proj.weight"), t("v")));
    node("Transpose", {k}, t("kt"));
    node("MatMul", {q, t("kt")}, t("scores"));
    node("Softmax", {t("scores")}, t("probs"));
    node("MatMul", {t("probs"), v}, t("attn"));
    linear(t("attn"), t("self_attn.o_proj.weight"), t("o"));
    node("Add", {h, t("o")}, t("res1"));
    node("Mul", {t("res1"), weight(t("post_attention_layernorm.weight"))}, t("norm2"));
    linear(t("norm2"), t("mlp.gate_proj.weight"), t("gate"));
    node("Sigmoid", {t("gate")}, t("sig"));
    node("Mul", {t("gate"), t("sig")}, t("silu"));
    linear(t("norm2"), t("mlp.up_proj.weight"), t("up"));
    node("Mul", {t("silu"), t("up")}, t("act"));
    linear(t("act"), t("mlp.down_proj.weight"), t("down"));
    return node("Add", {t("res1"), t("down")}, t("out"));
  }

  const SynthOptions& o_;
  GraphBuilder& g_;
};

// The IR version and ai.onnx opset a model of `type` needs: the first that have the type (and
// Cast for it).
struct Versions {
  std::int64_t ir;
  std::int64_t opset;
};

Versions versions_for(DataType type) {
  switch (type) {
    case DataType::float8e4m3fn:
    case DataType::float8e4m3fnuz:
    case DataType::float8e5m2:
    case DataType::float8e5m2fnuz: return {9, 19};
    case DataType::uint4:
    case DataType::int4: return {10, 21};
    case DataType::float4e2m1: return {11, 23};
    case DataType::float8e8m0: return {12, 24};
    case DataType::uint2:
    case DataType::int2: return {13, 25};
    default: return {8, 17};
  }
}

// With SynthOptions::finite, the byte of each floating-point element (or complex component) that
// holds its sign and exponent is (pattern & keep) | set: the sign and some mantissa bits follow
// the pattern, the exponent is fixed well inside the finite range.
struct FiniteRule {
  std::uint32_t component = 0;  // bytes per component; 0: every pattern is finite already
  std::uint8_t keep = 0;
  std::uint8_t set = 0;
};

FiniteRule finite_rule(DataType type) {
  switch (type) {
    case DataType::float32:
    case DataType::complex64: return {4, 0x80, 0x3D};  // 2^-5 <= |x| < 2^-3
    case DataType::float64:
    case DataType::complex128: return {8, 0x80, 0x3F};  // 2^-15 <= |x| < 2
    case DataType::float16: return {2, 0x83, 0x2C};     // 2^-4 <= |x| < 2^-3
    case DataType::bfloat16: return {2, 0x80, 0x3D};    // as float32
    case DataType::float8e4m3fn:
    case DataType::float8e4m3fnuz: return {1, 0x87, 0x20};
    case DataType::float8e5m2:
    case DataType::float8e5m2fnuz: return {1, 0x83, 0x30};
    case DataType::float8e8m0: return {1, 0x0F, 0x70};
    default: return {};
  }
}

}  // namespace

SynthResult synth(const std::filesystem::path& out, const SynthOptions& options) {
  if (options.layers < 0 || options.hidden <= 0 || options.vocab <= 0 || options.ffn < 0 ||
      !traits(options.dtype) || options.dtype == DataType::string) {
    throw Error(ErrorKind::invalid_argument, "synth: sizes must be positive and dtype numeric");
  }
  if (options.hidden % kv_width(options) != 0) {
    throw Error(
        ErrorKind::invalid_argument,
        "synth: the key/value width must divide the hidden size (the attention repeats it)");
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
  const Versions needs = versions_for(options.dtype);
  ModelBuilder model;
  model.ir_version(options.ir_version != 0 ? options.ir_version : needs.ir)
      .producer("onnxmap synth");
  if (options.opsets.empty()) model.opset("", needs.opset);
  for (const auto& [domain, version] : options.opsets) model.opset(domain, version);
  GraphBuilder& g = model.graph("synth_llm");
  DecoderNodes(options, g).add();
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
    const FiniteRule rule = options.finite ? finite_rule(options.dtype) : FiniteRule{};
    g.initializer(TensorBuilder(
        s.name, options.dtype, s.dims, [k, rule](std::uint64_t offset, std::span<std::byte> bytes) {
          for (std::size_t i = 0; i < bytes.size(); ++i) {
            std::uint8_t byte = synth_pattern_byte(k, offset + i);
            if (rule.component != 0 && (offset + i) % rule.component == rule.component - 1) {
              byte = (byte & rule.keep) | rule.set;
            }
            bytes[i] = std::byte{byte};
          }
        }));
  }
  result.tensors = specs.size();
  g.input("input_ids", TypeSpec::tensor(DataType::int64, {{"sequence"}}));
  const DataType computed = computes_in(options.dtype) ? options.dtype : DataType::float32;
  g.output("logits", TypeSpec::tensor(computed, {{"sequence", options.vocab}}));

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
