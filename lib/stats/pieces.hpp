#pragma once
// An item's elements as the loader's pieces hold them (LoadOptions::on_piece): those a piece
// holds whole are counted there; the rest (cut by the start or end of a piece) once all of the
// item's bytes are in (on_landed).

#include <cstdint>
#include <vector>

#include "onnxmap/load.hpp"

namespace onnxmap::detail {

// Elements [first, last) of an item.
struct ElementRange {
  std::uint64_t first = 0;
  std::uint64_t last = 0;
};

// The elements of `item` (the tensor's, or its rows').
[[nodiscard]] std::uint64_t item_elements(const LoadItem& item);

// The elements lying whole in bytes [offset, offset + length) of an item of `count` elements of
// `bits` bits each (the raw_data layout); empty when none does.
[[nodiscard]] ElementRange whole_elements(std::uint64_t offset, std::uint64_t length,
                                          std::uint64_t bits, std::uint64_t count);

// The elements of [0, count) in none of `done` (ranges that do not overlap), in order.
[[nodiscard]] std::vector<ElementRange> left_over(std::vector<ElementRange> done,
                                                  std::uint64_t count);

}  // namespace onnxmap::detail
