// The graph index's name table (name_table.hpp).

#include "name_table.hpp"

#include <algorithm>
#include <bit>
#include <functional>

namespace onnxmap::cli::viewer {

namespace {

std::uint32_t tag_of(std::string_view name) {
  return static_cast<std::uint32_t>(std::hash<std::string_view>{}(name) >> 32);
}

}  // namespace

void NameTable::reserve(std::size_t n) {
  names_.reserve(n);
  if (2 * n > slots_.size()) rehash(std::bit_ceil(2 * n));
}

std::size_t NameTable::probe(std::string_view name, std::uint32_t tag) const {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t at = tag & mask;; at = (at + 1) & mask) {
    const std::uint64_t slot = slots_[at];
    if (slot == 0) return at;
    if (static_cast<std::uint32_t>(slot >> 32) == tag &&
        names_[static_cast<std::uint32_t>(slot) - 1] == name) {
      return at;
    }
  }
}

std::pair<std::uint32_t, bool> NameTable::intern(std::string_view name) {
  if (2 * (names_.size() + 1) > slots_.size()) rehash(std::max<std::size_t>(16, 2 * slots_.size()));
  const std::uint32_t tag = tag_of(name);
  std::uint64_t& slot = slots_[probe(name, tag)];
  if (slot != 0) return {static_cast<std::uint32_t>(slot) - 1, false};
  const auto id = static_cast<std::uint32_t>(names_.size());
  names_.push_back(name);
  slot = (std::uint64_t{tag} << 32) | (std::uint64_t{id} + 1);
  return {id, true};
}

std::uint32_t NameTable::find(std::string_view name) const {
  if (slots_.empty()) return kNone;
  const std::uint64_t slot = slots_[probe(name, tag_of(name))];
  return slot == 0 ? kNone : static_cast<std::uint32_t>(slot) - 1;
}

// Moves every slot to its place in a table of `capacity` (a power of two) slots: the tags
// say where, no name is hashed again.
void NameTable::rehash(std::size_t capacity) {
  std::vector<std::uint64_t> old(capacity, 0);
  old.swap(slots_);
  const std::size_t mask = capacity - 1;
  for (const std::uint64_t slot : old) {
    if (slot == 0) continue;
    std::size_t at = static_cast<std::uint32_t>(slot >> 32) & mask;
    while (slots_[at] != 0) at = (at + 1) & mask;
    slots_[at] = slot;
  }
}

}  // namespace onnxmap::cli::viewer
