// The graph index's name table and name sort (tools/onnxmap/viewer/name_table.hpp), against
// std::unordered_map and std::sort: many names (tags collide among 200,000, probes run into
// each other, the table grows from empty and from a reservation), an empty name, names that
// differ only past a NUL byte or past a long shared prefix.

#include "viewer/name_table.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

namespace onnxmap::cli::viewer {
namespace {

std::vector<std::string> hostile_names() {
  std::vector<std::string> names;
  for (int i = 0; i < 200000; ++i) names.push_back("model.layers." + std::to_string(i) + ".mlp");
  names.push_back("");
  names.push_back(std::string("a\0b", 3));
  names.push_back(std::string("a\0c", 3));
  names.push_back(std::string("a\0", 2));
  names.push_back("a");
  const std::string shared(100, 'x');  // past the sort's chunked bytes
  for (const char* tail : {"b", "a", "", "ab", "\xff", "a"}) names.push_back(shared + tail);
  for (int i = 0; i < 1000; ++i) names.push_back(names[static_cast<std::size_t>(i) * 37]);
  return names;
}

void check_interning(NameTable& table, const std::vector<std::string>& names) {
  std::unordered_map<std::string_view, std::uint32_t> expected;
  for (const std::string& name : names) {
    const auto [fresh_id, fresh] = expected.try_emplace(name, expected.size());
    const auto [id, is_new] = table.intern(name);
    ASSERT_EQ(id, fresh_id->second) << name;
    ASSERT_EQ(is_new, fresh) << name;
  }
  ASSERT_EQ(table.size(), expected.size());
  for (const auto& [name, id] : expected) {
    ASSERT_EQ(table.find(name), id) << name;
    ASSERT_EQ(table.name(id), name);
  }
  for (const std::string& absent : {std::string("model.layers.200000.mlp"), std::string("b"),
                                    std::string("a\0d", 3), std::string("model.layers.1.ml")}) {
    EXPECT_FALSE(table.contains(absent)) << absent;
  }
  EXPECT_EQ(table.find(std::string(101, 'x')), NameTable::kNone);
}

TEST(NameTable, InternsAndFindsLikeAHashMapGrowingFromEmpty) {
  const std::vector<std::string> names = hostile_names();
  NameTable table;
  EXPECT_EQ(table.find("a"), NameTable::kNone);  // an empty table has no slot to probe
  check_interning(table, names);
}

TEST(NameTable, InternsAndFindsLikeAHashMapPastItsReservation) {
  const std::vector<std::string> names = hostile_names();
  NameTable table;
  table.reserve(1000);
  check_interning(table, names);
}

TEST(SortedByName, OrdersLikeStdSortThenByIndex) {
  const std::vector<std::string> owned = hostile_names();
  std::vector<std::string_view> names(owned.begin(), owned.end());
  std::vector<std::uint32_t> expected(names.size());
  std::iota(expected.begin(), expected.end(), 0);
  std::sort(expected.begin(), expected.end(), [&](std::uint32_t a, std::uint32_t b) {
    return names[a] != names[b] ? names[a] < names[b] : a < b;
  });
  EXPECT_EQ(sorted_by_name(names), expected);
  EXPECT_TRUE(sorted_by_name({}).empty());
}

}  // namespace
}  // namespace onnxmap::cli::viewer
