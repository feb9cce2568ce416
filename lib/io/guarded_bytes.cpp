// Guarded copies (onnxmap/bytes.hpp), comparisons and touches (io/guarded_bytes.hpp).

#include <cstdint>
#include <cstring>
#include <string>

#include "io/guarded_bytes.hpp"

#include "io/fault_guard.hpp"
#include "onnxmap/bytes.hpp"

namespace onnxmap {

void copy_bytes(std::span<const std::byte> from, std::span<std::byte> to) {
  if (from.size() != to.size()) {
    throw Error(ErrorKind::invalid_argument, "a copy of " + std::to_string(from.size()) +
                                                 " bytes into " + std::to_string(to.size()));
  }
  if (from.empty()) return;  // an empty span's data may be null: memcpy must not see it
  detail::guard_faults(from, [&]() noexcept { std::memcpy(to.data(), from.data(), from.size()); });
}

namespace detail {

bool equal_bytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  bool equal = false;
  guard_faults(a, b, [&]() noexcept { equal = std::memcmp(a.data(), b.data(), a.size()) == 0; });
  return equal;
}

std::byte touch_pages(std::span<const std::byte> bytes) {
  constexpr std::uintptr_t kPage = 4096;
  std::byte sum{};
  guard_faults(bytes, [&]() noexcept {
    // The first byte, then the first of every page after it: each page the bytes touch, once.
    const auto first = reinterpret_cast<std::uintptr_t>(bytes.data());
    std::byte local{};
    for (std::uintptr_t at = first; at < first + bytes.size(); at = (at & ~(kPage - 1)) + kPage) {
      local ^= *reinterpret_cast<const std::byte*>(at);
    }
    sum = local;
  });
  return sum;
}

}  // namespace detail

}  // namespace onnxmap
