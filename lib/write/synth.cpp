// The synthetic LLM writer: metadata built in memory (it is small), payloads streamed or left as
// holes, every length planned up front so the file is written in one pass.

#include "onnxmap/synth.hpp"

#include <array>
#include <fstream>
#include <string>
#include <vector>

#include "index/tensor_table.hpp"
#include "onnxmap/wire.hpp"

namespace onnxmap {

namespace {

using Bytes = std::vector<std::byte>;
constexpr std::uint64_t kAlign = 4096;

struct TensorSpec {
  std::string name;
  std::vector<std::int64_t> dims;
  std::uint64_t bytes = 0;
  std::uint64_t data_offset = 0;  // in OUT.data, when external
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
  std::uint64_t offset = 0;
  for (TensorSpec& s : specs) {
    std::uint64_t count = 1;
    for (const std::int64_t d : s.dims) count *= static_cast<std::uint64_t>(d);
    s.bytes = detail::packed_byte_size(static_cast<std::int32_t>(o.dtype), count).value_or(0);
    s.data_offset = offset;
    offset = (offset + s.bytes + kAlign - 1) / kAlign * kAlign;
  }
  return specs;
}

Bytes node(std::string_view op, std::vector<std::string> inputs, std::string output) {
  using NP = schema::NodeProto;
  wire::Writer n;
  for (const auto& in : inputs) n.field_string(NP::kInput, in);
  n.field_string(NP::kOutput, output);
  n.field_string(NP::kName, output);
  n.field_string(NP::kOpType, op);
  return n.take();
}

// A plausible decoder: the ops are real, the math is schematic (norms as Mul, SiLU as x*sigmoid).
std::vector<Bytes> decoder_nodes(const SynthOptions& o) {
  std::vector<Bytes> nodes;
  nodes.push_back(node("Gather", {"model.embed_tokens.weight", "input_ids"}, "h0"));
  std::string h = "h0";
  for (std::int64_t l = 0; l < o.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const auto t = [&](const char* what) { return p + what; };
    nodes.push_back(node("Mul", {h, t("input_layernorm.weight")}, t("norm1")));
    for (const char* proj : {"q", "k", "v"}) {
      nodes.push_back(
          node("MatMul", {t("norm1"), t("self_attn.") + proj + "_proj.weight"}, t(proj)));
    }
    nodes.push_back(node("Transpose", {t("k")}, t("kt")));
    nodes.push_back(node("MatMul", {t("q"), t("kt")}, t("scores")));
    nodes.push_back(node("Softmax", {t("scores")}, t("probs")));
    nodes.push_back(node("MatMul", {t("probs"), t("v")}, t("attn")));
    nodes.push_back(node("MatMul", {t("attn"), t("self_attn.o_proj.weight")}, t("o")));
    nodes.push_back(node("Add", {h, t("o")}, t("res1")));
    nodes.push_back(node("Mul", {t("res1"), t("post_attention_layernorm.weight")}, t("norm2")));
    nodes.push_back(node("MatMul", {t("norm2"), t("mlp.gate_proj.weight")}, t("gate")));
    nodes.push_back(node("Sigmoid", {t("gate")}, t("sig")));
    nodes.push_back(node("Mul", {t("gate"), t("sig")}, t("silu")));
    nodes.push_back(node("MatMul", {t("norm2"), t("mlp.up_proj.weight")}, t("up")));
    nodes.push_back(node("Mul", {t("silu"), t("up")}, t("act")));
    nodes.push_back(node("MatMul", {t("act"), t("mlp.down_proj.weight")}, t("down")));
    nodes.push_back(node("Add", {t("res1"), t("down")}, t("out")));
    h = t("out");
  }
  nodes.push_back(node("Mul", {h, "model.norm.weight"}, "final_norm"));
  nodes.push_back(node("MatMul", {"final_norm", "lm_head.weight"}, "logits"));
  return nodes;
}

Bytes value_info(std::string_view name, DataType type, std::vector<std::string> dims) {
  wire::Writer dims_writer;
  for (const auto& d : dims) {
    wire::Writer dim;
    dim.field_string(schema::TensorShapeProtoDimension::kDimParam, d);
    dims_writer.field_bytes(schema::TensorShapeProto::kDim, dim.bytes());
  }
  wire::Writer tensor;
  tensor.field_int32(schema::TypeProtoTensor::kElemType, static_cast<std::int32_t>(type));
  tensor.field_bytes(schema::TypeProtoTensor::kShape, dims_writer.bytes());
  wire::Writer type_proto;
  type_proto.field_bytes(schema::TypeProto::kTensorType, tensor.bytes());
  wire::Writer v;
  v.field_string(schema::ValueInfoProto::kName, name);
  v.field_bytes(schema::ValueInfoProto::kType, type_proto.bytes());
  return v.take();
}

// A TensorProto up to its payload: inline it ends with raw_data's tag and length (the payload
// follows); external it is complete.
Bytes tensor_head(const TensorSpec& s, const SynthOptions& o, const std::string& data_location) {
  using TP = schema::TensorProto;
  wire::Writer t;
  for (const std::int64_t d : s.dims) t.field_int64(TP::kDims, d);
  t.field_int32(TP::kDataType, static_cast<std::int32_t>(o.dtype));
  t.field_string(TP::kName, s.name);
  if (o.external_data) {
    const auto entry = [&](std::string_view key, const std::string& value) {
      wire::Writer e;
      e.field_string(schema::StringStringEntryProto::kKey, key);
      e.field_string(schema::StringStringEntryProto::kValue, value);
      t.field_bytes(TP::kExternalData, e.bytes());
    };
    entry("location", data_location);
    entry("offset", std::to_string(s.data_offset));
    entry("length", std::to_string(s.bytes));
    t.field_int32(TP::kDataLocation, static_cast<std::int32_t>(DataLocation::external));
  } else {
    t.field_len_header(TP::kRawData, s.bytes);
  }
  return t.take();
}

void write_bytes(std::ofstream& out, std::span<const std::byte> bytes) {
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// The payload of tensor `k`: the pattern, or a hole (a seek past it; the file is sized at the end).
void write_payload(std::ofstream& out, std::uint64_t k, std::uint64_t size, bool sparse) {
  if (sparse) {
    out.seekp(static_cast<std::streamoff>(size), std::ios::cur);
    return;
  }
  static thread_local std::vector<char> chunk(std::size_t{1} << 20U);
  for (std::uint64_t done = 0; done < size;) {
    const std::uint64_t n = std::min<std::uint64_t>(chunk.size(), size - done);
    for (std::uint64_t i = 0; i < n; ++i) {
      chunk[i] = static_cast<char>(synth_pattern_byte(k, done + i));
    }
    out.write(chunk.data(), static_cast<std::streamsize>(n));
    done += n;
  }
}

// Opens `path`.partial for writing; finish() checks, sizes (for trailing holes) and renames it.
class PartialFile {
 public:
  explicit PartialFile(std::filesystem::path path)
      : path_(std::move(path)), partial_(path_.string() + ".partial") {
    out_.open(partial_, std::ios::binary | std::ios::trunc);
    if (!out_) throw Error(ErrorKind::io, "cannot create", Error::kNoOffset, {}, partial_.string());
  }
  ~PartialFile() {
    if (!done_) std::filesystem::remove(partial_);
  }
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;

  std::ofstream& stream() { return out_; }
  std::uint64_t finish(std::uint64_t size) {
    out_.close();
    if (!out_) throw Error(ErrorKind::io, "write failed", Error::kNoOffset, {}, partial_.string());
    std::filesystem::resize_file(partial_, size);
    std::filesystem::rename(partial_, path_);
    done_ = true;
    return size;
  }

 private:
  std::filesystem::path path_;
  std::filesystem::path partial_;
  std::ofstream out_;
  bool done_ = false;
};

}  // namespace

SynthResult synth(const std::filesystem::path& out, const SynthOptions& options) {
  if (options.layers < 0 || options.hidden <= 0 || options.vocab <= 0 || options.ffn < 0 ||
      !traits(options.dtype) || options.dtype == DataType::string) {
    throw Error(ErrorKind::invalid_argument, "synth: sizes must be positive and dtype numeric");
  }
  const auto specs = tensor_specs(options);
  const auto nodes = decoder_nodes(options);
  const std::string data_location = out.filename().string() + ".data";
  SynthResult result;
  result.tensors = specs.size();
  result.nodes = nodes.size();

  // Plan the graph's length bottom-up: every message's size is known before anything is written.
  std::vector<Bytes> heads;
  std::uint64_t graph_length = 0;
  for (const Bytes& n : nodes) graph_length += 1 + wire::varint_size(n.size()) + n.size();
  for (const TensorSpec& s : specs) {
    heads.push_back(tensor_head(s, options, data_location));
    const std::uint64_t length = heads.back().size() + (options.external_data ? 0 : s.bytes);
    graph_length += 1 + wire::varint_size(length) + length;
    std::uint64_t count = 1;
    for (const std::int64_t d : s.dims) count *= static_cast<std::uint64_t>(d);
    result.parameters += count;
  }
  wire::Writer tail;  // the graph's fields after the initializers
  tail.field_string(schema::GraphProto::kName, "synth_llm");
  tail.field_bytes(schema::GraphProto::kInput,
                   value_info("input_ids", DataType::int64, {"batch", "sequence"}));
  tail.field_bytes(schema::GraphProto::kOutput,
                   value_info("logits", DataType::float32, {"batch", "sequence", "vocab"}));
  graph_length += tail.bytes().size();

  wire::Writer head;
  const bool sub_byte = traits(options.dtype)->bits < 8;
  head.field_int64(schema::ModelProto::kIrVersion, sub_byte ? 10 : 8);
  head.field_string(schema::ModelProto::kProducerName, "onnxmap synth");
  wire::Writer opset;
  opset.field_string(schema::OperatorSetIdProto::kDomain, "");
  opset.field_int64(schema::OperatorSetIdProto::kVersion, sub_byte ? 21 : 17);
  head.field_bytes(schema::ModelProto::kOpsetImport, opset.bytes());
  head.field_len_header(schema::ModelProto::kGraph, graph_length);

  PartialFile model(out);
  write_bytes(model.stream(), head.bytes());
  for (const Bytes& n : nodes) {
    wire::Writer w;
    w.field_len_header(schema::GraphProto::kNode, n.size());
    write_bytes(model.stream(), w.bytes());
    write_bytes(model.stream(), n);
  }
  for (std::size_t k = 0; k < specs.size(); ++k) {
    wire::Writer w;
    w.field_len_header(schema::GraphProto::kInitializer,
                       heads[k].size() + (options.external_data ? 0 : specs[k].bytes));
    write_bytes(model.stream(), w.bytes());
    write_bytes(model.stream(), heads[k]);
    if (!options.external_data) write_payload(model.stream(), k, specs[k].bytes, options.sparse);
  }
  write_bytes(model.stream(), tail.bytes());
  const std::uint64_t model_size = head.bytes().size() + graph_length;

  if (options.external_data) {
    PartialFile data(out.string() + ".data");
    for (std::size_t k = 0; k < specs.size(); ++k) {
      data.stream().seekp(static_cast<std::streamoff>(specs[k].data_offset));
      write_payload(data.stream(), k, specs[k].bytes, options.sparse);
    }
    result.data_bytes = data.finish(specs.back().data_offset + specs.back().bytes);
  }
  result.model_bytes = model.finish(model_size);
  return result;
}

}  // namespace onnxmap
