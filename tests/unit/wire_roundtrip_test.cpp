// Random round trips: whatever the Writer writes, the Cursor reads back unchanged.

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <string>

#include "wire/cursor.hpp"

namespace onnxmap::wire {
namespace {

// A value with a random number of significant bits, so every varint length is exercised.
std::uint64_t random_width_value(std::mt19937_64& rng) {
  const unsigned bits = static_cast<unsigned>(rng() % 65);
  if (bits == 0) return 0;
  const std::uint64_t v = rng();
  return bits == 64 ? v : v & ((1ULL << bits) - 1);
}

TEST(WireRoundTrip, Varints) {
  std::mt19937_64 rng(20261122);
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t v = random_width_value(rng);
    Writer w;
    w.varint(v);
    ASSERT_EQ(w.bytes().size(), varint_size(v));
    std::size_t pos = 0;
    ASSERT_EQ(read_varint(w.bytes(), pos), v);
    ASSERT_EQ(pos, w.bytes().size());
  }
}

TEST(WireRoundTrip, SignedEncodings) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const auto v64 = static_cast<std::int64_t>(random_width_value(rng));
    const auto v32 = static_cast<std::int32_t>(static_cast<std::uint32_t>(rng()));
    ASSERT_EQ(zigzag_decode64(zigzag_encode64(v64)), v64);
    ASSERT_EQ(zigzag_decode32(zigzag_encode32(v32)), v32);
    ASSERT_EQ(as_int64(from_int64(v64)), v64);
    ASSERT_EQ(as_int32(from_int32(v32)), v32);
  }
}

// One field of a random message, remembered so it can be compared after reading.
struct Expected {
  std::uint32_t number;
  WireType type;
  std::uint64_t value;
  std::string payload;
};

TEST(WireRoundTrip, RandomMessages) {
  std::mt19937_64 rng(42);
  for (int message = 0; message < 500; ++message) {
    Writer w;
    std::vector<Expected> expected;
    const int fields = static_cast<int>(rng() % 40);
    for (int i = 0; i < fields; ++i) {
      const auto number = static_cast<std::uint32_t>(1 + rng() % kMaxFieldNumber);
      switch (rng() % 6) {
        case 0: {
          const std::uint64_t v = random_width_value(rng);
          w.field_varint(number, v);
          expected.push_back({number, WireType::varint, v, {}});
          break;
        }
        case 1: {
          const auto v = static_cast<std::uint32_t>(rng());
          w.field_fixed32(number, v);
          expected.push_back({number, WireType::i32, v, {}});
          break;
        }
        case 2: {
          const double d = std::uniform_real_distribution<double>(-1e300, 1e300)(rng);
          w.field_double(number, d);
          expected.push_back({number, WireType::i64, std::bit_cast<std::uint64_t>(d), {}});
          break;
        }
        case 3: {
          const float f = std::uniform_real_distribution<float>(-1e30F, 1e30F)(rng);
          w.field_float(number, f);
          expected.push_back({number, WireType::i32, std::bit_cast<std::uint32_t>(f), {}});
          break;
        }
        case 4: {
          const auto v = static_cast<std::int64_t>(rng());
          w.field_int64(number, v);
          expected.push_back({number, WireType::varint, from_int64(v), {}});
          break;
        }
        default: {
          std::string payload(rng() % 300, '\0');
          for (char& c : payload) c = static_cast<char>(rng());
          w.field_string(number, payload);
          expected.push_back({number, WireType::len, 0, payload});
          break;
        }
      }
    }
    Cursor r(w.bytes());
    const Field& f = r.field();
    std::size_t i = 0;
    while (r.next()) {
      ASSERT_LT(i, expected.size());
      EXPECT_EQ(f.number, expected[i].number);
      EXPECT_EQ(f.type, expected[i].type);
      if (f.type == WireType::len) {
        EXPECT_EQ(f.text(), expected[i].payload);
      } else {
        EXPECT_EQ(f.value, expected[i].value);
      }
      ++i;
    }
    EXPECT_EQ(i, expected.size());
  }
}

TEST(WireRoundTrip, PackedRuns) {
  std::mt19937_64 rng(3);
  for (int run = 0; run < 200; ++run) {
    std::vector<std::uint64_t> values(rng() % 100);
    for (auto& v : values) v = random_width_value(rng);
    Writer w;
    w.field_packed_varints(1, values);
    Cursor r(w.bytes());
    const Field& f = r.field();
    ASSERT_TRUE(r.next());
    std::vector<std::uint64_t> back;
    (void)for_each_varint(f, 0, [&](std::uint64_t v) { back.push_back(v); });
    EXPECT_EQ(back, values);
  }
}

}  // namespace
}  // namespace onnxmap::wire
