#pragma once
// The memory sink (load_sink.hpp): a load whose bytes end in this process's memory (load,
// load_into, prefetch). Each request is read into its tensors' buffers (library buffers, reused
// through a pool; caller buffers; or in map mode the page cache, the tensor then a view of the
// map), the options' work run on each piece as it lands (on_piece, on_landed); the calling
// thread runs each tensor's callback and frees what it is done with, which bounds the bytes in
// flight (LoadOptions::max_in_flight_bytes).

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "io/file_reader.hpp"
#include "load/buffer_pool.hpp"
#include "load/load_loop.hpp"
#include "load/load_plan.hpp"
#include "load/load_sink.hpp"
#include "onnxmap/load.hpp"

namespace onnxmap::detail {

// Where the items' bytes go.
struct MemoryTargets {
  std::span<const std::span<std::byte>> buffers;  // caller buffers, one per item, or empty
  const BufferFor* buffer_for = nullptr;          // caller buffers asked for on schedule
};

class MemorySink final : public LoadSink {
 public:
  // Runs the load of `plan` (make_load_plan) into `targets` (none: library buffers, or views
  // in map mode). Throws the first failure.
  static LoadStats load(const LoadPlan& plan, MemoryTargets targets, const LoadCallback& on_tensor,
                        const LoadOptions& options);

  [[nodiscard]] bool stages_unstreamed() const noexcept override { return false; }
  void deliver_unstreamed(std::size_t item) override;
  [[nodiscard]] unsigned start(std::size_t units) override;
  [[nodiscard]] bool admits(const LoadUnit& unit) override;
  void claim(const LoadUnit& unit) override;
  [[nodiscard]] std::unique_ptr<Worker> worker(unsigned index) override;
  void deliver(std::size_t item) override;

 private:
  struct ItemState {
    std::shared_ptr<io::AlignedBuffer> owned;  // the library buffer: LoadedTensor::owner
    std::span<std::byte> target;               // where the bytes go; empty in map mode
    std::uint64_t charge = 0;                  // bytes counted in flight: buffer or length
    bool in_flight = false;
  };
  class Reader;

  MemorySink(const LoadPlan& plan, MemoryTargets targets, const LoadCallback& on_tensor,
             const LoadOptions& options, LoadLoop& loop)
      : plan_(plan),
        targets_(targets),
        on_tensor_(on_tensor),
        options_(options),
        loop_(loop),
        states_(plan.items.size()),
        pool_(options.max_in_flight_bytes) {}

  // The bytes of `item` as its callback gets them: its buffer, or its view of the map or memory.
  [[nodiscard]] std::span<const std::byte> bytes_of(std::size_t item) const;
  [[nodiscard]] std::span<std::byte> caller_buffer(std::size_t item) const;
  void assign_library_buffer(std::size_t item);
  // Whether the buffers are the caller's (given, or asked of buffer_for).
  [[nodiscard]] bool caller_buffers() const noexcept {
    return !targets_.buffers.empty() || targets_.buffer_for != nullptr;
  }
  // Whether the buffers come and go with the load (library ones, or asked of buffer_for), and
  // so are bounded by max_in_flight_bytes; caller buffers given up front are not.
  [[nodiscard]] bool budgeted() const noexcept { return targets_.buffers.empty(); }

  const LoadPlan& plan_;
  MemoryTargets targets_;
  const LoadCallback& on_tensor_;
  const LoadOptions& options_;
  LoadLoop& loop_;
  std::vector<ItemState> states_;

  // Under the loop's lock:
  std::uint64_t in_flight_bytes_ = 0;
  std::vector<std::size_t> in_flight_;  // items given budget (finished ones until swept)
  BufferPool pool_;
  std::uint64_t fresh_buffer_bytes_ = 0;
};

}  // namespace onnxmap::detail
