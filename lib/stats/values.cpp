// Element values by bit pattern, and the checks of the statistics' entry points (values.hpp).

#include "stats/values.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "onnxmap/error.hpp"
#include "onnxmap/stats.hpp"

namespace onnxmap::detail {

namespace {

constexpr double kPatternNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kPatternInfinity = std::numeric_limits<double>::infinity();

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
    if ((bits & ((1U << mantissa) - 1)) != 0) return kPatternNaN;
    return ((bits >> (exponent + mantissa)) & 1U) != 0 ? -kPatternInfinity : kPatternInfinity;
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
    case D::float8e4m3fn: return (bits & 0x7FU) == 0x7FU ? kPatternNaN : minifloat(bits, 4, 3, 7);
    case D::float8e4m3fnuz: return bits == 0x80U ? kPatternNaN : minifloat(bits, 4, 3, 8);
    case D::float8e5m2: return ieee_minifloat(bits, 5, 2, 15);
    case D::float8e5m2fnuz: return bits == 0x80U ? kPatternNaN : minifloat(bits, 5, 2, 16);
    case D::float8e8m0:
      return bits == 0xFFU ? kPatternNaN : std::ldexp(1.0, static_cast<int>(bits) - 127);
    case D::float4e2m1: return minifloat(bits, 2, 1, 1);
    case D::int8: return sign_extend(8);
    case D::int16: return sign_extend(16);
    case D::int4: return sign_extend(4);
    case D::int2: return sign_extend(2);
    case D::boolean: return bits != 0 ? 1.0 : 0.0;
    default: return static_cast<double>(bits);  // the unsigned types
  }
}

}  // namespace

// About 2 MiB for every type: a table load per element instead of the bit arithmetic.
const std::vector<double>& values_by_pattern(DataType type) {
  static const auto tables = [] {
    std::array<std::vector<double>, kMaxDataType + 1> out;
    for (int t = 0; t <= kMaxDataType; ++t) {
      const auto small = static_cast<DataType>(t);
      if (!has_stats(small) || element_bits(small) > 16) continue;
      out[t].resize(std::size_t{1} << element_bits(small));
      for (std::size_t k = 0; k < out[t].size(); ++k) {
        out[t][k] = pattern_value(small, static_cast<unsigned>(k));
      }
    }
    return out;
  }();
  return tables[static_cast<std::size_t>(type)];
}

void check_values(std::span<const std::byte> bytes, DataType type, std::uint64_t count) {
  if (!has_stats(type)) {
    throw Error(ErrorKind::invalid_argument, "no statistics for " + to_string(type) + " values");
  }
  if (count > bytes.size() * 8 / element_bits(type)) {
    throw Error(ErrorKind::invalid_argument, std::to_string(bytes.size()) + " bytes for " +
                                                 std::to_string(count) + " " + to_string(type) +
                                                 " values");
  }
}

}  // namespace onnxmap::detail
