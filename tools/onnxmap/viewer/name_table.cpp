// The graph index's name table and sort (name_table.hpp).

#include "name_table.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <span>
#include <tuple>

#include "tooling.hpp"

namespace onnxmap::cli::viewer {

namespace {

// `name` after a touch of each of its pages (tooling.hpp: a lost one is an onnxmap::Error).
std::string_view checked_name(std::string_view name) {
  (void)tooling::touch_pages({reinterpret_cast<const std::byte*>(name.data()), name.size()});
  return name;
}

std::uint32_t tag_of(std::string_view name) {
  return static_cast<std::uint32_t>(std::hash<std::string_view>{}(name) >> 32);
}

// A name in sorted_by_name: the 8 bytes of it from the sort's offset (big-endian, 0
// past the end) and how many it has there (9: more follow).
struct NameKey {
  std::uint64_t chunk = 0;
  std::uint32_t bytes = 0;
  std::uint32_t id = 0;
};

constexpr std::size_t kChunkedBytes = 64;  // then whole strings: a hostile long shared prefix

// Sorts `keys` by their names from `offset` on, then by id: 8 bytes at a time, groups that tie
// sorted by the next 8 bytes.
void sort_from(std::span<NameKey> keys, const std::vector<std::string_view>& names,
               std::size_t offset) {
  if (offset >= kChunkedBytes) {
    std::sort(keys.begin(), keys.end(), [&](const NameKey& a, const NameKey& b) {
      return names[a.id] != names[b.id] ? names[a.id] < names[b.id] : a.id < b.id;
    });
    return;
  }
  for (NameKey& key : keys) {
    const std::string_view name = names[key.id];
    const std::size_t left = name.size() > offset ? name.size() - offset : 0;
    key.chunk = 0;
    for (std::size_t b = 0; b < 8; ++b) {
      key.chunk = key.chunk << 8 | (b < left ? static_cast<unsigned char>(name[offset + b]) : 0U);
    }
    key.bytes = static_cast<std::uint32_t>(std::min<std::size_t>(left, 9));
  }
  std::sort(keys.begin(), keys.end(), [](const NameKey& a, const NameKey& b) {
    return std::tie(a.chunk, a.bytes, a.id) < std::tie(b.chunk, b.bytes, b.id);
  });
  for (std::size_t a = 0; a < keys.size();) {
    std::size_t b = a + 1;
    while (b < keys.size() && keys[b].chunk == keys[a].chunk && keys[b].bytes == keys[a].bytes) {
      ++b;
    }
    if (keys[a].bytes == 9 && b - a > 1) sort_from(keys.subspan(a, b - a), names, offset + 8);
    a = b;
  }
}

}  // namespace

std::vector<std::uint32_t> sorted_by_name(const std::vector<std::string_view>& names) {
  std::vector<NameKey> keys(names.size());
  for (std::uint32_t id = 0; id < keys.size(); ++id) keys[id].id = id;
  sort_from(keys, names, 0);
  std::vector<std::uint32_t> ids(keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k) ids[k] = keys[k].id;
  return ids;
}

void NameTable::reserve(std::size_t n) {
  names_.reserve(n);
  if (2 * n > slots_.size()) rehash(std::bit_ceil(2 * n));
}

std::string_view NameTable::name(std::uint32_t id) const {
  return checked_name(names_[id]);
}

std::size_t NameTable::probe(std::string_view name, std::uint32_t tag, bool checked) const {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t at = tag & mask;; at = (at + 1) & mask) {
    const std::uint64_t slot = slots_[at];
    if (slot == 0) return at;
    if (static_cast<std::uint32_t>(slot >> 32) != tag) continue;
    const std::string_view held = names_[static_cast<std::uint32_t>(slot) - 1];
    if ((checked ? checked_name(held) : held) == name) return at;
  }
}

std::pair<std::uint32_t, bool> NameTable::intern(std::string_view name) {
  if (2 * (names_.size() + 1) > slots_.size()) rehash(std::max<std::size_t>(16, 2 * slots_.size()));
  const std::uint32_t tag = tag_of(name);
  std::uint64_t& slot = slots_[probe(name, tag, false)];
  if (slot != 0) return {static_cast<std::uint32_t>(slot) - 1, false};
  const auto id = static_cast<std::uint32_t>(names_.size());
  names_.push_back(name);
  slot = (std::uint64_t{tag} << 32) | (std::uint64_t{id} + 1);
  return {id, true};
}

std::uint32_t NameTable::find(std::string_view name) const {
  if (slots_.empty()) return kNone;
  const std::uint64_t slot = slots_[probe(name, tag_of(name), true)];
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
