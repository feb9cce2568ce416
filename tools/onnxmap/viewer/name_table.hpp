#pragma once
// Names given ids in the order they are first interned, for the graph index (node_graph.hpp):
// an open-addressing table of (hash, id) in one flat array. A graph of 300,000 nodes interns
// about a million names; std::unordered_map made that a node allocation per name and three
// dependent loads per probe (bench/view.md, "the graph page's first request").

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace onnxmap::cli::viewer {

class NameTable {
 public:
  static constexpr std::uint32_t kNone = UINT32_MAX;

  // Room for `n` names without growing.
  void reserve(std::size_t n);
  // The id of `name` (the next one when it is new) and whether it is new. `name` must outlive
  // the table (a view into the model).
  std::pair<std::uint32_t, bool> intern(std::string_view name);
  // The id of `name`, or kNone.
  [[nodiscard]] std::uint32_t find(std::string_view name) const;
  [[nodiscard]] bool contains(std::string_view name) const { return find(name) != kNone; }
  [[nodiscard]] std::size_t size() const noexcept { return names_.size(); }
  // The name, its pages checked first (touch_pages): the names are views of the model's map, and
  // a page lost by a cut file is then an onnxmap::Error for the request, not SIGBUS.
  [[nodiscard]] std::string_view name(std::uint32_t id) const;
  [[nodiscard]] const std::vector<std::string_view>& names() const noexcept { return names_; }

 private:
  // The slot holding `name` (hashed to `tag`), or the empty slot where it would go. `checked`:
  // the names compared are checked first, as name() does (not while interning: the graph index
  // interns names it has just read).
  [[nodiscard]] std::size_t probe(std::string_view name, std::uint32_t tag, bool checked) const;
  void rehash(std::size_t capacity);

  // Empty (0), or the name's hash's top 32 bits (its tag, which also picks its first slot)
  // above its id + 1. At most half full: probes stay short.
  std::vector<std::uint64_t> slots_;
  std::vector<std::string_view> names_;
};

// The indices of `names` ordered by name (bytewise), then by index. 8 bytes at a time, each pass
// comparing integers and reading each name once: a string sort reads both names at each of its
// ~18 comparisons an entry, mostly cache misses on 300,000 node paths.
[[nodiscard]] std::vector<std::uint32_t> sorted_by_name(const std::vector<std::string_view>& names);

}  // namespace onnxmap::cli::viewer
