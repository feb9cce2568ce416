#include "onnxmap/stats.hpp"

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

// Every value of a 16- or 8-bit float type, decoded once: a table load per element instead of
// the bit arithmetic (the difference between a few hundred MB/s and memory speed).
template <std::size_t N, class Decode>
std::vector<double> table_of(Decode decode) {
  std::vector<double> out(N);
  for (std::size_t bits = 0; bits < N; ++bits) out[bits] = decode(static_cast<unsigned>(bits));
  return out;
}

const std::vector<double>& float16_table() {
  static const std::vector<double> table =
      table_of<65536>([](unsigned b) { return ieee_minifloat(b, 5, 10, 15); });
  return table;
}

// The 8-bit float types' values by bit pattern (NaN patterns as onnx.proto defines them).
const std::vector<double>& float8_table(DataType type) {
  using D = DataType;
  static const std::vector<double> e4m3fn =
      table_of<256>([](unsigned b) { return (b & 0x7FU) == 0x7FU ? kNaN : minifloat(b, 4, 3, 7); });
  static const std::vector<double> e4m3fnuz =
      table_of<256>([](unsigned b) { return b == 0x80U ? kNaN : minifloat(b, 4, 3, 8); });
  static const std::vector<double> e5m2 =
      table_of<256>([](unsigned b) { return ieee_minifloat(b, 5, 2, 15); });
  static const std::vector<double> e5m2fnuz =
      table_of<256>([](unsigned b) { return b == 0x80U ? kNaN : minifloat(b, 5, 2, 16); });
  static const std::vector<double> e8m0 = table_of<256>(
      [](unsigned b) { return b == 0xFFU ? kNaN : std::ldexp(1.0, static_cast<int>(b) - 127); });
  switch (type) {
    case D::float8e4m3fn: return e4m3fn;
    case D::float8e4m3fnuz: return e4m3fnuz;
    case D::float8e5m2: return e5m2;
    case D::float8e5m2fnuz: return e5m2fnuz;
    default: return e8m0;
  }
}

