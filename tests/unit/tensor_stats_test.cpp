// onnxmap::tensor_stats' refusals (its numbers are checked against numpy by
// tests/cli/stats_test.py, through `onnxmap stats`).

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "onnxmap/stats.hpp"
#include "test_support.hpp"

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

}  // namespace
}  // namespace onnxmap
