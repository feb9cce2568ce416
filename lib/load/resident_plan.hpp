#pragma once
// Whether a prefetch has anything to do: a plan whose bytes all lie in the page cache already
// needs no read, and finding that out must cost far less than reading the bytes through the map
// (the prefetch pool is never to make a warm read slower than one thread reading alone).

#include <span>

#include "onnxmap/load.hpp"

namespace onnxmap::detail {

// True when every item is a whole tensor stored in a local mapped file (raw or external data)
// and every page of every item is in the page cache. False means "not known to be resident":
// the caller plans the reads, and gets whatever errors planning gives.
[[nodiscard]] bool plan_resident(std::span<const LoadItem> plan);

}  // namespace onnxmap::detail
