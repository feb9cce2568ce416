#pragma once
// The two ways a double becomes JSON, which has no NaN or infinity: as null where a number is a
// summary of many (statistics: min, max, mean), or as text where it is one value to show.

#include <nlohmann/json.hpp>

namespace onnxmap::cli {

// `v` where it is finite, else null: `stats --json`, the viewer's statistics.
[[nodiscard]] nlohmann::json finite_or_null(double v);
// `v` where it is finite, else "nan", "inf" or "-inf": the viewer's tensor values.
[[nodiscard]] nlohmann::json number_or_text(double v);

}  // namespace onnxmap::cli
