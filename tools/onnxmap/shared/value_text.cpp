#include "value_text.hpp"

#include <array>
#include <charconv>
#include <cstdio>

namespace onnxmap::cli {

namespace {

constexpr std::size_t kMaxListItems = 8;     // longer lists show their first items and a count
constexpr std::size_t kMaxStringBytes = 48;  // longer strings are cut with their length shown

std::string float_text(float value) {
  std::array<char, 32> text{};
  const auto [end, ec] = std::to_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc{} ? std::string(text.data(), end) : "?";
}

// "[a, b, c]" with `item(i)` giving the text of dim i: the one spelling of a shape.
template <class Item>
std::string bracketed(std::size_t count, const Item& item) {
  std::string out = "[";
  for (std::size_t i = 0; i < count; ++i) out += (i ? ", " : "") + item(i);
  return out + "]";
}

// "[a, b, c, ... (100 values)]" with `item(i)` giving the text of element i.
template <class Item>
std::string list_text(std::size_t count, const Item& item) {
  std::string out = "[";
  for (std::size_t i = 0; i < count && i < kMaxListItems; ++i) out += (i ? ", " : "") + item(i);
  if (count > kMaxListItems) out += ", ... (" + std::to_string(count) + " values)";
  return out + "]";
}

}  // namespace

std::string dims_text(std::span<const std::int64_t> dims) {
  return bracketed(dims.size(), [&](std::size_t i) { return std::to_string(dims[i]); });
}

std::string quoted(std::string_view bytes) {
  std::string out = "\"";
  for (std::size_t i = 0; i < bytes.size() && i < kMaxStringBytes; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      std::array<char, 8> hex{};
      std::snprintf(hex.data(), hex.size(), "\\x%02x", c);
      out += hex.data();
    }
  }
  out += '"';
  if (bytes.size() > kMaxStringBytes) out += "...(" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

std::string tensor_text(const Tensor& tensor) {
  return to_string(tensor.data_type()) + dims_text(tensor.dims());
}

std::string sparse_tensor_text(const SparseTensor& tensor) {
  const auto values = tensor.values();
  const std::string type = values ? to_string(values->data_type()) : "?";
  const std::string nnz =
      values && !values->dims().empty() ? std::to_string(values->dims()[0]) : "?";
  const std::vector<std::int64_t> dims = tensor.dims();
  return "sparse " + type + dims_text(dims) + " nnz=" + nnz;
}

std::string graph_ref_text(const Graph& graph) {
  const std::size_t nodes = graph.nodes().size();
  return "<graph " + (graph.name().empty() ? std::string("(unnamed)") : std::string(graph.name())) +
         ": " + std::to_string(nodes) + (nodes == 1 ? " node>" : " nodes>");
}

std::string attribute_value_text(const Attribute& attribute) {
  if (!attribute.ref_attr_name().empty()) return "@" + std::string(attribute.ref_attr_name());
  switch (attribute.type()) {
    case AttributeType::float32: return float_text(attribute.f());
    case AttributeType::int64: return std::to_string(attribute.i());
    case AttributeType::string: return quoted(attribute.s());
    case AttributeType::tensor: {
      const auto t = attribute.t();
      return t ? tensor_text(*t) : "<no tensor>";
    }
    case AttributeType::graph: {
      const auto g = attribute.g();
      return g ? graph_ref_text(*g) : "<no graph>";
    }
    case AttributeType::sparse_tensor: {
      const auto s = attribute.sparse_tensor();
      return s ? sparse_tensor_text(*s) : "<no sparse tensor>";
    }
    case AttributeType::type_proto: {
      const auto tp = attribute.tp();
      return tp ? tp->to_string() : "<no type>";
    }
    case AttributeType::floats: {
      const auto values = attribute.floats();
      return list_text(values.size(), [&](std::size_t i) { return float_text(values[i]); });
    }
    case AttributeType::ints: {
      const auto values = attribute.ints();
      return list_text(values.size(), [&](std::size_t i) { return std::to_string(values[i]); });
    }
    case AttributeType::strings: {
      const auto values = attribute.strings();
      return list_text(values.size(), [&](std::size_t i) { return quoted(values[i]); });
    }
    case AttributeType::tensors: {
      const auto values = attribute.tensors();
      return list_text(values.size(), [&](std::size_t i) { return tensor_text(values[i]); });
    }
    case AttributeType::graphs: {
      const auto values = attribute.graphs();
      return list_text(values.size(), [&](std::size_t i) { return graph_ref_text(values[i]); });
    }
    case AttributeType::sparse_tensors: {
      const auto values = attribute.sparse_tensors();
      return list_text(values.size(), [&](std::size_t i) { return sparse_tensor_text(values[i]); });
    }
    case AttributeType::type_protos: {
      const auto values = attribute.type_protos();
      return list_text(values.size(), [&](std::size_t i) { return values[i].to_string(); });
    }
    case AttributeType::undefined: break;
  }
  return "<no type>";
}

}  // namespace onnxmap::cli
