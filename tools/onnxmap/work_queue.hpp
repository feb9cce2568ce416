#pragma once
// Work handed from the loader's callback to other cores: the loader delivers tensors on one
// thread, and counting them there would make that thread the bottleneck of a warm read. A task
// holds `bytes` of buffers it keeps alive; submit() waits while more than `max_bytes` are queued
// or being worked on, so a reader faster than the workers cannot fill memory.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace onnxmap::cli {

class WorkQueue {
 public:
  WorkQueue(unsigned workers, std::uint64_t max_bytes) : max_bytes_(max_bytes) {
    for (unsigned i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  }
  ~WorkQueue() { finish_quietly(); }
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void submit(std::function<void()> task, std::uint64_t bytes) {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return busy_bytes_ == 0 || busy_bytes_ + bytes <= max_bytes_; });
    busy_bytes_ += bytes;
    tasks_.push_back({std::move(task), bytes});
    ready_.notify_one();
  }

  // Waits for every task; rethrows the first exception a task threw.
  void finish() {
    finish_quietly();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  struct Task {
    std::function<void()> run;
    std::uint64_t bytes;
  };

  void work() {
    for (;;) {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return done_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      Task task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      try {
        task.run();
      } catch (...) {
        const std::lock_guard guard(mutex_);
        if (!error_) error_ = std::current_exception();
      }
      task.run = nullptr;  // its buffers go before the room is given back
      lock.lock();
      busy_bytes_ -= task.bytes;
      room_.notify_all();
    }
  }

  void finish_quietly() {
    {
      const std::lock_guard lock(mutex_);
      done_ = true;
      ready_.notify_all();
    }
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

  std::uint64_t max_bytes_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::condition_variable room_;
  std::deque<Task> tasks_;
  std::uint64_t busy_bytes_ = 0;
  bool done_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

}  // namespace onnxmap::cli
