#pragma once
// Plans saving a model opened with Model::open. Only tensors whose bytes move (inline to
// external, external to a new data file, external to inline) are re-encoded, and only the
// messages holding them are rebuilt around them; every other field is a byte range copied from
// the source. With nothing to move, the plan is the whole source file, byte for byte.

#include "index/model_index.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/save.hpp"
#include "write/data_layout.hpp"
#include "write/plan.hpp"

namespace onnxmap::detail {

void plan_model(const Model& model, DataLayout& layout, Plan& plan, SaveResult& result);

}  // namespace onnxmap::detail
