// The host-memory copy engine (host_engine.hpp).

#include "device/host_engine.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

#include "device/ring_memory.hpp"
#include "onnxmap/bytes.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::detail {

namespace {
constexpr std::size_t kPage = 4096;
}  // namespace

HostCopyEngine::~HostCopyEngine() {
  for (const auto& stream : streams_) {
    {
      const std::lock_guard lock(stream->lock);
      stream->stop = true;
    }
    stream->changed.notify_all();
    stream->thread.join();
  }
}

void HostCopyEngine::make_streams(unsigned count) {
  for (unsigned i = 0; i < count; ++i) {
    auto stream = std::make_unique<Stream>();
    Stream& s = *stream;
    s.thread = std::thread([this, &s] { run(s); });
    streams_.push_back(std::move(stream));
  }
}

// A stream's thread: runs its copies in order; after a failure, the stream's later copies
// are dropped until synchronize() reports it (as a CUDA stream's error is sticky until then).
void HostCopyEngine::run(Stream& s) {
  std::unique_lock lock(s.lock);
  while (true) {
    s.changed.wait(lock, [&] { return s.stop || !s.queue.empty(); });
    if (s.queue.empty()) return;
    std::function<void()> task = std::move(s.queue.front());
    s.queue.pop_front();
    s.busy = true;
    const bool skip = static_cast<bool>(s.failure);
    lock.unlock();
    std::exception_ptr failure;
    try {
      if (!skip) task();
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    if (failure && !s.failure) s.failure = failure;
    s.busy = false;
    s.changed.notify_all();
  }
}

HostCopyEngine::Stream& HostCopyEngine::stream_at(unsigned stream) {
  if (stream >= streams_.size()) {
    throw Error(ErrorKind::invalid_argument, "stream " + std::to_string(stream) + " of " +
                                                 std::to_string(streams_.size()) + " on host");
  }
  return *streams_[stream];
}

// The ring's memory as the CUDA engine has it (huge pages where the kernel has them), so the
// pipeline's reads into slots run here as they do there.
void* HostCopyEngine::alloc_pinned(std::size_t bytes) {
  void* p = map_ring_memory(bytes);
  const std::lock_guard lock(memory_lock_);
  pinned_[p] = bytes;
  return p;
}

void HostCopyEngine::free_pinned(void* host) noexcept {
  if (host == nullptr) return;
  const std::lock_guard lock(memory_lock_);
  const auto found = pinned_.find(host);
  if (found == pinned_.end()) return;
  unmap_ring_memory(host, found->second);
  pinned_.erase(found);
}

// A page registered twice is refused, as the driver refuses it (the loader stages it instead).
// The pages are faulted in, as the driver's pinning faults them, here in one call rather than
// one fault per page at the copy.
bool HostCopyEngine::register_host(const void* host, std::size_t bytes) {
  if (reinterpret_cast<std::uintptr_t>(host) % kPage != 0) {
    throw Error(ErrorKind::invalid_argument, "registration of memory not page-aligned");
  }
  const auto* begin = static_cast<const std::byte*>(host);
  const std::lock_guard lock(memory_lock_);
  const auto next = registered_.lower_bound(host);
  const bool overlaps_next =
      next != registered_.end() && static_cast<const std::byte*>(next->first) < begin + bytes;
  const bool overlaps_prev =
      next != registered_.begin() &&
      static_cast<const std::byte*>(std::prev(next)->first) + std::prev(next)->second > begin;
  if (overlaps_next || overlaps_prev) return false;
  populate(host, bytes, false);
  registered_[host] = bytes;
  return true;
}

void HostCopyEngine::unregister_host(const void* host) noexcept {
  const std::lock_guard lock(memory_lock_);
  registered_.erase(host);
}

void HostCopyEngine::copy_async(void* device, const void* host, std::size_t bytes,
                                unsigned stream) {
  Stream& s = stream_at(stream);
  {
    const std::lock_guard lock(s.lock);
    s.queue.emplace_back([device, host, bytes] {
      // Guarded: `host` may be a registered map of a file that shrank (an error, not a signal).
      copy_bytes({static_cast<const std::byte*>(host), bytes},
                 {static_cast<std::byte*>(device), bytes});
    });
  }
  s.changed.notify_all();
}

void HostCopyEngine::synchronize(unsigned stream) {
  Stream& s = stream_at(stream);
  std::unique_lock lock(s.lock);
  s.changed.wait(lock, [&] { return s.queue.empty() && !s.busy; });
  if (s.failure) std::rethrow_exception(std::exchange(s.failure, nullptr));
}

void HostCopyEngine::drain(unsigned stream) noexcept {
  if (stream >= streams_.size()) return;
  Stream& s = *streams_[stream];
  std::unique_lock lock(s.lock);
  s.changed.wait(lock, [&] { return s.queue.empty() && !s.busy; });
  s.failure = nullptr;
}

}  // namespace onnxmap::detail
