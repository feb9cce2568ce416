#pragma once
// Hand-built models for the check tests: graphs of named nodes, subgraphs in attributes,
// functions, with only the fields a check reads.

#include <string>
#include <utility>
#include <vector>

#include "model_builder.hpp"
#include "onnxmap/check.hpp"
#include "onnxmap/model.hpp"
#include "schema/fields.hpp"

namespace onnxmap::test {

using Names = std::vector<std::string>;
using NP = schema::NodeProto;
using GP = schema::GraphProto;
using AP = schema::AttributeProto;

// A NodeProto; `more` adds fields (attributes, overload, ...).
inline Body node(Names inputs, Names outputs, std::string op = "Identity", std::string domain = "",
                 Body more = {}) {
  return [=](wire::Writer& n) {
    for (const auto& i : inputs) n.field_string(NP::kInput, i);
    for (const auto& o : outputs) n.field_string(NP::kOutput, o);
    n.field_string(NP::kOpType, op);
    if (!domain.empty()) n.field_string(NP::kDomain, domain);
    if (more) more(n);
  };
}

inline Body value_info(std::string name) {
  return [=](wire::Writer& v) { v.field_string(schema::ValueInfoProto::kName, name); };
}

// A GraphProto: inputs, nodes, outputs, initializers (FLOAT[1] raw tensors), `more` fields.
inline Body graph(Names inputs, std::vector<Body> nodes, Names outputs, Names initializers = {},
                  Body more = {}) {
  return [=](wire::Writer& g) {
    g.field_string(GP::kName, "g");
    for (const auto& n : nodes) sub(g, GP::kNode, n);
    for (const auto& i : initializers) {
      sub(g, GP::kInitializer, raw_tensor(i, DataType::float32, {1}, float_bytes({1.0F})));
    }
    for (const auto& i : inputs) sub(g, GP::kInput, value_info(i));
    for (const auto& o : outputs) sub(g, GP::kOutput, value_info(o));
    if (more) more(g);
  };
}

// An attribute of type GRAPH holding `body`.
inline Body graph_attribute(std::string name, Body body) {
  return [=](wire::Writer& n) {
    sub(n, NP::kAttribute, [&](wire::Writer& a) {
      a.field_string(AP::kName, name);
      a.field_int32(AP::kType, static_cast<std::int32_t>(AttributeType::graph));
      sub(a, AP::kG, body);
    });
  };
}

using Opsets = std::vector<std::pair<std::string, std::int64_t>>;

inline Body opset(const std::string& domain, std::int64_t version) {
  return [=](wire::Writer& o) {
    if (!domain.empty()) o.field_string(schema::OperatorSetIdProto::kDomain, domain);
    o.field_int64(schema::OperatorSetIdProto::kVersion, version);
  };
}

inline std::vector<std::byte> model(Body graph_body, std::int64_t ir = 8,
                                    Opsets opsets = {{"", 17}}, Body more = {}) {
  return message([&](wire::Writer& m) {
    using MP = schema::ModelProto;
    if (ir > 0) m.field_int64(MP::kIrVersion, ir);
    for (const auto& [domain, version] : opsets) sub(m, MP::kOpsetImport, opset(domain, version));
    sub(m, MP::kGraph, graph_body);
    if (more) more(m);
  });
}

inline CheckReport check_bytes(const std::vector<std::byte>& bytes,
                               const std::filesystem::path& folder = {}) {
  OpenOptions options;
  options.collect_payload_errors = true;
  return check(Model::from_bytes(bytes, options, schema::MessageKind::ModelProto, folder));
}

// "kind path" of each problem, for compact expectations.
inline std::vector<std::string> findings(const CheckReport& report) {
  std::vector<std::string> out;
  for (const Problem& p : report.problems)
    out.push_back(std::string(to_string(p.kind)) + " " + p.path);
  return out;
}

}  // namespace onnxmap::test
