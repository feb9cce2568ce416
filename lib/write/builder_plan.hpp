#pragma once
// Plans saving a ModelBuilder: metadata encoded by the plan, tensor bytes copied from the
// builder's buffers when written.

#include "onnxmap/builder.hpp"
#include "onnxmap/save.hpp"
#include "write/data_layout.hpp"
#include "write/plan.hpp"

namespace onnxmap::detail {

void plan_builder(const ModelBuilder& model, DataLayout& layout, Plan& plan, SaveResult& result);

}  // namespace onnxmap::detail
