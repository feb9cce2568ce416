// onnxmap diff A B: what differs between two models: metadata, opsets, the main graph's inputs
// and outputs, its nodes (matched by name, then renamed ones by op type and edges), and every
// tensor by lookup name (only in one, data type or dims changed, values compared with
// onnxmap::compare_plans). Exit 0 when equal, 1 when different, 2 on error, as diff(1).

#include <algorithm>
#include <array>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "format.hpp"
#include "onnxmap/onnxmap.hpp"
#include "remote_flags.hpp"
#include "shared/tensor_order.hpp"
#include "shared/value_text.hpp"
#include "tooling.hpp"
#include "verbs.hpp"

namespace onnxmap::cli {

namespace {

struct DiffArgs {
  std::string a;
  std::string b;
  double tolerance = 0;
  bool json = false;
  RemoteOptions remote;
};

// One difference: what (a field, a node, a tensor), and its value in A and in B ("" = absent).
class Differences {
 public:
  void add(const std::string& what, const std::string& in_a, const std::string& in_b) {
    if (in_a != in_b) list_.push_back({{"what", what}, {"a", in_a}, {"b", in_b}});
  }
  [[nodiscard]] const nlohmann::json& list() const { return list_; }

 private:
  nlohmann::json list_ = nlohmann::json::array();
};

using Texts = std::map<std::string, std::string>;

// Every key of `a` and `b` whose text differs, named `prefix` + key.
void add_texts(Differences& out, const std::string& prefix, const Texts& a, const Texts& b) {
  Texts keys = a;
  keys.insert(b.begin(), b.end());
  for (const auto& [key, unused] : keys) {
    const auto in_a = a.find(key);
    const auto in_b = b.find(key);
    out.add(prefix + key, in_a == a.end() ? "" : in_a->second, in_b == b.end() ? "" : in_b->second);
  }
}

Texts metadata(const Model& m) {
  Texts out{{"ir_version", std::to_string(m.ir_version())},
            {"producer_name", std::string(m.producer_name())},
            {"producer_version", std::string(m.producer_version())},
            {"domain", std::string(m.domain())},
            {"model_version", m.model_version().to_string()},
            {"doc_string", first_line(m.doc_string())}};
  for (const OperatorSetId& o : m.opset_imports()) {
    out["opset " + std::string(domain_name(o.domain))] = std::to_string(o.version);
  }
  for (const StringStringEntry& e : m.metadata_props()) {
    out["metadata " + std::string(e.key)] = std::string(e.value);
  }
  return out;
}

Texts edges(const Model& m) {
  Texts out;
  if (!m.graph()) return out;
  for (const ValueInfo v : m.graph()->inputs())
    out["input " + std::string(v.name())] = v.type().to_string();
  for (const ValueInfo v : m.graph()->outputs())
    out["output " + std::string(v.name())] = v.type().to_string();
  return out;
}

// A node as `graph` shows it, "y = Op[domain](a, b)", and its attributes "{alpha=0.5, ...}":
// the first alone is what a renamed node is recognised by.
struct NodeText {
  std::string signature;
  std::string attributes;
};

std::string joined(const Names& names) {
  std::string out;
  for (const std::string_view name : names) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

NodeText node_text(const Node& n) {
  const std::string domain = n.domain().empty() ? "" : "[" + std::string(n.domain()) + "]";
  std::string attributes;
  for (const Attribute a : n.attributes()) {
    attributes +=
        (attributes.empty() ? "{" : ", ") + std::string(a.name()) + "=" + attribute_value_text(a);
  }
  return {joined(n.outputs()) + " = " + std::string(n.op_type()) + domain + "(" +
              joined(n.inputs()) + ")",
          attributes.empty() ? "" : attributes + "}"};
}

// Nodes of the main graph by name; an unnamed node by its position ("#3").
std::map<std::string, NodeText> nodes(const Model& m) {
  std::map<std::string, NodeText> out;
  if (!m.graph()) return out;
  std::size_t i = 0;
  for (const Node n : m.graph()->nodes()) {
    const std::string key = n.name().empty() ? "#" + std::to_string(i) : std::string(n.name());
    out.emplace(key, node_text(n));
    ++i;
  }
  return out;
}

void add_nodes(Differences& out, const Model& a, const Model& b) {
  auto in_a = nodes(a);
  auto in_b = nodes(b);
  // A node only in A whose op and edges are those of a node only in B was renamed: the nodes
  // only in B by their op and edges, so that a re-export that renamed every node is one lookup
  // a node, not a search.
  std::multimap<std::string, std::string> only_in_b;  // signature -> name
  for (const auto& [name, text] : in_b) {
    if (!in_a.contains(name)) only_in_b.emplace(text.signature, name);
  }
  for (auto it = in_a.begin(); it != in_a.end();) {
    const auto renamed =
        in_b.contains(it->first) ? only_in_b.end() : only_in_b.find(it->second.signature);
    if (renamed == only_in_b.end()) {
      ++it;
      continue;
    }
    const auto now = in_b.find(renamed->second);
    out.add("node " + it->first + ": name", it->first, now->first);
    out.add("node " + it->first + ": attributes", it->second.attributes, now->second.attributes);
    in_b.erase(now);
    only_in_b.erase(renamed);
    it = in_a.erase(it);
  }
  Texts a_text;
  Texts b_text;
  const auto whole = [](const NodeText& t) {
    return t.attributes.empty() ? t.signature : t.signature + " " + t.attributes;
  };
  for (const auto& [k, v] : in_a) a_text[k] = whole(v);
  for (const auto& [k, v] : in_b) b_text[k] = whole(v);
  add_texts(out, "node ", a_text, b_text);
}

// Tensors by lookup name (the first of a repeated name).
std::map<std::string, Tensor> tensors(const Model& m) {
  std::map<std::string, Tensor> out;
  for (std::size_t i = 0; i < m.tensor_count(); ++i) {
    const Tensor t = m.tensor_at(i);
    out.emplace(std::string(t.lookup_name()), t);
  }
  return out;
}

// How two tensors of a type without statistics (STRING, the complex types) differ, in words;
// "" when equal.
std::string other_difference(const Tensor& ta, const Tensor& tb) {
  if (ta.data_type() == DataType::string) {
    return ta.strings() == tb.strings() ? "" : "the strings differ";
  }
  return tooling::equal_bytes(ta.data().bytes(), tb.data().bytes()) ? "" : "the bytes differ";
}

using Pairs = std::vector<std::pair<const std::string*, const Tensor*>>;

// How the values of each pair (in A's file order) differ from B's tensor of that name, in words
// ("" when equal): compared on the loader's threads (compare_plans), A read front to back in
// large requests, the same bytes of B read alongside, and the pages of both dropped from this
// process once compared, so that comparing two files of any size reads each once and keeps
// little of them.
Texts values_differences(const Pairs& pairs, const std::map<std::string, Tensor>& in_b,
                         double tolerance) {
  Texts out;
  std::vector<LoadItem> a_items;
  std::vector<LoadItem> b_items;
  std::vector<const std::string*> names;
  for (const auto& [name, ta] : pairs) {
    const Tensor& tb = in_b.at(*name);
    if (!has_stats(ta->data_type())) {
      out[*name] = other_difference(*ta, tb);
      continue;
    }
    a_items.push_back({*ta});
    b_items.push_back({tb});
    names.push_back(name);
  }
  LoadOptions options;
  options.mode = LoadMode::map;
  options.threads = std::max(4U, std::thread::hardware_concurrency());
  const std::vector<ValuesDiff> diffs = compare_plans(a_items, b_items, tolerance, options);
  for (std::size_t i = 0; i < diffs.size(); ++i) {
    const ValuesDiff& d = diffs[i];
    std::array<char, 128> line{};
    std::snprintf(
        line.data(), line.size(), "%llu of %llu values differ, max abs %.6g, max rel %.6g",
        static_cast<unsigned long long>(d.differing),
        static_cast<unsigned long long>(a_items[i].tensor.element_count()), d.max_abs, d.max_rel);
    out[*names[i]] = d.differing == 0 ? "" : line.data();
  }
  return out;
}

void add_tensors(Differences& out, const Model& a, const Model& b, double tolerance) {
  const auto in_a = tensors(a);
  const auto in_b = tensors(b);
  Texts a_shapes;
  Texts b_shapes;
  for (const auto& [name, t] : in_a) a_shapes[name] = tensor_text(t);
  for (const auto& [name, t] : in_b) b_shapes[name] = tensor_text(t);
  add_texts(out, "tensor ", a_shapes, b_shapes);
  // The pairs to compare, in A's file order (the model file, then each data file), so that the
  // files are read front to back; the differences are reported in name order.
  Pairs pairs;
  for (const auto& [name, ta] : in_a) {
    const auto found = in_b.find(name);
    if (found != in_b.end() && a_shapes[name] == b_shapes[name]) pairs.emplace_back(&name, &ta);
  }
  std::stable_sort(pairs.begin(), pairs.end(), [](const auto& x, const auto& y) {
    return file_order(*x.second) < file_order(*y.second);
  });
  for (const auto& [name, text] : values_differences(pairs, in_b, tolerance)) {
    out.add("tensor " + name + ": values", "", text);
  }
}

void print_text(const nlohmann::json& list) {
  for (const nlohmann::json& d : list) {
    const std::string a = d["a"].get<std::string>();
    const std::string b = d["b"].get<std::string>();
    std::cout << d["what"].get<std::string>() << ": ";
    if (a.empty()) {
      std::cout << (d["what"].get<std::string>().ends_with(": values") ? b : "only in B: " + b);
    } else if (b.empty()) {
      std::cout << "only in A: " << a;
    } else {
      std::cout << a << " -> " << b;
    }
    std::cout << '\n';
  }
}

int run_diff(const DiffArgs& args) {
  try {
    OpenOptions options;
    options.remote = args.remote;
    Differences out;
    // Compared before anything is printed: a model that shrank while open is an error (the
    // dispatcher's FrontEndScope), never a partial list of differences.
    const Model a = Model::open(args.a, options);
    const Model b = Model::open(args.b, options);
    add_texts(out, "", metadata(a), metadata(b));
    add_texts(out, "", edges(a), edges(b));
    add_nodes(out, a, b);
    add_tensors(out, a, b, args.tolerance);
    if (args.json) {
      print_json(std::cout, {{"equal", out.list().empty()}, {"differences", out.list()}});
    } else {
      print_text(out.list());
    }
    return out.list().empty() ? kExitOk : kExitInvalid;
  } catch (const Error& e) {
    // diff(1)'s convention: 1 means "different", so trouble is 2.
    std::cerr << "onnxmap: " << e.what() << '\n';
    return kExitUsage;
  }
}

}  // namespace

void add_diff_verb(CLI::App& app) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* sub = app.add_subcommand(
      "diff", "What differs between two models (exit 0 equal, 1 different, 2 trouble, as diff)");
  sub->add_option("A", args->a, "the first model (a file or a URL)")->required();
  sub->add_option("B", args->b, "the second model")->required();
  add_remote_flags(sub, args->remote);
  sub->add_option("--tolerance", args->tolerance,
                  "values closer than this (absolute) count as equal (default 0)")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--json", args->json, "an object: equal, and the differences (what, a, b)");
  add_verb(sub, [args] { return run_diff(*args); });
}

}  // namespace onnxmap::cli
