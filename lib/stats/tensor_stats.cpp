// The statistics of a tensor's values (stats.hpp): from the values one by one, or from how many
// elements hold each bit pattern (patterns.hpp) for the types of at most 16 bits.

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "io/fault_guard.hpp"
#include "onnxmap/error.hpp"
#include "onnxmap/stats.hpp"
#include "stats/patterns.hpp"
#include "stats/values.hpp"

namespace onnxmap {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Everything but the histogram, from values given one by one or by pattern with a count: sums of
// the deviations from the first finite value (which keeps them small), kept per block of values
// and then added up, so that rounding grows with the blocks, not with every value.
class Accumulator {
 public:
  void add(double v, std::uint64_t times) {
    if (!std::isfinite(v)) {
      (std::isnan(v) ? s_.nans : s_.infinities) += times;
      return;
    }
    if (finite_ == 0) shift_ = v;
    if (v == 0) s_.zeros += times;
    s_.min = std::min(s_.min, v);
    s_.max = std::max(s_.max, v);
    const double d = v - shift_;
    const auto weight = static_cast<double>(times);
    block_sum_ += weight * d;
    block_squares_ += weight * d * d;
    finite_ += times;
    if (++adds_ % 4096 == 0) flush();
  }
  // The statistics but the histogram; NaN where there was no finite value.
  TensorStats finish() {
    flush();
    if (finite_ == 0) {
      s_.min = s_.max = s_.mean = s_.stddev = kNaN;
      return s_;
    }
    const auto n = static_cast<double>(finite_);
    s_.mean = shift_ + sum_ / n;
    s_.stddev = std::sqrt(std::max(0.0, squares_ / n - (sum_ / n) * (sum_ / n)));
    return s_;
  }

 private:
  void flush() {
    sum_ += block_sum_;
    squares_ += block_squares_;
    block_sum_ = block_squares_ = 0;
  }
  TensorStats s_ = [] {
    TensorStats s;
    s.min = kInfinity;
    s.max = -kInfinity;
    return s;
  }();
  std::uint64_t finite_ = 0;
  std::uint64_t adds_ = 0;
  double shift_ = 0;
  double sum_ = 0, squares_ = 0, block_sum_ = 0, block_squares_ = 0;
};

// The histogram bin of a finite value, by NumPy's rules: equal bins over [min, max], the last
// one closed, a range of one value widened by 0.5 each way.
class Binner {
 public:
  // Halving both ends keeps max - min finite for any two finite doubles (-1e308 to 1e308).
  Binner(const TensorStats& s, std::size_t bins)
      : low_(s.min == s.max ? s.min / 2 - 0.25 : s.min / 2),
        width_(s.min == s.max ? 0.5 : s.max / 2 - s.min / 2),
        bins_(static_cast<double>(bins)),
        last_(bins - 1) {}
  [[nodiscard]] std::size_t operator()(double v) const {
    const double at = (v / 2 - low_) / width_ * bins_;  // compared before the cast: it may be huge
    if (!(at > 0)) return 0;
    return at >= bins_ ? last_ : std::min(static_cast<std::size_t>(at), last_);
  }

 private:
  double low_;
  double width_;
  double bins_;
  std::size_t last_;
};

}  // namespace

namespace detail {

TensorStats stats_from_patterns(std::span<const std::uint64_t> counts, DataType type,
                                std::uint64_t count, unsigned bins) {
  const std::vector<double>& values = values_by_pattern(type);
  Accumulator sums;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    if (counts[k] != 0) sums.add(values[k], counts[k]);
  }
  TensorStats s = sums.finish();
  s.count = count;
  s.histogram.assign(bins, 0);
  if (std::isnan(s.min)) return s;
  const Binner bin(s, bins);
  for (std::size_t k = 0; k < counts.size(); ++k) {
    if (counts[k] != 0 && std::isfinite(values[k])) s.histogram[bin(values[k])] += counts[k];
  }
  return s;
}

}  // namespace detail

bool has_stats(DataType type) noexcept {
  const auto t = traits(type);
  return t && t->bits > 0 && type != DataType::string && type != DataType::complex64 &&
         type != DataType::complex128;
}

TensorStats tensor_stats(std::span<const std::byte> bytes, DataType type, std::uint64_t count,
                         unsigned bins) {
  return detail::tensor_stats_until(bytes, type, count, bins, {});
}

namespace detail {

namespace {

// Elements counted between two questions to `cancelled`: a few milliseconds of counting (a
// multiple of 8, so that every block starts on a byte of any type).
constexpr std::uint64_t kCancelBlock = std::uint64_t{1} << 22U;

// Calls f(first element, element count) for each block of [0, count), asking `cancelled` before
// each: throws onnxmap::Error (cancelled) when it answers true.
template <typename F>
void by_blocks(std::uint64_t count, const std::function<bool()>& cancelled, F&& f) {
  for (std::uint64_t first = 0; first < count; first += kCancelBlock) {
    if (cancelled && cancelled()) {
      throw Error(ErrorKind::cancelled, "the statistics were cancelled after " +
                                            std::to_string(first) + " of " + std::to_string(count) +
                                            " elements");
    }
    f(first, std::min(kCancelBlock, count - first));
  }
}

}  // namespace

TensorStats tensor_stats_until(std::span<const std::byte> bytes, DataType type, std::uint64_t count,
                               unsigned bins, const std::function<bool()>& cancelled) {
  check_values(bytes, type, count);
  if (bins == 0) throw Error(ErrorKind::invalid_argument, "a histogram of 0 bins");
  const std::uint64_t bits = element_bits(type);
  if (counted_by_pattern(type, count)) {
    std::vector<std::uint64_t> counts(std::size_t{1} << bits);
    add_patterns(bytes.data(), 0, count, bits, counts);
    return stats_from_patterns(counts, type, count, bins);
  }
  const auto at = [&](std::uint64_t first) { return bytes.data() + first * bits / 8; };
  Accumulator sums;
  by_blocks(count, cancelled, [&](std::uint64_t first, std::uint64_t n) {
    guard_faults(bytes, [&]() noexcept {
      // Counted in a copy of the kernel's own, whose address does not escape: kept in registers.
      Accumulator local = sums;
      for_each_value(at(first), type, n, [&](double v) { local.add(v, 1); });
      sums = local;
    });
  });
  TensorStats s = sums.finish();
  s.count = count;
  s.histogram.assign(bins, 0);
  if (std::isnan(s.min)) return s;
  const Binner bin(s, bins);
  by_blocks(count, cancelled, [&](std::uint64_t first, std::uint64_t n) {
    guard_faults(bytes, [&]() noexcept {
      for_each_value(at(first), type, n, [&](double v) {
        if (std::isfinite(v)) ++s.histogram[bin(v)];
      });
    });
  });
  return s;
}

}  // namespace detail

}  // namespace onnxmap
