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

class ChunkFeed {
 public:
  // The cutting thread adds a chunk, with an empty result for its scan.
  void push(const LevelChunk& chunk) {
    {
      const std::lock_guard lock(mutex_);
      chunks_.push_back(chunk);
      results_.emplace_back();
    }
    ready_.notify_one();
  }
  // No more chunks: takers past the last one return false.
  void close() {
    {
      const std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }
  // Waits for chunk `i`; false when the feed closed before it. `result` is chunk i's, which only
  // its taker writes (a deque's elements stay in place as it grows).
  bool take(std::size_t i, LevelChunk& chunk, ChunkResult*& result) {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return i < chunks_.size() || closed_; });
    if (i >= chunks_.size()) return false;
    chunk = chunks_[i];
    result = &results_[i];
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
  bool closed_ = false;
};

}  // namespace onnxmap::detail
