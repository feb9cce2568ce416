#pragma once
// Hands the chunks of one level of the indexing pass from the thread that cuts them to the
// threads that scan them, as they are cut: cutting a large graph into runs steps over every one
// of its fields, which the pool scans the first runs during instead of waiting for.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>

#include "index/level_output.hpp"

namespace onnxmap::detail {

// One task's work: whole records [begin, end), or when `split` one run of the fields of record
// `begin`. Its tensors, if any, get ids from `first_tensor` on.
struct LevelChunk {
  std::uint32_t begin;
  std::uint32_t end;
  std::uint32_t first_tensor;
  bool split = false;
  Span span{};
};

// Chunks are taken from two cursors, each in file order (taking them from the back slowed the
// scan of graph-heavy's graph by about 1.5 ms in its best runs). Until the feed is closed, every
// taker takes from the front. Once it is, the chunks left are halved: one taker, the front taker,
// goes on through the first half while the others take the second; the front taker, done first,
// goes on with the second half, and the others, done first, take the first half's last chunks.
// So the front taker's chunks are the level's first for as long as no one else took from the
// front before the feed closed (Taken::contiguous), and their children can go straight into the
// index, where they will stay.
class ChunkFeed {
 public:
  // A chunk taken, with its result, which only its taker writes (a deque's elements stay in place
  // as it grows). `contiguous`: every chunk before it was taken by the front taker.
  struct Taken {
    LevelChunk chunk{};
    ChunkResult* result = nullptr;
    bool contiguous = false;
  };

  // The cutting thread adds a chunk, with an empty result for its scan.
  void push(const LevelChunk& chunk) {
    {
      const std::lock_guard lock(mutex_);
      chunks_.push_back(chunk);
      results_.emplace_back();
    }
    ready_.notify_one();
  }
  // No more chunks: takers return false once the chunks left are taken.
  void close() {
    {
      const std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }
  // Waits for a chunk to take; false when the feed is closed and none is left.
  bool take(bool front_taker, Taken& taken) {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return front_ < chunks_.size() || closed_; });
    if (closed_ && !halved_) {
      halved_ = true;
      middle_ = second_ = front_ + (chunks_.size() - front_ + 1) / 2;
    }
    const bool front_left = front_ < (halved_ ? middle_ : chunks_.size());
    const bool second_left = halved_ && second_ < chunks_.size();
    std::size_t i = 0;
    taken.contiguous = false;
    if (front_taker || !halved_) {
      if (front_left) {
        i = front_++;
        taken.contiguous = front_taker && !front_shared_;
        front_shared_ = front_shared_ || !front_taker;
      } else if (second_left) {
        i = second_++;
      } else {
        return false;
      }
    } else if (second_left) {
      i = second_++;
    } else if (front_left) {
      i = --middle_;  // the last of the front taker's half: its run stays unbroken
    } else {
      return false;
    }
    taken.chunk = chunks_[i];
    taken.result = &results_[i];
    return true;
  }

  // Once every taker is done.
  [[nodiscard]] std::deque<LevelChunk>& chunks() noexcept { return chunks_; }
  [[nodiscard]] std::deque<ChunkResult>& results() noexcept { return results_; }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<LevelChunk> chunks_;
  std::deque<ChunkResult> results_;
  std::size_t front_ = 0;      // the next chunk from the front
  bool halved_ = false;        // the chunks left were halved when the feed closed
  std::size_t middle_ = 0;     // where the first half ends: the second half's start, then less
  std::size_t second_ = 0;     // the next chunk of the second half
  bool front_shared_ = false;  // a taker other than the front one took from the front
  bool closed_ = false;
};

}  // namespace onnxmap::detail
