#pragma once
// The checks `check` runs on an opened model, one file each. Each appends what it finds to the
// report, in the order it meets it.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "index/safetensors_header.hpp"
#include "onnxmap/check.hpp"
#include "view/view_access.hpp"

namespace onnxmap::detail {

// Where `view`'s message starts in the model file, for a problem's report.
template <class View>
[[nodiscard]] std::uint64_t offset_of(const View& view) noexcept {
  return ViewAccess::offset(view);
}

inline void add_problem(CheckReport& report, ProblemKind kind, std::string path, std::string detail,
                        std::uint64_t offset = Error::kNoOffset) {
  report.problems.push_back({kind, std::move(path), std::move(detail), offset});
}

// Which node makes each value of one body of nodes (a graph's or a function's nodes): the
// position in `nodes` of the first node with that output name. Empty output names (optional
// outputs left out) are not values. The names view the model's bytes (scopes.cpp).
[[nodiscard]] std::unordered_map<std::string_view, std::uint32_t> value_producers(
    const ViewRange<Node>& nodes);

// Names and order in every graph and function: duplicates, SSA, undefined and out-of-order node
// inputs, undefined outputs, node domains without an opset import (scopes.cpp).
void check_scopes(const Model& model, CheckReport& report);

// Fields and data types newer than the declared IR version (ir_version.cpp).
void check_ir_version(const Model& model, CheckReport& report);

// Payload errors the open collected, typed and STRING element counts, unknown data types, and
// external ranges that overlap within one file (payloads.cpp).
void check_payloads(const Model& model, CheckReport& report);

// External data in safetensors files: each header parses, and each tensor is one of its
// entries with the same length, element type and dims (safetensors.cpp).
void check_safetensors(const Model& model, CheckReport& report);
// The header of data file `f` of `index`, a safetensors file (fetched first for a model opened
// by URL). Throws as read_safetensors_header (index/safetensors_header.hpp).
[[nodiscard]] SafetensorsHeader safetensors_header_of(const ModelIndex& index, std::size_t f);

// Reads every payload: BOOL values, external checksums (data.cpp).
void check_data(const Model& model, const CheckOptions& options, CheckReport& report);

}  // namespace onnxmap::detail
