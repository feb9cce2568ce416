#include "onnxmap/stats.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "onnxmap/error.hpp"

namespace onnxmap {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInfinity = std::numeric_limits<double>::infinity();

template <class T>
double load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<double>(v);
}

unsigned byte_at(const std::byte* p, std::uint64_t i) {
  return std::to_integer<unsigned>(p[i]);
}

// A sign bit, `exponent` bits and `mantissa` bits, finite (the callers handle their NaN and
// infinity patterns first): subnormal when the exponent field is 0.
double minifloat(unsigned bits, int exponent, int mantissa, int bias) {
  const unsigned e = (bits >> mantissa) & ((1U << exponent) - 1);
  const unsigned m = bits & ((1U << mantissa) - 1);
  const double magnitude =
      e == 0 ? std::ldexp(m, 1 - bias - mantissa)
             : std::ldexp(m + (1U << mantissa), static_cast<int>(e) - bias - mantissa);
  return ((bits >> (exponent + mantissa)) & 1U) != 0 ? -magnitude : magnitude;
}

// IEEE-style: an all-ones exponent is infinity (mantissa 0) or NaN.
double ieee_minifloat(unsigned bits, int exponent, int mantissa, int bias) {
  const unsigned all_ones = (1U << exponent) - 1;
  if (((bits >> mantissa) & all_ones) == all_ones) {
    if ((bits & ((1U << mantissa) - 1)) != 0) return kNaN;
    return ((bits >> (exponent + mantissa)) & 1U) != 0 ? -kInfinity : kInfinity;
  }
  return minifloat(bits, exponent, mantissa, bias);
}

// The value of bit pattern `bits` of `type`, a type of at most 16 bits (NaN and infinity
// patterns as onnx.proto defines them).
double pattern_value(DataType type, unsigned bits) {
  using D = DataType;
  const auto sign_extend = [bits](int width) {
    const int v = static_cast<int>(bits);
    return static_cast<double>(v >= (1 << (width - 1)) ? v - (1 << width) : v);
  };
  switch (type) {
    case D::float16: return ieee_minifloat(bits, 5, 10, 15);
    case D::bfloat16: return std::bit_cast<float>(std::uint32_t{bits} << 16U);
    case D::float8e4m3fn: return (bits & 0x7FU) == 0x7FU ? kNaN : minifloat(bits, 4, 3, 7);
    case D::float8e4m3fnuz: return bits == 0x80U ? kNaN : minifloat(bits, 4, 3, 8);
    case D::float8e5m2: return ieee_minifloat(bits, 5, 2, 15);
    case D::float8e5m2fnuz: return bits == 0x80U ? kNaN : minifloat(bits, 5, 2, 16);
    case D::float8e8m0: return bits == 0xFFU ? kNaN : std::ldexp(1.0, static_cast<int>(bits) - 127);
    case D::float4e2m1: return minifloat(bits, 2, 1, 1);
    case D::int8: return sign_extend(8);
    case D::int16: return sign_extend(16);
    case D::int4: return sign_extend(4);
    case D::int2: return sign_extend(2);
    case D::boolean: return bits != 0 ? 1.0 : 0.0;
    default: return static_cast<double>(bits);  // the unsigned types
  }
}

// Every value of every type of at most 16 bits by bit pattern, decoded once per process (about
// 2 MiB): a table load per element instead of the bit arithmetic.
const std::vector<double>& values_by_pattern(DataType type) {
  static const auto tables = [] {
    std::array<std::vector<double>, kMaxDataType + 1> out;
    for (int t = 0; t <= kMaxDataType; ++t) {
      const auto small = static_cast<DataType>(t);
      if (!has_stats(small) || traits(small)->bits > 16) continue;
      out[t].resize(std::size_t{1} << traits(small)->bits);
      for (std::size_t k = 0; k < out[t].size(); ++k) {
        out[t][k] = pattern_value(small, static_cast<unsigned>(k));
      }
    }
    return out;
  }();
  return tables[static_cast<std::size_t>(type)];
}

// The bit pattern of element i of a type of `bits` (16, 8, 4 or 2) bits; sub-byte elements
// from the low bits of each byte up.
unsigned pattern_at(const std::byte* p, std::uint64_t i, std::uint64_t bits) {
  if (bits == 16) return byte_at(p, 2 * i) | byte_at(p, 2 * i + 1) << 8U;
  if (bits == 8) return byte_at(p, i);
  const std::uint64_t per_byte = 8 / bits;
  return (byte_at(p, i / per_byte) >> (bits * (i % per_byte))) & ((1U << bits) - 1);
}

