#include "tensor_list.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

#include "shared/model_json.hpp"
#include "shared/tensor_order.hpp"

namespace onnxmap::cli::viewer {

namespace {

constexpr std::size_t kFiltersKept = 8;
constexpr std::size_t kTreemapChildren = 200;

struct Group {
  std::uint64_t bytes = 0;
  std::uint64_t tensors = 0;
  std::uint32_t first = 0;  // a tensor of the group: the group's name when it is the only one
};

nlohmann::json group_json(const Model& model, const std::string& prefix, std::string_view segment,
                          const Group& g) {
  nlohmann::json out = {{"name", segment},
                        {"prefix", prefix + std::string(segment)},
                        {"bytes", g.bytes},
                        {"tensors", g.tensors},
                        {"leaf", g.tensors == 1}};
  if (g.tensors == 1) out["tensor"] = std::string(model.tensor_at(g.first).lookup_name());
  // Tensors named `prefix` exactly (every unnamed one at the top): nothing to unfold.
  if (segment.empty()) out["name"] = prefix.empty() ? "(no name)" : "(" + prefix + ")";
  if (segment.empty() && g.tensors > 1) out["terminal"] = true;
  return out;
}

}  // namespace

std::string_view next_segment(std::string_view name, std::size_t prefix_size) {
  const std::string_view rest = name.substr(prefix_size);
  const auto cut = rest.find_first_of("./");
  return cut == std::string_view::npos ? rest : rest.substr(0, cut + 1);
}

TensorList::TensorList(Model model) : model_(std::move(model)) {}

const FirstReaders& TensorList::readers() {
  std::call_once(readers_made_, [&] { readers_.emplace(model_); });
  return *readers_;
}

nlohmann::json TensorList::row(std::uint32_t index) {
  const Tensor t = model_.tensor_at(index);
  nlohmann::json out = tensor_json(t);
  out.update(readers().json(t));
  out["index"] = index;
  out["elements"] = t.element_count();
  return out;
}

std::shared_ptr<const TensorList::Indices> TensorList::order(const std::string& sort) {
  const std::lock_guard lock(mutex_);
  if (auto found = orders_.find(sort); found != orders_.end()) return found->second;
  auto out = std::make_shared<Indices>(model_.tensor_count());
  std::iota(out->begin(), out->end(), 0);
  const auto by = [&](auto key) {
    std::stable_sort(out->begin(), out->end(), [&](std::uint32_t a, std::uint32_t b) {
      return key(model_.tensor_at(a)) < key(model_.tensor_at(b));
    });
  };
  if (sort == "name") {
    by([](const Tensor& t) { return t.lookup_name(); });
  } else if (sort == "bytes") {
    by([](const Tensor& t) { return t.byte_size(); });
  } else if (sort == "dtype") {
    by([](const Tensor& t) { return to_string(t.data_type()); });
  } else if (sort == "offset") {
    by(file_order);
  } else if (sort == "module") {
    const FirstReaders& first = readers();
    by([&](const Tensor& t) { return first.position(t); });
  } else if (sort != "index") {
    throw std::invalid_argument("sort: " + sort +
                                " not in {index, name, bytes, dtype, offset, module}");
  }
  orders_[sort] = out;
  return out;
}

std::shared_ptr<const std::vector<std::uint8_t>> TensorList::matches(const std::string& filter) {
  const std::lock_guard lock(mutex_);
  if (auto found = filters_.find(filter); found != filters_.end()) return found->second;
  // The tensors a plan with this filter takes (in model order): the command's matching too.
  auto out = std::make_shared<std::vector<std::uint8_t>>(model_.tensor_count(), 0);
  std::size_t i = 0;
  for (const LoadItem& item : plan(model_, PlanOptions::matching(filter))) {
    while (!(model_.tensor_at(i) == item.tensor)) ++i;
    (*out)[i++] = 1;
  }
  if (filters_.size() >= kFiltersKept) filters_.clear();
  filters_[filter] = out;
  return out;
}

nlohmann::json TensorList::page(const TensorPageQuery& query) {
  const auto sorted = order(query.sort);
  const auto keep = matches(query.filter);
  nlohmann::json rows = nlohmann::json::array();
  std::uint64_t matched = 0;
  const std::size_t n = sorted->size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint32_t i = (*sorted)[query.descending ? n - 1 - k : k];
    if ((*keep)[i] == 0) continue;
    if (matched >= query.offset && rows.size() < query.limit) rows.push_back(row(i));
    ++matched;
  }
  return {{"total", n}, {"matched", matched}, {"offset", query.offset}, {"rows", std::move(rows)}};
}

nlohmann::json TensorList::treemap(const std::string& prefix, const std::string& filter) {
  const auto keep = matches(filter);
  std::unordered_map<std::string_view, Group> groups;
  Group all;
  for (std::uint32_t i = 0; i < keep->size(); ++i) {
    const Tensor t = model_.tensor_at(i);
    const std::string_view name = t.lookup_name();
    if ((*keep)[i] == 0 || !name.starts_with(prefix)) continue;
    Group& g = groups[next_segment(name, prefix.size())];
    if (g.tensors++ == 0) g.first = i;
    g.bytes += t.byte_size();
    all.bytes += t.byte_size();
    ++all.tensors;
  }
  std::vector<std::pair<std::string_view, Group>> sorted(groups.begin(), groups.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return std::tie(b.second.bytes, a.first) < std::tie(a.second.bytes, b.first);
  });
  nlohmann::json children = nlohmann::json::array();
  Group others;
  for (std::size_t k = 0; k < sorted.size(); ++k) {
    if (k < kTreemapChildren) {
      children.push_back(group_json(model_, prefix, sorted[k].first, sorted[k].second));
    } else {
      others.bytes += sorted[k].second.bytes;
      others.tensors += sorted[k].second.tensors;
    }
  }
  if (others.tensors > 0) {
    children.push_back({{"name", "(others)"},
                        {"prefix", prefix},
                        {"bytes", others.bytes},
                        {"tensors", others.tensors},
                        {"leaf", false},
                        {"others", true}});
  }
  return {
      {"prefix", prefix}, {"bytes", all.bytes}, {"tensors", all.tensors}, {"children", children}};
}

}  // namespace onnxmap::cli::viewer
