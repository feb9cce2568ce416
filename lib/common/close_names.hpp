#pragma once
// Names close to a mistyped one, for "did you mean" in not_found errors.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace onnxmap::detail {

// Up to `most` of the names `each_name` yields that are closest to `wanted` (fewest single-byte
// edits, at most about a quarter of its length; a name that contains `wanted` counts as close),
// closest first, as "'a', 'b' or 'c'"; empty when none is close. `each_name` calls its argument
// once per name. Costs about (names x length x edits allowed): for error paths only.
[[nodiscard]] std::string close_names(
    std::string_view wanted,
    const std::function<void(const std::function<void(std::string_view)>&)>& each_name,
    std::size_t most = 3);

}  // namespace onnxmap::detail
