#include "index/name_table.hpp"

#include <cstddef>
#include <cstdint>

namespace onnxmap::detail {

void build_name_table(ModelIndex& index, const PodTable<std::uint32_t>& hashes) {
  const auto count = static_cast<std::uint32_t>(index.tensors.size());
  std::size_t slots = 16;
  while (slots < 2 * std::size_t{count}) slots *= 2;
  const std::size_t mask = slots - 1;
  index.name_slots.assign_zeros(slots);  // every slot free
  // Last tensor first: a name's slot then always holds the earliest of its tensors seen so far,
  // and each earlier one goes to the front of the chain, with no list of chain ends to keep.
  // Slots are hit at random, in a table larger than the cache: a tensor's slot is asked for a
  // few tensors before it is probed.
  constexpr std::uint32_t kAhead = 8;
  for (std::uint32_t id = count; id-- > 0;) {
    if (id >= kAhead) __builtin_prefetch(&index.name_slots[hashes[id - kAhead] & mask], 1);
    const std::uint32_t hash = hashes[id];
    for (std::size_t slot = hash & mask;; slot = (slot + 1) & mask) {
      NameSlot& held = index.name_slots[slot];
      if (held.tensor_plus_one == 0) {
        held = {id + 1, hash};
        break;
      }
      const std::uint32_t later = held.tensor_plus_one - 1;
      if (held.hash == hash && index.tensors[later].name == index.tensors[id].name) {
        index.tensors[id].next_same_name = later;
        held.tensor_plus_one = id + 1;
        break;
      }
    }
  }
}

}  // namespace onnxmap::detail