// Calls use(decode) with the decoder of `type`: decode(p, i) is element i of the elements at p,
// as a double. One instantiation per wide type, and one per width of the others, which look
// their values up by bit pattern.
template <class Use>
void with_decoder(DataType type, Use&& use) {
  using D = DataType;
  switch (type) {
    case D::float32: return use([](const std::byte* p, auto i) { return load<float>(p + 4 * i); });
    case D::float64: return use([](const std::byte* p, auto i) { return load<double>(p + 8 * i); });
    case D::int32:
      return use([](const std::byte* p, auto i) { return load<std::int32_t>(p + 4 * i); });
    case D::uint32:
      return use([](const std::byte* p, auto i) { return load<std::uint32_t>(p + 4 * i); });
    case D::int64:
      return use([](const std::byte* p, auto i) { return load<std::int64_t>(p + 8 * i); });
    case D::uint64:
      return use([](const std::byte* p, auto i) { return load<std::uint64_t>(p + 8 * i); });
    default: break;
  }
  const double* table = values_by_pattern(type).data();
  const std::uint64_t bits = traits(type)->bits;
  if (bits == 16) {
    return use([table](const std::byte* p, auto i) { return table[pattern_at(p, i, 16)]; });
  }
  if (bits == 8) {
    return use([table](const std::byte* p, auto i) { return table[byte_at(p, i)]; });
  }
  use([table, bits](const std::byte* p, auto i) { return table[pattern_at(p, i, bits)]; });
}

// Calls f(value) for each of the `count` elements of `type` at `p`.
template <class F>
void for_each_value(const std::byte* p, DataType type, std::uint64_t count, F&& f) {
  with_decoder(type, [&](auto decode) {
    for (std::uint64_t i = 0; i < count; ++i) f(decode(p, i));
  });
}

// How many elements hold each bit pattern, for a type of at most 16 bits: one pass of counter
// increments, two sets of counters taking turns so that a run of equal values does not wait on
// its own last increment.
// Counts elements [begin, end) by bit pattern into `even` and `odd` (two tables, so that
// neighbours equal to each other do not wait on one counter), `bits` fixed at compile time.
template <unsigned Bits>
void count_run(const std::byte* p, std::uint64_t begin, std::uint64_t end, std::uint32_t* even,
               std::uint32_t* odd) {
  std::uint64_t i = begin;
  if constexpr (Bits == 16) {
    // Four patterns a load: a third faster than two loads of a byte each per pattern.
    for (; i + 4 <= end; i += 4) {
      std::uint64_t word = 0;
      std::memcpy(&word, p + 2 * i, sizeof word);
      if constexpr (std::endian::native == std::endian::big) word = __builtin_bswap64(word);
      ++even[word & 0xFFFFU];
      ++odd[(word >> 16U) & 0xFFFFU];
      ++even[(word >> 32U) & 0xFFFFU];
      ++odd[word >> 48U];
    }
  }
  for (; i + 1 < end; i += 2) {
    ++even[pattern_at(p, i, Bits)];
    ++odd[pattern_at(p, i + 1, Bits)];
  }
  if (i < end) ++even[pattern_at(p, i, Bits)];
}

// How many elements have each bit pattern. 32-bit counters (half the cache of 64-bit ones),
// added into the 64-bit totals every 2^31 elements.
std::vector<std::uint64_t> count_patterns(const std::byte* p, std::uint64_t count,
                                          std::uint64_t bits) {
  constexpr std::uint64_t kRun = std::uint64_t{1} << 31U;
  const std::size_t patterns = std::size_t{1} << bits;
  std::vector<std::uint64_t> totals(patterns);
  std::vector<std::uint32_t> counts(2 * patterns);
  for (std::uint64_t begin = 0; begin < count; begin += kRun) {
    const std::uint64_t end = std::min(count, begin + kRun);
    std::uint32_t* even = counts.data();
    std::uint32_t* odd = counts.data() + patterns;
    switch (bits) {
      case 16: count_run<16>(p, begin, end, even, odd); break;
      case 8: count_run<8>(p, begin, end, even, odd); break;
      case 4: count_run<4>(p, begin, end, even, odd); break;
      default: count_run<2>(p, begin, end, even, odd); break;
    }
    for (std::size_t k = 0; k < patterns; ++k) totals[k] += std::uint64_t{even[k]} + odd[k];
    std::fill(counts.begin(), counts.end(), 0);
  }
  return totals;
}

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

