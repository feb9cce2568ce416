// onnxmap::tensor_stats' refusals (its numbers are checked against numpy by
// tests/cli/stats_test.py, through `onnxmap stats`), the viewer's decode_values (lib/tooling/), and
// compare_values' rules.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "onnxmap/stats.hpp"
#include "stats/values.hpp"
#include "test_support.hpp"
#include "tooling.hpp"

namespace onnxmap {
namespace {

TEST(TensorStats, RefusesWhatItCannotCount) {
  const std::vector<std::byte> four(4);
  for (const DataType type : {DataType::string, DataType::complex64, DataType::complex128}) {
    EXPECT_FALSE(has_stats(type));
    const auto error = test::error_of([&] { (void)tensor_stats(four, type, 1); });
    ASSERT_TRUE(error.has_value());
    EXPECT_EQ(error->kind(), ErrorKind::invalid_argument);
  }
  // Two float32 values do not fit in 4 bytes; a histogram needs a bin.
  EXPECT_TRUE(test::error_of([&] { (void)tensor_stats(four, DataType::float32, 2); }));
  EXPECT_TRUE(test::error_of([&] { (void)tensor_stats(four, DataType::float32, 1, 0); }));
  // Eight INT4 values fit in 4 bytes, nine do not.
  EXPECT_FALSE(test::error_of([&] { (void)tensor_stats(four, DataType::int4, 8); }));
  EXPECT_TRUE(test::error_of([&] { (void)tensor_stats(four, DataType::int4, 9); }));
}

TEST(TensorStats, NoValuesAtAll) {
  const TensorStats s = tensor_stats({}, DataType::float16, 0);
  EXPECT_EQ(s.count, 0U);
  EXPECT_TRUE(std::isnan(s.min) && std::isnan(s.mean) && std::isnan(s.stddev));
  EXPECT_EQ(s.histogram, std::vector<std::uint64_t>(32, 0));
}

// A count of millions of values asks its cancel question every few million, and stops at the
// first yes with a cancelled error; never asked yes, it counts what tensor_stats counts.
TEST(TensorStats, AWholeCountIsCancelledBetweenBlocks) {
  std::vector<float> values(9'000'000);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 1000) - 500;
  std::vector<std::byte> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  int asked = 0;
  const auto error = test::error_of([&] {
    (void)detail::tensor_stats_until(bytes, DataType::float32, values.size(), 32,
                                     [&] { return ++asked == 2; });
  });
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->kind(), ErrorKind::cancelled);
  EXPECT_EQ(asked, 2);  // before the first block, then before the second
  EXPECT_NE(std::string(error->what()).find("cancelled after 4194304 of 9000000"),
            std::string::npos)
      << error->what();

  asked = 0;
  const TensorStats until = detail::tensor_stats_until(bytes, DataType::float32, values.size(), 32,
                                                       [&] { return ++asked < 0; });
  const TensorStats whole = tensor_stats(bytes, DataType::float32, values.size());
  EXPECT_EQ(asked, 6);  // three blocks, twice (the sums, then the histogram)
  EXPECT_EQ(until.min, whole.min);
  EXPECT_EQ(until.max, whole.max);
  EXPECT_EQ(until.mean, whole.mean);
  EXPECT_EQ(until.stddev, whole.stddev);
  EXPECT_EQ(until.histogram, whole.histogram);
  EXPECT_EQ(whole.min, -500);
  EXPECT_EQ(whole.max, 499);
}

TEST(DecodeValues, EachTypeAsNumbers) {
  // float16 1.0, -2.0, +inf; INT4 packed low bits first: 7, -8, 1; BOOL 0, 1.
  const std::vector<std::byte> half{std::byte{0x00}, std::byte{0x3c}, std::byte{0x00},
                                    std::byte{0xc0}, std::byte{0x00}, std::byte{0x7c}};
  EXPECT_EQ(tooling::decode_values(half, DataType::float16, 3),
            (std::vector<double>{1.0, -2.0, std::numeric_limits<double>::infinity()}));
  const std::vector<std::byte> int4{std::byte{0x87}, std::byte{0x01}};
  EXPECT_EQ(tooling::decode_values(int4, DataType::int4, 3), (std::vector<double>{7, -8, 1}));
  const std::vector<std::byte> flags{std::byte{0}, std::byte{1}};
  EXPECT_EQ(tooling::decode_values(flags, DataType::boolean, 2), (std::vector<double>{0, 1}));
  EXPECT_TRUE(tooling::decode_values(half, DataType::float16, 0).empty());
  // Refused as tensor_stats refuses: no numbers, or too few bytes.
  EXPECT_TRUE(test::error_of([&] { (void)tooling::decode_values(half, DataType::string, 1); }));
  EXPECT_TRUE(test::error_of([&] { (void)tooling::decode_values(half, DataType::float16, 4); }));
}

TEST(CompareValues, NaNEqualsNaNAndToleranceForgives) {
  const float nan = std::nanf("");
  const std::vector<float> a{1.0F, nan, 3.0F, 4.0F, 0.0F};
  const std::vector<float> b{1.0F, nan, 3.5F, nan, 1e-6F};
  const auto bytes = [](const std::vector<float>& v) { return std::as_bytes(std::span(v)); };
  const ValuesDiff d = compare_values(bytes(a), bytes(b), DataType::float32, 5);
  EXPECT_EQ(d.differing, 3U);  // 3.0 against 3.5, 4.0 against NaN, 0 against 1e-6
  EXPECT_DOUBLE_EQ(d.max_abs, 0.5);
  EXPECT_DOUBLE_EQ(d.max_rel, 1.0);  // 0 against 1e-6: all of it
  EXPECT_EQ(compare_values(bytes(a), bytes(b), DataType::float32, 5, 0.5).differing, 1U);
  EXPECT_EQ(compare_values(bytes(a), bytes(a), DataType::float32, 5).differing, 0U);
  // INT4, two to a byte: only the second element differs (7 against -8).
  const std::vector<std::byte> x{std::byte{0x71}};
  const std::vector<std::byte> y{std::byte{0x81}};
  const ValuesDiff n = compare_values(x, y, DataType::int4, 2);
  EXPECT_EQ(n.differing, 1U);
  EXPECT_DOUBLE_EQ(n.max_abs, 15.0);
  EXPECT_TRUE(test::error_of([&] { (void)compare_values(x, y, DataType::int4, 3); }));
}

}  // namespace
}  // namespace onnxmap
