// PodTable, the storage of the index's big tables: every element survives each way it grows
// (mremap, the one copy into huge pages) and shrinks, and a table that outgrows 256 KiB
// gets 2 MiB at once, so that its first huge page is not spoiled by small pages touched before.

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

#include "index/pod_table.hpp"

namespace onnxmap::detail {
namespace {

struct Row {
  std::uint64_t a;
  std::uint32_t b;
  std::uint32_t c;
};

Row row_for(std::size_t i) {
  return {i * 0x9E3779B97F4A7C15ULL, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(~i)};
}

// The index of the first element that is not row_for(i), or table.size() when all are.
std::size_t first_wrong(const PodTable<Row>& table) {
  for (std::size_t i = 0; i < table.size(); ++i) {
    const Row expected = row_for(i);
    const Row& got = table[i];
    if (got.a != expected.a || got.b != expected.b || got.c != expected.c) return i;
  }
  return table.size();
}

TEST(PodTable, KeepsEveryElementWhileGrowingPastHugePages) {
  PodTable<Row> table;
  constexpr std::size_t kCount = 600'000;  // 9.6 MB: through the small, jump and huge regimes
  std::size_t last_capacity = 0;
  for (std::size_t i = 0; i < kCount; ++i) {
    table.push_back(row_for(i));
    if (table.capacity() != last_capacity) {
      // Checked at each growth: a lost or shifted element shows where it happened.
      ASSERT_EQ(first_wrong(table), table.size()) << "after growing to " << table.capacity();
      last_capacity = table.capacity();
    }
  }
  EXPECT_EQ(first_wrong(table), kCount);
  table.shrink_to_fit();
  EXPECT_EQ(table.capacity(), kCount);
  EXPECT_EQ(first_wrong(table), kCount);
}

TEST(PodTable, OutgrowingSmallJumpsToTwoMiB) {
  constexpr std::size_t kSmallRows = (std::size_t{256} << 10U) / sizeof(Row);
  constexpr std::size_t kHugeRows = (std::size_t{2} << 20U) / sizeof(Row);
  PodTable<Row> table;
  while (table.size() < kSmallRows) table.push_back(row_for(table.size()));
  EXPECT_LE(table.capacity(), kSmallRows);
  table.push_back(row_for(table.size()));
  if (kTablesInMappings) {
    EXPECT_EQ(table.capacity(), kHugeRows);
  } else {
    EXPECT_GT(table.capacity(), kSmallRows);
  }
  EXPECT_EQ(first_wrong(table), table.size());
}

TEST(PodTable, TruncateAndShrinkKeepTheHead) {
  PodTable<Row> table;
  for (std::size_t i = 0; i < 200'000; ++i) table.push_back(row_for(i));
  EXPECT_EQ(first_wrong(table), table.size());
  table.truncate(70'000);
  table.shrink_to_fit();
  EXPECT_EQ(table.size(), 70'000U);
  EXPECT_EQ(first_wrong(table), table.size());
  PodTable<Row> moved(std::move(table));
  EXPECT_EQ(first_wrong(moved), 70'000U);
}

// assign_zeros hands out fresh storage instead of writing zeros: a table that held rows, small or
// in huge pages, must read as zeros after it, whatever its size was before.
TEST(PodTable, AssignZerosReadsAsZerosAfterHoldingRows) {
  for (const std::size_t rows : {std::size_t{100}, std::size_t{300'000}}) {
    PodTable<Row> table;
    for (std::size_t i = 0; i < rows; ++i) table.push_back(row_for(i + 1));
    for (const std::size_t zeros : {rows / 2, rows * 2, std::size_t{0}, std::size_t{7}}) {
      table.assign_zeros(zeros);
      ASSERT_EQ(table.size(), zeros);
      std::size_t nonzero = 0;
      for (const Row& row : table) nonzero += row.a != 0 || row.b != 0 || row.c != 0 ? 1 : 0;
      EXPECT_EQ(nonzero, 0U) << rows << " rows, then " << zeros << " zeros";
      for (Row& row : table) row = row_for(3);  // dirty it before the next round
    }
  }
}

}  // namespace
}  // namespace onnxmap::detail