// tensor_stats' and compare_values' refusals.
void check_values(std::span<const std::byte> bytes, DataType type, std::uint64_t count) {
  if (!has_stats(type)) {
    throw Error(ErrorKind::invalid_argument, "no statistics for " + to_string(type) + " values");
  }
  if (count > bytes.size() * 8 / traits(type)->bits) {
    throw Error(ErrorKind::invalid_argument, std::to_string(bytes.size()) + " bytes for " +
                                                 std::to_string(count) + " " + to_string(type) +
                                                 " values");
  }
}

}  // namespace

bool has_stats(DataType type) noexcept {
  const auto t = traits(type);
  return t && t->bits > 0 && type != DataType::string && type != DataType::complex64 &&
         type != DataType::complex128;
}

TensorStats tensor_stats(std::span<const std::byte> bytes, DataType type, std::uint64_t count,
                         unsigned bins) {
  check_values(bytes, type, count);
  if (bins == 0) throw Error(ErrorKind::invalid_argument, "a histogram of 0 bins");
  const std::uint64_t bits = traits(type)->bits;
  Accumulator sums;
  std::vector<std::uint64_t> counts;  // by bit pattern, for types of at most 16 bits
  // Counting patterns pays once the values outnumber a quarter of the patterns; before that
  // (a norm's 64 float16 values) zeroing 65536 counters would cost more than the values.
  const bool by_pattern = bits <= 16 && count >= (std::uint64_t{1} << bits) / 4;
  const std::vector<double>& values = values_by_pattern(type);  // empty for the wide types
  if (by_pattern) {
    counts = count_patterns(bytes.data(), count, bits);
    for (std::size_t k = 0; k < counts.size(); ++k) {
      if (counts[k] != 0) sums.add(values[k], counts[k]);
    }
  } else {
    for_each_value(bytes.data(), type, count, [&](double v) { sums.add(v, 1); });
  }
  TensorStats s = sums.finish();
  s.count = count;
  s.histogram.assign(bins, 0);
  if (std::isnan(s.min)) return s;
  const Binner bin(s, bins);
  if (by_pattern) {
    for (std::size_t k = 0; k < counts.size(); ++k) {
      if (counts[k] != 0 && std::isfinite(values[k])) s.histogram[bin(values[k])] += counts[k];
    }
  } else {
    for_each_value(bytes.data(), type, count, [&](double v) {
      if (std::isfinite(v)) ++s.histogram[bin(v)];
    });
  }
  return s;
}

std::vector<double> decode_values(std::span<const std::byte> bytes, DataType type,
                                  std::uint64_t count) {
  check_values(bytes, type, count);
  std::vector<double> out;
  out.reserve(count);
  for_each_value(bytes.data(), type, count, [&](double v) { out.push_back(v); });
  return out;
}

ValuesDiff compare_values(std::span<const std::byte> a, std::span<const std::byte> b, DataType type,
                          std::uint64_t count, double tolerance) {
  check_values(a, type, count);
  check_values(b, type, count);
  const std::uint64_t bits = traits(type)->bits;
  // Chunks of whole bytes: 65536 elements of any type end on a byte boundary.
  constexpr std::uint64_t kChunk = 65536;
  ValuesDiff out;
  with_decoder(type, [&](auto decode) {
    for (std::uint64_t first = 0; first < count; first += kChunk) {
      const std::uint64_t last = std::min(count, first + kChunk);
      const std::size_t from = first * bits / 8;
      const std::size_t to = (last * bits + 7) / 8;
      if (std::memcmp(a.data() + from, b.data() + from, to - from) == 0) continue;
      for (std::uint64_t i = first; i < last; ++i) {
        const double x = decode(a.data(), i);
        const double y = decode(b.data(), i);
        if (x == y || (std::isnan(x) && std::isnan(y))) continue;
        if (!std::isfinite(x) || !std::isfinite(y)) {
          ++out.differing;
          continue;
        }
        const double gap = std::abs(x - y);
        if (gap <= tolerance) continue;
        ++out.differing;
        out.max_abs = std::max(out.max_abs, gap);
        out.max_rel = std::max(out.max_rel, gap / std::max(std::abs(x), std::abs(y)));
      }
    }
  });
  return out;
}

}  // namespace onnxmap
