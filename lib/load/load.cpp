// The loader's public calls (load.hpp): each makes a plan and runs it through the one load loop
// into the memory sink (memory_sink.hpp).

#include "onnxmap/load.hpp"

#include <string>

#include "load/load_loop.hpp"
#include "load/memory_sink.hpp"
#include "load/resident_plan.hpp"

namespace onnxmap {

namespace {

// The plan of `items` run into `targets`, timed from before the plan was made.
LoadStats load_timed(std::span<const LoadItem> items, detail::MemoryTargets targets,
                     const LoadCallback& on_tensor, const LoadOptions& options,
                     detail::Buffers buffers) {
  const detail::LoadClock clock;
  const detail::LoadPlan plan = detail::make_load_plan(items, options, buffers);
  LoadStats stats = detail::MemorySink::load(plan, targets, on_tensor, options);
  clock.stamp(stats);
  return stats;
}

// Caller buffers take copies: a map-mode load into them reads as the read mode does.
LoadOptions copying(const LoadOptions& options) {
  LoadOptions copy = options;
  if (copy.mode == LoadMode::map) copy.mode = LoadMode::read;
  return copy;
}

}  // namespace

LoadStats load(std::span<const LoadItem> items, const LoadCallback& on_tensor,
               const LoadOptions& options) {
  return load_timed(items, {}, on_tensor, options, detail::Buffers::library);
}

LoadStats load_into(std::span<const LoadItem> items, std::span<const std::span<std::byte>> buffers,
                    const LoadCallback& on_tensor, const LoadOptions& options) {
  if (items.size() != buffers.size()) {
    throw Error(ErrorKind::invalid_argument, std::to_string(items.size()) + " items but " +
                                                 std::to_string(buffers.size()) + " buffers");
  }
  return load_timed(items, {buffers, nullptr}, on_tensor, copying(options),
                    detail::Buffers::caller);
}

LoadStats load_into(std::span<const LoadItem> items, const BufferFor& buffer_for,
                    const LoadCallback& on_tensor, const LoadOptions& options) {
  return load_timed(items, {{}, &buffer_for}, on_tensor, copying(options), detail::Buffers::caller);
}

std::vector<StatsField> fields_of(const LoadStats& s) {
  return {{"tensors", std::uint64_t{s.tensors}},
          {"bytes", s.bytes},
          {"seconds", s.seconds},
          {"cpu_seconds", s.cpu_seconds},
          {"bytes_read", s.bytes_read},
          {"requests", s.requests},
          {"fresh_buffer_bytes", s.fresh_buffer_bytes},
          {"bytes_copied", s.bytes_copied},
          {"direct", s.direct},
          {"retries", s.retries},
          {"retry_wait_ms", s.retry_wait_ms}};
}

void prefetch(const Tensor& tensor, const LoadOptions& options) {
  if (!tensor.has_stored_bytes()) return;
  const LoadItem item{tensor};
  prefetch(std::span(&item, 1), options);
}

void prefetch(std::span<const LoadItem> plan, const LoadOptions& options) {
  // Warm: nothing to read, no threads to start (a cancelled load still says it was cancelled).
  if (detail::plan_resident(plan) && !(options.cancelled && options.cancelled())) return;
  LoadOptions advice = options;
  advice.mode = LoadMode::map;
  advice.release_after_callback = false;
  (void)load(plan, {}, advice);
}

}  // namespace onnxmap
