#include "onnxmap/stats.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

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

// Calls f(value) for each of the `count` elements of `type` at `p`, as doubles; one loop per
// type, so the decoding is not a switch per element.
template <class F>
void for_each_value(const std::byte* p, DataType type, std::uint64_t count, F&& f) {
  const auto run = [&](auto decode) {
    for (std::uint64_t i = 0; i < count; ++i) f(decode(i));
  };
  using D = DataType;
  switch (type) {
    case D::float32: return run([p](auto i) { return load<float>(p + 4 * i); });
    case D::float64: return run([p](auto i) { return load<double>(p + 8 * i); });
    case D::float16:
      return run([p](auto i) {
        return ieee_minifloat(byte_at(p, 2 * i) | byte_at(p, 2 * i + 1) << 8U, 5, 10, 15);
      });
    case D::bfloat16: return run([p](auto i) { return bfloat16(p + 2 * i); });
    case D::float8e4m3fn:
      return run([p](auto i) {
        const unsigned b = byte_at(p, i);
        return (b & 0x7FU) == 0x7FU ? kNaN : minifloat(b, 4, 3, 7);
      });
    case D::float8e4m3fnuz:
      return run([p](auto i) {
        const unsigned b = byte_at(p, i);
        return b == 0x80U ? kNaN : minifloat(b, 4, 3, 8);
      });
    case D::float8e5m2: return run([p](auto i) { return ieee_minifloat(byte_at(p, i), 5, 2, 15); });
    case D::float8e5m2fnuz:
      return run([p](auto i) {
        const unsigned b = byte_at(p, i);
        return b == 0x80U ? kNaN : minifloat(b, 5, 2, 16);
      });
    case D::float8e8m0:
      return run([p](auto i) {
        const unsigned b = byte_at(p, i);
        return b == 0xFFU ? kNaN : std::ldexp(1.0, static_cast<int>(b) - 127);
      });
    case D::float4e2m1: return run([p](auto i) { return minifloat(nibble(p, i), 2, 1, 1); });
    case D::int8: return run([p](auto i) { return load<std::int8_t>(p + i); });
    case D::uint8: return run([p](auto i) { return load<std::uint8_t>(p + i); });
    case D::boolean: return run([p](auto i) { return byte_at(p, i) != 0 ? 1.0 : 0.0; });
    case D::int16: return run([p](auto i) { return load<std::int16_t>(p + 2 * i); });
    case D::uint16: return run([p](auto i) { return load<std::uint16_t>(p + 2 * i); });
    case D::int32: return run([p](auto i) { return load<std::int32_t>(p + 4 * i); });
    case D::uint32: return run([p](auto i) { return load<std::uint32_t>(p + 4 * i); });
    case D::int64: return run([p](auto i) { return load<std::int64_t>(p + 8 * i); });
    case D::uint64: return run([p](auto i) { return load<std::uint64_t>(p + 8 * i); });
    case D::uint4: return run([p](auto i) { return static_cast<double>(nibble(p, i)); });
    case D::int4:
      return run([p](auto i) {
        const int v = static_cast<int>(nibble(p, i));
        return static_cast<double>(v >= 8 ? v - 16 : v);
      });
    case D::uint2: return run([p](auto i) { return static_cast<double>(crumb(p, i)); });
    case D::int2:
      return run([p](auto i) {
        const int v = static_cast<int>(crumb(p, i));
        return static_cast<double>(v >= 2 ? v - 4 : v);
      });
    default: return;
  }
}

// NumPy's rule: a range of one value is widened by 0.5 each way.
void fill_histogram(const std::byte* p, DataType type, std::uint64_t count, TensorStats& s) {
  double low = s.min;
  double high = s.max;
  if (low == high) {
    low -= 0.5;
    high += 0.5;
  }
  const auto bins = static_cast<double>(s.histogram.size());
  const double scale = bins / (high - low);
  for_each_value(p, type, count, [&](double v) {
    if (!std::isfinite(v)) return;
    auto bin = static_cast<std::size_t>((v - low) * scale);
    if (bin >= s.histogram.size()) bin = s.histogram.size() - 1;  // the last bin is closed
    ++s.histogram[bin];
  });
}

}  // namespace

bool has_stats(DataType type) noexcept {
  const auto t = traits(type);
  return t && t->bits > 0 && type != DataType::string && type != DataType::complex64 &&
         type != DataType::complex128;
}

TensorStats tensor_stats(std::span<const std::byte> bytes, DataType type, std::uint64_t count,
                         unsigned bins) {
  if (!has_stats(type)) {
    throw Error(ErrorKind::invalid_argument, "no statistics for " + to_string(type) + " values");
  }
  if (bins == 0) throw Error(ErrorKind::invalid_argument, "a histogram of 0 bins");
  const std::uint64_t bits = traits(type)->bits;
  if (count > bytes.size() * 8 / bits) {
    throw Error(ErrorKind::invalid_argument, std::to_string(bytes.size()) + " bytes for " +
                                                 std::to_string(count) + " " + to_string(type) +
                                                 " values");
  }
  TensorStats s;
  s.count = count;
  s.histogram.assign(bins, 0);
  // Welford's running mean and sum of squared deviations: stable on a billion values.
  std::uint64_t finite = 0;
  double mean = 0;
  double squares = 0;
  s.min = kInfinity;
  s.max = -kInfinity;
  for_each_value(bytes.data(), type, count, [&](double v) {
    if (std::isnan(v)) {
      ++s.nans;
      return;
    }
    if (std::isinf(v)) {
      ++s.infinities;
      return;
    }
    s.zeros += v == 0 ? 1 : 0;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    ++finite;
    const double delta = v - mean;
    mean += delta / static_cast<double>(finite);
    squares += delta * (v - mean);
  });
  if (finite == 0) {
    s.min = s.max = s.mean = s.stddev = kNaN;
    return s;
  }
  s.mean = mean;
  s.stddev = std::sqrt(squares / static_cast<double>(finite));
  fill_histogram(bytes.data(), type, count, s);
  return s;
}

}  // namespace onnxmap
