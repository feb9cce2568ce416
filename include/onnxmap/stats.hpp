#pragma once
// Statistics of a tensor's values, as a person checks that weights are sane: range, mean,
// spread, zeros, NaNs and infinities, and a histogram, for every numeric data type (float16,
// bfloat16, the float8 and 4-bit types included); and how two tensors' values differ.
// `onnxmap stats` and `onnxmap diff` print them.
//
// Threads: tensor_stats and compare_values read only their arguments; plan_stats and
// compare_plans run the loader (load.hpp's rule). Any number may run at once.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "onnxmap/export.hpp"
#include "onnxmap/load.hpp"
#include "onnxmap/schema.hpp"

namespace onnxmap {

struct TensorStats {
  std::uint64_t count = 0;       // elements
  std::uint64_t zeros = 0;       // equal to 0 (-0 included)
  std::uint64_t nans = 0;        // NaN
  std::uint64_t infinities = 0;  // +inf or -inf
  // Over the finite values (NaN when there is none); stddev is the population's (NumPy's std).
  double min = 0;
  double max = 0;
  double mean = 0;
  double stddev = 0;
  // `bins` equal bins over [min, max] of the finite values (the last bin closed, as NumPy's
  // histogram); all zero when there is no finite value.
  std::vector<std::uint64_t> histogram;
};

// Whether tensor_stats takes `type`: every type with numbers, not STRING nor the complex types.
[[nodiscard]] ONNXMAP_API bool has_stats(DataType type) noexcept;

// The statistics of `count` elements of `type` in the raw_data layout (little-endian; sub-byte
// types packed, the first element in the low bits). Two passes over the bytes, no allocation but
// the histogram. Throws onnxmap::Error (invalid_argument) for a type has_stats refuses, or
// bytes too short for `count` elements.
[[nodiscard]] ONNXMAP_API TensorStats tensor_stats(std::span<const std::byte> bytes, DataType type,
                                                   std::uint64_t count, unsigned bins = 32);

// The statistics of each item of `plan`, as tensor_stats gives them for the item's bytes (`bins`
// bins), whatever the threads: the items read with the loader (`options`: mode, threads, bounds,
// progress, cancel) and counted on its reading threads as the bytes land, so that a warm model
// is counted at the speed of its memory. Types of at most 16 bits are counted piece by piece (by
// bit pattern: integer counts, which add up exactly), the others once each item's bytes are all
// in; options.cancelled is asked during that count too (from the reading thread counting, every
// few million elements), so a cancel ends the work in milliseconds, not after the count of a
// billion values. Null for an item of a type has_stats refuses. The options' on_piece and
// on_landed are replaced. Throws what load throws (onnxmap::Error, cancelled, where the count is
// cancelled), and onnxmap::Error (invalid_argument) for 0 bins.
[[nodiscard]] ONNXMAP_API std::vector<std::optional<TensorStats>> plan_stats(
    std::span<const LoadItem> plan, unsigned bins = 32, const LoadOptions& options = {});

// How two runs of elements of one type differ, element by element.
struct ValuesDiff {
  std::uint64_t differing = 0;  // elements whose values differ by more than the tolerance
  double max_abs = 0;           // the largest |a - b| over elements finite in both
  double max_rel = 0;           // the largest |a - b| / max(|a|, |b|) over those
};

// Compares `count` elements of `type` in `a` and `b` (the raw_data layout, as tensor_stats):
// byte ranges equal in both are skipped without decoding. NaN equals NaN; an element finite in
// one and not in the other differs (and is left out of the maxima); finite ones differ when
// |a - b| > tolerance. Throws onnxmap::Error (invalid_argument) as tensor_stats does.
[[nodiscard]] ONNXMAP_API ValuesDiff compare_values(std::span<const std::byte> a,
                                                    std::span<const std::byte> b, DataType type,
                                                    std::uint64_t count, double tolerance = 0);

// How the values of a[i] and b[i] differ, for each i, as compare_values gives it for the items'
// bytes, whatever the threads: `a` read with the loader (`options`, as plan_stats), each piece
// compared on the reading thread with the same bytes of b[i], which are read into the page cache
// in large requests where they are not there (fetched, for a model opened by URL) and, when
// options.release_after_callback, dropped from this process after. Throws onnxmap::Error
// (invalid_argument) before any read for plans of different lengths, or a pair of items of
// different data types or byte sizes, of a type has_stats refuses, or with b[i] a row range of
// a tensor in typed fields; and what load throws.
[[nodiscard]] ONNXMAP_API std::vector<ValuesDiff> compare_plans(std::span<const LoadItem> a,
                                                                std::span<const LoadItem> b,
                                                                double tolerance = 0,
                                                                const LoadOptions& options = {});

}  // namespace onnxmap
