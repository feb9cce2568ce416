#pragma once
// The loader's engine: reading threads take the plan's requests in file order, copy each
// piece into its tensor's buffer, run the options' work on it (on_piece, on_landed), and queue
// a tensor once its last piece is in; the calling thread runs the callbacks and frees what they
// are done with, which bounds the bytes in flight. The files, the lock, failure, stop,
// progress and cancellation are the LoadRun every load shares (load_run.hpp).

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "io/file_reader.hpp"
#include "load/buffer_pool.hpp"
#include "load/load_plan.hpp"
#include "load/load_run.hpp"
#include "onnxmap/load.hpp"

namespace onnxmap::detail {

struct ItemState {
  // Bytes of the item not yet read (guarded by the run's lock).
  std::uint64_t remaining = 0;
  // The library buffer, handed out as LoadedTensor::owner.
  std::shared_ptr<io::AlignedBuffer> owned;
  // Where the bytes go; empty in map mode.
  std::span<std::byte> target;
  // Bytes counted in flight for it: its buffer's size, or its length.
  std::uint64_t charge = 0;
  bool in_flight = false;
};

class Engine {
 public:
  Engine(LoadPlan plan, std::span<const std::span<std::byte>> buffers,
         const LoadCallback& on_tensor, const LoadOptions& options,
         const BufferFor* buffer_for = nullptr)
      : plan_(std::move(plan)),
        buffers_(buffers),
        buffer_for_(buffer_for),
        on_tensor_(on_tensor),
        options_(options),
        run_(plan_, options, "the load"),
        states_(plan_.items.size()),
        pool_(options.max_in_flight_bytes) {}

  LoadStats run();

 private:
  void deliver(std::size_t item, std::span<const std::byte> bytes,
               std::shared_ptr<const void> owner = nullptr);
  void deliver_in_memory(std::size_t item);
  void worker();
  std::optional<std::size_t> take_request(std::unique_lock<std::mutex>& lock);
  void read_request(const Request& request, io::AlignedBuffer& staging);
  [[nodiscard]] std::uint64_t read_into_place(const Request& request, io::AlignedBuffer& staging);
  void read_own_buffer(const Request& request);
  // Runs options.on_piece for each piece of `request`, on the thread that read it.
  void work_on_pieces(const Request& request);
  // Runs options.on_landed for each item of `landed`, then queues them for their callbacks.
  void complete(const std::vector<std::size_t>& landed);
  // The bytes of `item` as its callback gets them: its buffer, or its view of the map or memory.
  [[nodiscard]] std::span<const std::byte> bytes_of(std::size_t item) const;
  [[nodiscard]] bool read_in_place(const Request& request, std::span<std::byte> staging);
  [[nodiscard]] bool must_wait(std::size_t request, std::uint64_t need);
  void finish(std::size_t item);
  // Reports progress and asks options.cancelled, on the calling thread; true: stop.
  [[nodiscard]] bool report_progress();
  [[nodiscard]] std::span<std::byte> caller_buffer(std::size_t item) const;
  void assign_library_buffer(std::size_t item);

  LoadPlan plan_;
  std::span<const std::span<std::byte>> buffers_;  // caller buffers, or empty
  const BufferFor* buffer_for_;                    // caller buffers asked for on schedule
  const LoadCallback& on_tensor_;
  const LoadOptions& options_;
  LoadRun run_;
  std::vector<ItemState> states_;
  LoadStats stats_;
  std::uint64_t memory_bytes_done_ = 0;  // delivered from memory or decoded
  std::uint64_t bytes_total_ = 0;
  std::uint64_t landed_reported_ = 0;

  // Guarded by run_.lock:
  std::size_t next_request_ = 0;
  std::uint64_t in_flight_bytes_ = 0;
  std::vector<std::size_t> in_flight_;  // items given budget (finished ones until swept)
  std::deque<std::size_t> complete_;    // items read, waiting for their callback
  std::uint64_t landed_ = 0;            // bytes of items that reads have put in place
  BufferPool pool_;
};

}  // namespace onnxmap::detail