double bfloat16(const std::byte* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  const std::uint32_t bits = std::uint32_t{h} << 16U;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

unsigned nibble(const std::byte* p, std::uint64_t i) {
  return (byte_at(p, i / 2) >> (4 * (i % 2))) & 0xFU;
}
unsigned crumb(const std::byte* p, std::uint64_t i) {
  return (byte_at(p, i / 4) >> (2 * (i % 4))) & 0x3U;
}

// Calls use(decode) with the decoder of `type`: decode(p, i) is element i of the elements at p,
// as a double. One instantiation per type, so decoding is not a switch per element.
template <class Use>
void with_decoder(DataType type, Use&& use) {
  const auto run = [&](auto decode) { use(decode); };
  using D = DataType;
  switch (type) {
    case D::float32: return run([](const std::byte* p, auto i) { return load<float>(p + 4 * i); });
    case D::float64: return run([](const std::byte* p, auto i) { return load<double>(p + 8 * i); });
    case D::float16: {
      const double* table = float16_table().data();
      return run([table](const std::byte* p, auto i) {
        return table[byte_at(p, 2 * i) | byte_at(p, 2 * i + 1) << 8U];
      });
    }
    case D::bfloat16: return run([](const std::byte* p, auto i) { return bfloat16(p + 2 * i); });
    case D::float8e4m3fn:
    case D::float8e4m3fnuz:
    case D::float8e5m2:
    case D::float8e5m2fnuz:
    case D::float8e8m0: {
      const double* table = float8_table(type).data();
      return run([table](const std::byte* p, auto i) { return table[byte_at(p, i)]; });
    }
    case D::float4e2m1:
      return run([](const std::byte* p, auto i) { return minifloat(nibble(p, i), 2, 1, 1); });
    case D::int8: return run([](const std::byte* p, auto i) { return load<std::int8_t>(p + i); });
    case D::uint8: return run([](const std::byte* p, auto i) { return load<std::uint8_t>(p + i); });
    case D::boolean:
      return run([](const std::byte* p, auto i) { return byte_at(p, i) != 0 ? 1.0 : 0.0; });
    case D::int16:
      return run([](const std::byte* p, auto i) { return load<std::int16_t>(p + 2 * i); });
    case D::uint16:
      return run([](const std::byte* p, auto i) { return load<std::uint16_t>(p + 2 * i); });
    case D::int32:
      return run([](const std::byte* p, auto i) { return load<std::int32_t>(p + 4 * i); });
    case D::uint32:
      return run([](const std::byte* p, auto i) { return load<std::uint32_t>(p + 4 * i); });
    case D::int64:
      return run([](const std::byte* p, auto i) { return load<std::int64_t>(p + 8 * i); });
    case D::uint64:
      return run([](const std::byte* p, auto i) { return load<std::uint64_t>(p + 8 * i); });
    case D::uint4:
      return run([](const std::byte* p, auto i) { return static_cast<double>(nibble(p, i)); });
    case D::int4:
      return run([](const std::byte* p, auto i) {
        const int v = static_cast<int>(nibble(p, i));
        return static_cast<double>(v >= 8 ? v - 16 : v);
      });
    case D::uint2:
      return run([](const std::byte* p, auto i) { return static_cast<double>(crumb(p, i)); });
    case D::int2:
      return run([](const std::byte* p, auto i) {
        const int v = static_cast<int>(crumb(p, i));
        return static_cast<double>(v >= 2 ? v - 4 : v);
      });
    default: return;
  }
}

// Calls f(value) for each of the `count` elements of `type` at `p`.
template <class F>
void for_each_value(const std::byte* p, DataType type, std::uint64_t count, F&& f) {
  with_decoder(type, [&](auto decode) {
    for (std::uint64_t i = 0; i < count; ++i) f(decode(p, i));
  });
}

// The value of bit pattern `bits` of a type of at most 16 bits.
double pattern_value(DataType type, unsigned bits) {
  using D = DataType;
  const auto sign_extend = [bits](unsigned width) {
    const int v = static_cast<int>(bits);
    return static_cast<double>(v >= (1 << (width - 1)) ? v - (1 << width) : v);
  };
  switch (type) {
    case D::float16: return float16_table()[bits];
    case D::bfloat16: {
      const std::uint16_t h = static_cast<std::uint16_t>(bits);
      return bfloat16(reinterpret_cast<const std::byte*>(&h));
    }
    case D::float4e2m1: return minifloat(bits, 2, 1, 1);
    case D::int8: return sign_extend(8);
    case D::int16: return sign_extend(16);
    case D::int4: return sign_extend(4);
    case D::int2: return sign_extend(2);
    case D::boolean: return bits != 0 ? 1.0 : 0.0;
    case D::uint8:
    case D::uint16:
    case D::uint4:
    case D::uint2: return static_cast<double>(bits);
    default: return float8_table(type)[bits];
  }
}

// How many elements hold each bit pattern, for a type of at most 16 bits: one pass of counter
// increments, two sets of counters taking turns so that a run of equal values does not wait on
// its own last increment.
std::vector<std::uint64_t> count_patterns(const std::byte* p, std::uint64_t count,
                                          std::uint64_t bits) {
  const std::size_t patterns = std::size_t{1} << bits;
  std::vector<std::uint64_t> counts(2 * patterns);
  std::uint64_t* even = counts.data();
  std::uint64_t* odd = counts.data() + patterns;
  const auto pattern = [p, bits](std::uint64_t i) -> unsigned {
    if (bits == 16) return byte_at(p, 2 * i) | byte_at(p, 2 * i + 1) << 8U;
    if (bits == 8) return byte_at(p, i);
    return bits == 4 ? nibble(p, i) : crumb(p, i);
  };
  std::uint64_t i = 0;
  for (; i + 1 < count; i += 2) {
    ++even[pattern(i)];
    ++odd[pattern(i + 1)];
  }
  if (i < count) ++even[pattern(i)];
  for (std::size_t k = 0; k < patterns; ++k) even[k] += odd[k];
  counts.resize(patterns);
  return counts;
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

}  // namespace

bool has_stats(DataType type) noexcept {
  const auto t = traits(type);
  return t && t->bits > 0 && type != DataType::string && type != DataType::complex64 &&
         type != DataType::complex128;
}

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

TensorStats tensor_stats(std::span<const std::byte> bytes, DataType type, std::uint64_t count,
                         unsigned bins) {
  check_values(bytes, type, count);
  if (bins == 0) throw Error(ErrorKind::invalid_argument, "a histogram of 0 bins");
  const std::uint64_t bits = traits(type)->bits;
  Accumulator sums;
  std::vector<std::uint64_t> counts;  // by bit pattern, for types of at most 16 bits
  if (bits <= 16) {
    counts = count_patterns(bytes.data(), count, bits);
    for (std::size_t k = 0; k < counts.size(); ++k) {
      if (counts[k] != 0) sums.add(pattern_value(type, static_cast<unsigned>(k)), counts[k]);
    }
  } else {
    for_each_value(bytes.data(), type, count, [&](double v) { sums.add(v, 1); });
  }
  TensorStats s = sums.finish();
  s.count = count;
  s.histogram.assign(bins, 0);
  if (std::isnan(s.min)) return s;
  const Binner bin(s, bins);
  if (bits <= 16) {
    for (std::size_t k = 0; k < counts.size(); ++k) {
      const double v = pattern_value(type, static_cast<unsigned>(k));
      if (counts[k] != 0 && std::isfinite(v)) s.histogram[bin(v)] += counts[k];
    }
  } else {
    for_each_value(bytes.data(), type, count, [&](double v) {
      if (std::isfinite(v)) ++s.histogram[bin(v)];
    });
  }
  return s;
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
