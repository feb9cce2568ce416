#pragma once
// The viewer's page of one tensor: what it is, its first values, a heat map of its magnitudes.
// Each reads only what it shows: the first rows for the values, a few sampled rows for the map.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "node_graph.hpp"
#include "onnxmap/onnxmap.hpp"

namespace onnxmap::cli::viewer {

// /api/tensor: the row of ls --json with elements, doc_string, has_stats, heatmap, consumers.
[[nodiscard]] nlohmann::json tensor_detail(const Tensor& t, const NodeGraph& graph);
// /api/values: the first `count` values (numbers, "nan"/"inf"/"-inf", strings, [re, im]).
[[nodiscard]] nlohmann::json tensor_values(const Tensor& t, std::uint64_t count);
// Whether tensor_heatmap takes `t`: numbers of whole bytes, raw, external or typed.
[[nodiscard]] bool has_heatmap(const Tensor& t);
// /api/heatmap: the largest finite magnitude of each of at most height x width blocks of `t`
// seen as dims[0] rows (one row for a 1-D tensor); at most 4 rows are read per cell row.
// Throws std::invalid_argument when has_heatmap is false.
[[nodiscard]] nlohmann::json tensor_heatmap(const Tensor& t, std::uint64_t width,
                                            std::uint64_t height);

}  // namespace onnxmap::cli::viewer
