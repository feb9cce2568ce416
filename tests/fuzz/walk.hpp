#pragma once
// Touches every view of an opened model, the way a curious caller would: every getter of every
// graph, node, attribute (into subgraphs), type, function, training info, annotation and tensor,
// tensor bytes, decoded data, strings and row slices. For the fuzz targets: whatever the input,
// each call either returns or throws onnxmap::Error; anything else is a finding.

#include "onnxmap/onnxmap.hpp"

namespace onnxmap::fuzz {

// Walks everything reachable from `model` and looks every tensor up by name and by path.
void walk_model(const Model& model);

// Every getter of one tensor, including data(), strings() and a few row slices.
void walk_tensor(const Tensor& tensor);

// What peek shows.
void walk_summary(const ModelSummary& summary);

}  // namespace onnxmap::fuzz
