// The loader's public calls (load.hpp): each makes a plan and runs the engine over it.

#include "onnxmap/load.hpp"

#include <string>

#include "load/engine.hpp"
#include "load/resident_plan.hpp"

namespace onnxmap {

using detail::Engine;

LoadStats load(std::span<const LoadItem> items, const LoadCallback& on_tensor,
               const LoadOptions& options) {
  Engine engine(detail::make_load_plan(items, options, detail::Buffers::library), {}, on_tensor,
                options);
  return engine.run();
}

LoadStats load_into(std::span<const LoadItem> items, std::span<const std::span<std::byte>> buffers,
                    const LoadCallback& on_tensor, const LoadOptions& options) {
  if (items.size() != buffers.size()) {
    throw Error(ErrorKind::invalid_argument, std::to_string(items.size()) + " items but " +
                                                 std::to_string(buffers.size()) + " buffers");
  }
  detail::LoadPlan plan = detail::make_load_plan(items, options, detail::Buffers::caller);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (buffers[i].size() != plan.items[i].length) {
      throw Error(ErrorKind::invalid_argument,
                  "buffer of " + std::to_string(buffers[i].size()) + " bytes for " +
                      std::to_string(plan.items[i].length) + " bytes to load",
                  Error::kNoOffset, items[i].tensor.path());
    }
  }
  LoadOptions copy = options;
  copy.mode = options.mode == LoadMode::map ? LoadMode::read : options.mode;  // bytes are copied
  Engine engine(std::move(plan), buffers, on_tensor, copy);
  return engine.run();
}

LoadStats load_into(std::span<const LoadItem> items, const BufferFor& buffer_for,
                    const LoadCallback& on_tensor, const LoadOptions& options) {
  LoadOptions copy = options;
  copy.mode = options.mode == LoadMode::map ? LoadMode::read : options.mode;  // bytes are copied
  Engine engine(detail::make_load_plan(items, options, detail::Buffers::caller), {}, on_tensor,
                copy, &buffer_for);
  return engine.run();
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
