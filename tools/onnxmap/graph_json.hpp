#pragma once
// The model's graphs as JSON, the one walk behind both forms of `onnxmap graph`.
//
//   {"ir_version": 8, "opset_import": {"ai.onnx": 17}, "graph": GRAPH, "functions": [FUNCTION]}
//   GRAPH    = {"name", "inputs": [VALUE], "initializers": [INIT], "nodes": [NODE],
//               "outputs": [VALUE]}
//   VALUE    = {"name", "type"}                      type: Type::to_string(), "?" when absent
//   INIT     = {"name", "type"}                      "FLOAT[4, 3]" or "sparse FLOAT[10, 10] nnz=3"
//   NODE     = {"op_type", "domain", "inputs", "outputs", "attributes": [ATTRIBUTE]}
//   ATTRIBUTE= {"name", "type", "value", ["graphs": [GRAPH]]}
//              type as onnx.proto names it ("INTS"); value as the text form shows it
//              (lists past 8 items and strings past 48 bytes cut short); "graphs" holds the
//              subgraphs of a GRAPH or GRAPHS attribute while within --depth
//   FUNCTION = {"domain", "name", "inputs", "outputs", "attributes", "nodes": [NODE]}

#include <nlohmann/json.hpp>

#include "onnxmap/onnxmap.hpp"

namespace onnxmap::cli {

// `max_depth` levels of subgraphs are walked into; -1 walks them all.
[[nodiscard]] nlohmann::json graph_json(const Model& model, int max_depth);

}  // namespace onnxmap::cli
