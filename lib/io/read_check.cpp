// The checks of read_check.hpp and the front ends' scope (onnxmap/front_end_scope.hpp).

#include "io/read_check.hpp"

#include <algorithm>
#include <cstdint>

#include "io/fault_guard.hpp"
#include "io/guarded_bytes.hpp"
#include "onnxmap/front_end_scope.hpp"

namespace onnxmap::detail {

std::atomic<unsigned> front_end_scopes{0};

namespace {

// How many FrontEndScope objects this thread is inside (normal code only: never the handler).
thread_local unsigned scope_depth = 0;

constexpr std::uintptr_t kPage = 4096;  // the smallest page: a larger one is touched more often

}  // namespace

bool this_thread_in_front_end_scope() noexcept {
  return scope_depth != 0;
}

void check_pages(std::span<const std::byte> bytes) {
  (void)touch_pages(bytes);
}

bool pages_readable(const std::byte* begin, const std::byte* end) noexcept {
  constexpr std::ptrdiff_t kMostAtOnce = std::ptrdiff_t{64} << 10U;
  if (end - begin > kMostAtOnce) return false;
  const std::span<const std::byte> bytes(begin, end);
  volatile std::byte sink{};
  const void* fault = nullptr;
  struct Touch {
    std::span<const std::byte> bytes;
    volatile std::byte* sink;
  } touch{bytes, &sink};
  const auto kernel = [](void* context) {
    auto* t = static_cast<Touch*>(context);
    const auto first = reinterpret_cast<std::uintptr_t>(t->bytes.data());
    for (std::uintptr_t at = first; at < first + t->bytes.size();
         at = (at & ~(kPage - 1)) + kPage) {
      *t->sink = *reinterpret_cast<const std::byte*>(at);
    }
  };
  return run_guarded(bytes, {}, kernel, &touch, &fault);
}

const std::byte* check_ahead(const std::byte* pos, const std::byte* end) {
  const auto at = reinterpret_cast<std::uintptr_t>(pos);
  const auto limit = reinterpret_cast<std::uintptr_t>(end);
  const std::uintptr_t until = std::min(limit, (at & ~(kPage - 1)) + 2 * kPage);
  const auto* checked_end = reinterpret_cast<const std::byte*>(until);
  check_pages({pos, checked_end});
  return checked_end;
}

}  // namespace onnxmap::detail

namespace onnxmap {

FrontEndScope::FrontEndScope() noexcept {
  ++detail::scope_depth;
  detail::front_end_scopes.fetch_add(1, std::memory_order_relaxed);
}

FrontEndScope::~FrontEndScope() {
  detail::front_end_scopes.fetch_sub(1, std::memory_order_relaxed);
  --detail::scope_depth;
}

}  // namespace onnxmap
