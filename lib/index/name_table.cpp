#include "index/name_table.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace onnxmap::detail {

void build_name_table(ModelIndex& index, const PodTable<std::uint32_t>& hashes) {
  const auto count = static_cast<std::uint32_t>(index.tensors.size());
  std::size_t slots = 16;
  while (slots < 2 * std::size_t{count}) slots *= 2;
  const std::size_t mask = slots - 1;
  index.name_slots.assign_zeros(slots);  // every slot free
  // Per first tensor of a name: the last of its tensors placed so far.
  const auto last_of_name = std::make_unique_for_overwrite<std::uint32_t[]>(count);
  // Slots are hit at random, in a table larger than the cache: a tensor's slot is asked for a
  // few tensors before it is probed.
  constexpr std::uint32_t kAhead = 8;
  for (std::uint32_t id = 0; id < count; ++id) {
    if (id + kAhead < count) __builtin_prefetch(&index.name_slots[hashes[id + kAhead] & mask], 1);
    const std::uint32_t hash = hashes[id];
    for (std::size_t slot = hash & mask;; slot = (slot + 1) & mask) {
      NameSlot& held = index.name_slots[slot];
      if (held.tensor_plus_one == 0) {
        held = {id + 1, hash};
        last_of_name[id] = id;
        break;
      }
      const std::uint32_t first = held.tensor_plus_one - 1;
      if (held.hash == hash && index.tensors[first].name == index.tensors[id].name) {
        // Same name again: chain it after the last one seen, keeping breadth-first order.
        index.tensors[last_of_name[first]].next_same_name = id;
        last_of_name[first] = id;
        break;
      }
    }
  }
}

}  // namespace onnxmap::detail
