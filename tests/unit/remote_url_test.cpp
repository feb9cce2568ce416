// The pieces of remote reading that need no server: held ranges, URL resolution and its path
// policy, the cache record. (tests/remote/ runs everything against a server on loopback.)

#include <gtest/gtest.h>

#include "onnxmap/error.hpp"
#include "onnxmap/options.hpp"
#include "remote/cache_record.hpp"
#include "remote/range_set.hpp"
#include "remote/url.hpp"
#include "test_support.hpp"

namespace onnxmap::remote {
namespace {

TEST(RangeSet, MergesTouchingRangesAndListsGaps) {
  RangeSet set;
  set.add(10, 10);  // [10, 20)
  set.add(30, 5);   // [30, 35)
  set.add(20, 2);   // touches: [10, 22)
  ASSERT_EQ(set.ranges().size(), 2U);
  EXPECT_EQ(set.ranges().at(10), 22U);
  const auto gaps = set.missing(0, 40);
  ASSERT_EQ(gaps.size(), 3U);
  EXPECT_EQ(gaps[0].offset, 0U);
  EXPECT_EQ(gaps[0].length, 10U);
  EXPECT_EQ(gaps[1].offset, 22U);
  EXPECT_EQ(gaps[1].length, 8U);
  EXPECT_EQ(gaps[2].offset, 35U);
  EXPECT_EQ(gaps[2].length, 5U);
  EXPECT_TRUE(set.missing(12, 5).empty());
  set.add(0, 100);
  EXPECT_EQ(set.ranges().size(), 1U);
}

TEST(RemoteUrl, RecognizesUrls) {
  EXPECT_TRUE(is_url("http://h/m.onnx"));
  EXPECT_TRUE(is_url("HTTPS://h/m.onnx"));
  EXPECT_FALSE(is_url("model.onnx"));
  EXPECT_FALSE(is_url("ftp://h/m.onnx"));
  EXPECT_FALSE(is_url("http://"));
}

TEST(RemoteUrl, ResolvesLocationsInTheModelsFolder) {
  EXPECT_EQ(resolve_location("https://h/a/m.onnx?sig=1", "w.bin"), "https://h/a/w.bin");
  EXPECT_EQ(resolve_location("https://h/a/m.onnx", "sub/./w 1.bin"), "https://h/a/sub/w%201.bin");
  EXPECT_EQ(resolve_location("https://h/a/m.onnx", "x:y//z"), "https://h/a/x%3Ay/z");
}

TEST(RemoteUrl, RefusesLocationsLeavingTheFolder) {
  for (const char* bad :
       {"", "../w.bin", "a/../../w.bin", "/etc/passwd", "//evil.com/w", "a\nb", "."}) {
    try {
      (void)resolve_location("https://h/a/m.onnx", bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::unsafe_path) << bad;
    }
  }
}

TEST(RemoteUrl, NamesTheMirrorAfterTheUrl) {
  EXPECT_EQ(file_name("https://h/a/my%20model.onnx?x=1"), "my model.onnx");
  EXPECT_EQ(file_name("https://h/a/"), "model.onnx");
  EXPECT_EQ(file_name("https://h/a/%2E%2E"), "model.onnx");
  EXPECT_EQ(file_name("https://h/a/b%2Fc"), "model.onnx");
}

class CacheRecordTest : public test::TempFolder {};

TEST_F(CacheRecordTest, RoundTripsAndRejectsDamage) {
  CacheRecord record{"https://h/m.onnx", {{"", {100, "\"e\"", "Mon, 1 Jan"}, {}}}};
  record.files[0].held.add(0, 10);
  record.files[0].held.add(50, 20);
  record.files.push_back({"d/w.bin", {5000, "", ""}, {}});
  const auto path = at("record");
  write_record(path, record);
  const auto read = read_record(path);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->url, record.url);
  ASSERT_EQ(read->files.size(), 2U);
  EXPECT_EQ(read->files[0].validators, record.files[0].validators);
  EXPECT_EQ(read->files[0].held.ranges(), record.files[0].held.ranges());
  EXPECT_EQ(read->files[1].location, "d/w.bin");
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 8);
  EXPECT_FALSE(read_record(path));
  EXPECT_FALSE(read_record(at("absent")));
}

}  // namespace
}  // namespace onnxmap::remote
