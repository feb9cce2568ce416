// ChunkFeed, which hands a level's chunks to the pass's threads: the front taker gets the level's
// first chunks in file order, and is told they are contiguous for as long as no one else took
// from the front (its children then go straight into the index); once cutting is over, the
// others take the second half of what is left, so that each chunk is taken exactly once and the
// front keeps a long run.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "index/chunk_feed.hpp"

namespace onnxmap::detail {
namespace {

// Chunks [from, to) for the feed, chunk i covering record i.
void push_chunks(ChunkFeed& feed, std::uint32_t from, std::uint32_t to) {
  for (std::uint32_t i = from; i < to; ++i) feed.push({i, i + 1, 0});
}

struct Take {
  std::uint32_t chunk;
  bool contiguous;
};

Take take(ChunkFeed& feed, bool front_taker) {
  ChunkFeed::Taken taken;
  if (!feed.take(front_taker, taken)) return {UINT32_MAX, false};
  return {taken.chunk.begin, taken.contiguous};
}

TEST(ChunkFeed, ClosedFeedIsHalvedBetweenFrontAndOthers) {
  ChunkFeed feed;
  push_chunks(feed, 0, 6);
  EXPECT_EQ(take(feed, true).chunk, 0U);
  EXPECT_TRUE(take(feed, true).contiguous);  // chunk 1
  feed.close();
  // Chunks 2 to 5 are left: the front taker has 2 and 3, the others 4 and 5.
  EXPECT_EQ(take(feed, false).chunk, 4U);
  const Take third = take(feed, true);
  EXPECT_EQ(third.chunk, 2U);
  EXPECT_TRUE(third.contiguous);
  EXPECT_EQ(take(feed, false).chunk, 5U);
  EXPECT_EQ(take(feed, true).chunk, 3U);
  EXPECT_EQ(take(feed, true).chunk, UINT32_MAX);
  EXPECT_EQ(take(feed, false).chunk, UINT32_MAX);
  EXPECT_EQ(feed.results().size(), 6U);
}

// A taker done with its half takes from the other's: the front taker's run then stops being
// contiguous, and no chunk is taken twice.
TEST(ChunkFeed, TakersDoneWithTheirHalfTakeFromTheOther) {
  ChunkFeed feed;
  push_chunks(feed, 0, 8);
  EXPECT_TRUE(take(feed, true).contiguous);  // chunk 0
  feed.close();                              // 1 to 4 for the front, 5 to 7 for the others
  EXPECT_EQ(take(feed, false).chunk, 5U);
  EXPECT_EQ(take(feed, false).chunk, 6U);
  EXPECT_EQ(take(feed, false).chunk, 7U);
  EXPECT_EQ(take(feed, false).chunk, 1U);
  const Take next = take(feed, true);
  EXPECT_EQ(next.chunk, 2U);
  EXPECT_FALSE(next.contiguous);
  EXPECT_EQ(take(feed, true).chunk, 3U);
  EXPECT_EQ(take(feed, true).chunk, 4U);
  EXPECT_EQ(take(feed, true).chunk, UINT32_MAX);
}

TEST(ChunkFeed, AnotherTakerAtTheFrontEndsTheContiguousRun) {
  ChunkFeed feed;
  push_chunks(feed, 0, 4);
  EXPECT_TRUE(take(feed, true).contiguous);  // chunk 0
  EXPECT_EQ(take(feed, false).chunk, 1U);    // still being cut: from the front
  const Take next = take(feed, true);
  EXPECT_EQ(next.chunk, 2U);
  EXPECT_FALSE(next.contiguous);
  feed.close();
  const Take last = take(feed, true);
  EXPECT_EQ(last.chunk, 3U);
  EXPECT_FALSE(last.contiguous);
}

TEST(ChunkFeed, TakersWaitForChunksAndCloseReleasesThem) {
  ChunkFeed feed;
  std::vector<std::uint32_t> front;
  std::vector<std::uint32_t> others;
  std::thread front_taker([&] {
    for (Take t = take(feed, true); t.chunk != UINT32_MAX; t = take(feed, true)) {
      front.push_back(t.chunk);
    }
  });
  push_chunks(feed, 0, 100);
  feed.close();
  for (Take t = take(feed, false); t.chunk != UINT32_MAX; t = take(feed, false)) {
    others.push_back(t.chunk);
  }
  front_taker.join();
  // Every chunk once; the front taker's from 0 up, in file order.
  std::vector<int> times(100, 0);
  for (const std::uint32_t c : front) ++times[c];
  for (const std::uint32_t c : others) ++times[c];
  EXPECT_EQ(std::count(times.begin(), times.end(), 1), 100);
  if (!front.empty()) {
    EXPECT_EQ(front[0], 0U);
  }
  EXPECT_TRUE(std::is_sorted(front.begin(), front.end()));
}

}  // namespace
}  // namespace onnxmap::detail
