#include "common/close_names.hpp"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace onnxmap::detail {

namespace {

// The edit distance of `a` and `b` (insertions, deletions, substitutions of one byte), or nullopt
// when it exceeds `limit`: one row of the table at a time, cut off once a row's best passes it.
std::optional<std::size_t> distance_within(std::string_view a, std::string_view b,
                                           std::size_t limit) {
  const std::size_t gap = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (gap > limit) return std::nullopt;
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    std::size_t best = row[0];
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({above + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
      best = std::min(best, row[j]);
    }
    if (best > limit) return std::nullopt;
  }
  return row[b.size()] <= limit ? std::optional(row[b.size()]) : std::nullopt;
}

}  // namespace

std::string close_names(
    std::string_view wanted,
    const std::function<void(const std::function<void(std::string_view)>&)>& each_name,
    std::size_t most) {
  const std::size_t limit = std::max<std::size_t>(1, wanted.size() / 4);
  std::vector<std::pair<std::size_t, std::string>> found;  // (distance, name), kept sorted
  each_name([&](std::string_view name) {
    if (name.empty() || name == wanted) return;
    // A name holding the wanted text (a short name typed for a long one) ranks after every
    // close spelling.
    std::optional<std::size_t> d = distance_within(wanted, name, limit);
    if (!d && wanted.size() >= 3 && name.find(wanted) != std::string_view::npos) d = limit + 1;
    if (!d) return;
    if (found.size() == most && found.back().first <= *d) return;
    if (std::any_of(found.begin(), found.end(), [&](const auto& f) { return f.second == name; })) {
      return;
    }
    const auto at = std::upper_bound(found.begin(), found.end(), *d,
                                     [](std::size_t v, const auto& f) { return v < f.first; });
    found.insert(at, {*d, std::string(name)});
    if (found.size() > most) found.pop_back();
  });
  std::string out;
  for (std::size_t i = 0; i < found.size(); ++i) {
    if (i > 0) out += i + 1 == found.size() ? " or " : ", ";
    out += "'" + found[i].second + "'";
  }
  return out;
}

}  // namespace onnxmap::detail
