#pragma once
// load_to_device (device.hpp) over a given copy engine: the public calls choose the engine by
// name, tests hand in a host engine with failures injected.

#include <memory>
#include <span>
#include <string_view>

#include "device/copy_engine.hpp"
#include "device/device_sink.hpp"
#include "onnxmap/device.hpp"

namespace onnxmap::detail {

// The engine `device` names: "host", "cuda" or "cuda:N". Throws onnxmap::Error:
// invalid_argument for another name, device where CUDA cannot be used.
[[nodiscard]] std::unique_ptr<CopyEngine> make_copy_engine(std::string_view device);

// Plans `items`, checks the targets (and with buffer_for the device's free memory) before
// anything is read, and runs the load through the device sink on `engine`, whose streams it makes.
DeviceLoadStats load_to_device(std::span<const LoadItem> items, DeviceTargets targets,
                               const DeviceLoadOptions& options, CopyEngine& engine);

}  // namespace onnxmap::detail
