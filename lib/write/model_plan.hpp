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
#include "write/shared_weights.hpp"

namespace onnxmap::detail {

// With `weights_from`, the tensors found in its checkpoint point into it (the model is saved into
// `model_folder`; write/shared_weights.hpp), and result.shared counts them.
void plan_model(const Model& model, DataLayout& layout, Plan& plan, SaveResult& result,
                const WeightsFrom* weights_from = nullptr,
                const std::filesystem::path& model_folder = {});

}  // namespace onnxmap::detail
