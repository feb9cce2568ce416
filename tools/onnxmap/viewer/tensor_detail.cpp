#include "tensor_detail.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "onnxmap/bytes.hpp"
#include "onnxmap/stats.hpp"
#include "shared/json_number.hpp"
#include "shared/model_json.hpp"
#include "shared/tensor_order.hpp"
#include "tooling.hpp"

namespace onnxmap::cli::viewer {

namespace {

constexpr std::size_t kConsumersShown = 100;
constexpr std::uint64_t kRowsPerCell = 4;
constexpr std::uint64_t kDecodeChunk = std::uint64_t{1} << 20U;  // elements decoded at once

// Bytes holding at least the first `elements` elements of `t`, read as little as possible:
// whole rows where slice_rows can cut them, else the whole payload. `keep` holds decoded bytes
// of typed storage.
std::span<const std::byte> leading_bytes(const Tensor& t, std::uint64_t elements,
                                         TensorData& keep) {
  if (t.storage() == TensorStorage::typed) {
    keep = t.data();
    return keep.bytes();
  }
  const std::uint64_t per_row = t.row_elements();
  if (per_row == 0 || !t.can_slice_rows()) return t.bytes();
  return t.slice_rows(0, std::min((elements + per_row - 1) / per_row, t.row_count()));
}

// [re, im] pairs of complex64 (two float32) or complex128 (two float64) elements, decoded from
// a copy made under a guard (a fault in a file that shrank is an error, not SIGBUS).
nlohmann::json complex_values(std::span<const std::byte> stored, DataType type,
                              std::uint64_t count) {
  std::vector<std::byte> bytes(static_cast<std::size_t>(count * element_bits(type) / 8));
  copy_bytes(stored.first(bytes.size()), bytes);
  nlohmann::json out = nlohmann::json::array();
  for (std::uint64_t i = 0; i < count; ++i) {
    double re = 0;
    double im = 0;
    if (type == DataType::complex64) {
      std::array<float, 2> parts{};
      std::memcpy(parts.data(), bytes.data() + i * 8, 8);
      re = parts[0];
      im = parts[1];
    } else {
      std::memcpy(&re, bytes.data() + i * 16, 8);
      std::memcpy(&im, bytes.data() + i * 16 + 8, 8);
    }
    out.push_back({number_or_text(re), number_or_text(im)});
  }
  return out;
}

// Raises each cell to the largest finite magnitude of its columns in `row` (`cols` elements of
// `type`, whole bytes each), decoding at most kDecodeChunk elements at once.
void add_row_magnitudes(std::span<const std::byte> row, DataType type, std::uint64_t cols,
                        std::span<double> cells) {
  const std::uint64_t element_bytes = element_bits(type) / 8;
  for (std::uint64_t x = 0; x < cells.size(); ++x) {
    const std::uint64_t end = (x + 1) * cols / cells.size();
    for (std::uint64_t c = x * cols / cells.size(); c < end; c += kDecodeChunk) {
      const std::uint64_t n = std::min(kDecodeChunk, end - c);
      for (const double v :
           tooling::decode_values(row.subspan(c * element_bytes, n * element_bytes), type, n)) {
        if (std::isfinite(v)) cells[x] = std::max(cells[x], std::fabs(v));
      }
    }
  }
}

}  // namespace

bool has_heatmap(const Tensor& t) {
  const std::uint64_t bits = element_bits(t.data_type());
  return has_stats(t.data_type()) && bits % 8 == 0 && has_elements(t) && !t.dims().empty() &&
         t.element_count() > 0;
}

nlohmann::json tensor_detail(const Tensor& t, const NodeGraph& graph) {
  nlohmann::json out = tensor_json(t);
  out["elements"] = t.element_count();
  out["doc_string"] = std::string(t.doc_string());
  out["has_stats"] = has_stats(t.data_type()) && has_elements(t);
  out["heatmap"] = has_heatmap(t);
  const nlohmann::json readers = graph.consumers(t.lookup_name(), kConsumersShown);
  out["consumers"] = readers["consumers"];
  out["consumers_total"] = readers["total"];
  // The module and logical form its first reader says (a folded transpose's `val_772`).
  const auto first = graph.fold().readers(t.lookup_name());
  if (!first.empty()) {
    const Node& reader = graph.node_at(first.front());
    std::uint32_t k = 0;
    for (const std::string_view input : reader.inputs()) {
      if (input == t.lookup_name()) {
        out.update(reader_json(reader, k));
        break;
      }
      ++k;
    }
  }
  return out;
}

nlohmann::json tensor_values(const Tensor& t, std::uint64_t count) {
  count = std::min(count, t.element_count());
  nlohmann::json values = nlohmann::json::array();
  const DataType type = t.data_type();
  if (type == DataType::string) {
    const auto strings = t.strings();
    for (std::uint64_t i = 0; i < count && i < strings.size(); ++i) {
      values.push_back(std::string(strings[i]));
    }
  } else if (has_elements(t) && count > 0) {
    TensorData keep{std::span<const std::byte>{}};
    const auto bytes = leading_bytes(t, count, keep);
    if (type == DataType::complex64 || type == DataType::complex128) {
      values = complex_values(bytes, type, count);
    } else if (has_stats(type)) {
      for (const double v : tooling::decode_values(bytes, type, count))
        values.push_back(number_or_text(v));
    }
  }
  return {{"values", std::move(values)}, {"total", t.element_count()}};
}

nlohmann::json tensor_heatmap(const Tensor& t, std::uint64_t width, std::uint64_t height) {
  if (!has_heatmap(t)) {
    throw std::invalid_argument("no heat map of " + std::string(t.lookup_name()));
  }
  const std::uint64_t element_bytes = element_bits(t.data_type()) / 8;
  // A scalar or 1-D tensor is drawn as one row.
  const bool matrix = t.dims().size() >= 2;
  const std::uint64_t rows = matrix ? t.row_count() : 1;
  const std::uint64_t cols = matrix ? t.row_elements() : t.element_count();
  width = std::max<std::uint64_t>(1, std::min(width, cols));
  height = std::max<std::uint64_t>(1, std::min(height, rows));
  std::vector<double> cells(width * height, -1);  // -1: no finite value seen yet
  // Typed storage and 1-D tensors are read at once; the rows of others one by one.
  TensorData whole{std::span<const std::byte>{}};
  const bool by_rows = t.storage() != TensorStorage::typed && t.dims().size() >= 2;
  const auto all =
      by_rows ? std::span<const std::byte>{} : leading_bytes(t, t.element_count(), whole);
  std::uint64_t sampled = 0;
  for (std::uint64_t y = 0; y < height; ++y) {
    const std::uint64_t first = y * rows / height;
    const std::uint64_t span = (y + 1) * rows / height - first;
    const std::uint64_t picks = std::min(kRowsPerCell, span);
    for (std::uint64_t s = 0; s < picks; ++s, ++sampled) {
      const std::uint64_t r = first + s * span / picks;
      const auto row = by_rows ? t.slice_rows(r, r + 1)
                               : all.subspan(r * cols * element_bytes, cols * element_bytes);
      add_row_magnitudes(row, t.data_type(), cols, std::span(cells).subspan(y * width, width));
    }
  }
  nlohmann::json out_cells = nlohmann::json::array();
  double largest = 0;
  for (const double c : cells) {
    out_cells.push_back(c < 0 ? nlohmann::json(nullptr) : nlohmann::json(c));
    largest = std::max(largest, c);
  }
  return {{"rows", rows},
          {"cols", cols},
          {"width", width},
          {"height", height},
          {"max", largest},
          {"sampled_rows", sampled},
          {"cells", std::move(out_cells)}};
}

}  // namespace onnxmap::cli::viewer
