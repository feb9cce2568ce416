// ChunkFeed, which hands a level's chunks to the pass's threads: the front taker gets the level's
// first chunks in file order, and is told they are contiguous for as long as no one else took
// from the front before cutting was over (its children then go straight into the index); once it
// is over, the others take the second half of what is left and then the first half's last
// chunks, so that each chunk is taken exactly once and the front keeps a long run.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
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

constexpr std::uint32_t kNone = UINT32_MAX;  // no chunk left

Take take(ChunkFeed& feed, bool front_taker) {
  ChunkFeed::Taken taken;
  if (!feed.take(front_taker, taken)) return {kNone, false};
  return {taken.chunk.begin, taken.contiguous};
}

// One take and what it should give.
struct Step {
  bool front_taker;
  std::uint32_t chunk;
  bool contiguous;
};

void expect_takes(ChunkFeed& feed, std::initializer_list<Step> steps) {
  int n = 0;
  for (const Step& step : steps) {
    SCOPED_TRACE("take " + std::to_string(n++));
    const Take got = take(feed, step.front_taker);
    EXPECT_EQ(got.chunk, step.chunk);
    EXPECT_EQ(got.contiguous, step.contiguous);
  }
}

constexpr bool kFront = true;
constexpr bool kOther = false;

TEST(ChunkFeed, ClosedFeedIsHalvedBetweenFrontAndOthers) {
  ChunkFeed feed;
  push_chunks(feed, 0, 6);
  expect_takes(feed, {{kFront, 0, true}, {kFront, 1, true}});
  feed.close();
  // Chunks 2 to 5 are left: the front taker has 2 and 3, the others 4 and 5.
  expect_takes(feed, {{kOther, 4, false},
                      {kFront, 2, true},
                      {kOther, 5, false},
                      {kFront, 3, true},
                      {kFront, kNone, false},
                      {kOther, kNone, false}});
  EXPECT_EQ(feed.results().size(), 6U);
}

// Takers done with their half take from the other's: the others take the first half's last
// chunks, so the front taker's run stays contiguous; the front taker goes on with the second
// half's next chunks. No chunk is taken twice.
TEST(ChunkFeed, TakersDoneWithTheirHalfTakeFromTheOther) {
  ChunkFeed feed;
  push_chunks(feed, 0, 8);
  expect_takes(feed, {{kFront, 0, true}});
  feed.close();  // 1 to 4 for the front, 5 to 7 for the others
  expect_takes(feed, {{kOther, 5, false},
                      {kOther, 6, false},
                      {kOther, 7, false},
                      {kOther, 4, false},
                      {kFront, 1, true},
                      {kFront, 2, true},
                      {kOther, 3, false},
                      {kFront, kNone, false},
                      {kOther, kNone, false}});
}

TEST(ChunkFeed, FrontTakerDoneFirstGoesOnWithTheSecondHalf) {
  ChunkFeed feed;
  push_chunks(feed, 0, 6);
  feed.close();  // 0 to 2 for the front, 3 to 5 for the others
  expect_takes(feed, {{kFront, 0, true},
                      {kFront, 1, true},
                      {kFront, 2, true},
                      {kOther, 3, false},
                      {kFront, 4, false},
                      {kOther, 5, false},
                      {kFront, kNone, false}});
}

TEST(ChunkFeed, AnotherTakerAtTheFrontEndsTheContiguousRun) {
  ChunkFeed feed;
  push_chunks(feed, 0, 4);
  // Still being cut: the other taker takes from the front.
  expect_takes(feed, {{kFront, 0, true}, {kOther, 1, false}, {kFront, 2, false}});
  feed.close();
  expect_takes(feed, {{kFront, 3, false}});
}

TEST(ChunkFeed, TakersWaitForChunksAndCloseReleasesThem) {
  ChunkFeed feed;
  std::vector<std::uint32_t> front;
  std::vector<std::uint32_t> others;
  std::thread front_taker([&] {
    for (Take t = take(feed, true); t.chunk != kNone; t = take(feed, true)) {
      front.push_back(t.chunk);
    }
  });
  push_chunks(feed, 0, 100);
  feed.close();
  for (Take t = take(feed, false); t.chunk != kNone; t = take(feed, false)) {
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
