#pragma once
// The loader's last step for a serving runtime: a plan's tensors copied straight into device
// (GPU) memory that the caller owns, at the speed of the bus when the bytes are in the page
// cache and of the disk when they are not.
//
//   auto model = onnxmap::Model::open("llama.onnx");
//   const auto items = onnxmap::plan(model);
//   std::vector<void*> dst = allocate_on_gpu(items);          // cudaMalloc, torch, ...
//   onnxmap::load_to_device(items, dst);                      // "cuda:0" by default
//
// Two paths, chosen per read of the loader's plan by where its bytes are (or forced):
// - registered: bytes already in the page cache (or every byte in LoadMode::map) are copied
//   from the mapping itself, which is registered read-only with the driver a read at a time
//   and unregistered once its copies are done: no host copy;
// - pinned ring: other bytes are read (O_DIRECT in LoadMode::direct) into a ring of pinned
//   host buffers allocated once, reads and copies overlapped. Tensors in typed fields and
//   models held in memory are decoded or copied into the ring too.
//
// The CUDA runtime (libcudart.so.13 or .12) is loaded when first needed, so nothing needs CUDA
// to build; device "host" copies into host memory through the same pipeline, for machines
// without a GPU and for tests.
//
// Threads: load_to_device runs workers of its own; progress and cancelled are called on the
// calling thread, a DeviceBufferFor on a worker under the loader's lock. Loads of one model may
// run at once from several threads, beside its other readers; two loads into the same destination
// memory race. A DeviceBuffer's copies share one allocation, freed by the last on any thread; what
// is written into it is the caller's to order.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnxmap/export.hpp"
#include "onnxmap/load.hpp"
#include "onnxmap/options.hpp"

namespace onnxmap {

// Which way bytes go to the device.
enum class DevicePath : std::uint8_t {
  // CUDA: registered in LoadMode::map, else the ring (from the page cache where resident).
  // "host": registered also where resident (free there, and one copy where the ring makes two).
  automatic,
  registered,  // every streamed read registered; the ring only where registration is refused
  pinned,      // every byte through the pinned ring
};

// The workers of a load that leaves DeviceLoadOptions::load.threads at 0, at most.
inline constexpr unsigned kMaxDeviceThreads = 16;

// The common load options as a device load takes them by default (DeviceLoadOptions::load):
// load()'s (CommonLoadOptions), but
// - mode: direct, not read. How the ring is filled: direct (O_DIRECT where the file system
//   allows it, else buffered), read (buffered), or map (every streamed byte is resident: the
//   registered path). Bytes bound for a device need no copy in this process's page cache.
// - threads: 0, not 4. Workers, each with a stream and a slot of the ring: reads,
//   registrations and copies of different workers overlap. 0: one per core, at most
//   kMaxDeviceThreads, where most of the plan's bytes are in the page cache (copying them out
//   is what bounds a warm load); else 4 (docs/gpu.md).
// - max_in_flight_bytes: 256 MiB, not 1 GiB. The pinned ring, and the mapped bytes registered
//   at once, each at most this much: each worker's slot (and registered read) is
//   max_in_flight_bytes / threads: pinned memory is locked in the host's RAM while it lasts.
// max_gap_bytes (1 MiB), progress and cancelled as there: progress counts bytes on the device.
[[nodiscard]] inline CommonLoadOptions device_load_defaults() {
  CommonLoadOptions options;
  options.mode = LoadMode::direct;
  options.threads = 0;
  options.max_in_flight_bytes = std::uint64_t{256} << 20U;
  return options;
}

struct DeviceLoadOptions {
  // "cuda:N" (a CUDA device by ordinal; "cuda" is "cuda:0") or "host": host memory as the
  // device (destinations are host pointers), through the same pipeline. Default "cuda:0".
  std::string device = "cuda:0";
  // Which way bytes go (default automatic).
  DevicePath path = DevicePath::automatic;
  // The load itself: the options every load takes, meaning what CommonLoadOptions says, with
  // the device's own defaults where they differ (device_load_defaults). The reads are the
  // loader's own requests, each spanning at most one slot of the ring (max_in_flight_bytes /
  // threads): a device load has no request_bytes. progress reports bytes on the device; a
  // cancellation throws once the copies in progress have ended.
  CommonLoadOptions load = device_load_defaults();
  // Work on the bytes as they are read, before they reach the device (load --verify, which
  // hashes them): called for each piece of an item in the order of the item's bytes, one piece
  // of an item at a time (a worker holding a later piece waits until the earlier ones have
  // passed), on the workers' threads, its bytes valid during the call; an item in memory passes
  // as one piece, an item of no bytes as one empty piece on the calling thread. It must be safe
  // to call from several threads at once (for different items); what it throws stops the load
  // (default none).
  std::function<void(const LoadedPiece&)> on_piece;
};

// What a device load did: what every load reports (LoadStats: tensors, bytes copied to the
// device, seconds, bytes read, requests, direct, a URL's retries), and the device's own.
struct DeviceLoadStats : LoadStats {
  std::uint64_t bytes_staged = 0;           // copied to the device through the pinned ring
  std::uint64_t bytes_registered = 0;       // copied to the device from registered mappings
  std::uint64_t pinned_bytes = 0;           // the ring's size (0 when no byte needed it)
  std::uint64_t registrations = 0;          // reads registered (and unregistered)
  std::uint64_t registrations_refused = 0;  // reads the driver refused: staged instead
  unsigned threads = 0;                     // workers the load ran

  // "registered", "pinned", "registered+pinned", or "none" when no byte was copied.
  [[nodiscard]] std::string_view path() const noexcept {
    if (bytes_registered > 0 && bytes_staged > 0) return "registered+pinned";
    if (bytes_registered > 0) return "registered";
    return bytes_staged > 0 ? "pinned" : "none";
  }
};

// Every field of `stats`: LoadStats' (fields_of(LoadStats)), then the device's own in
// declaration order, then "path" (path()): what `onnxmap load --device --json` and Python's
// load_to_torch statistics are made from (StatsField, load.hpp).
[[nodiscard]] ONNXMAP_API std::vector<StatsField> fields_of(const DeviceLoadStats& stats);

// Copies every item into `destinations[i]`, a device pointer (a host pointer for "host") to at
// least item i's byte count (LoadItem::byte_size()); items of no bytes (STRING, empty) may have
// null. Returns once every copy is complete. Throws onnxmap::Error: invalid_argument for a bad
// device name, a count mismatch or a null destination (before anything is read); device for
// no runtime (naming what was looked for and where) or a failing call (the call, the tensor,
// the device); the plan's and the reads' errors as load() does; cancelled. Nothing stays
// pinned or registered after it returns or throws.
ONNXMAP_API DeviceLoadStats load_to_device(std::span<const LoadItem> items,
                                           std::span<void* const> destinations,
                                           const DeviceLoadOptions& options = {});

// The device pointer item `item` is copied to, asked for when its first bytes are scheduled,
// on a worker thread under the loader's lock (keep it short: an allocation). What it throws
// stops the load and is thrown from load_to_device.
using DeviceBufferFor = std::function<void*(std::size_t item)>;

// The same, each destination asked of `buffer_for` as the item is scheduled. Before anything
// is read, the plan's bytes are checked against the device's free memory (device error).
ONNXMAP_API DeviceLoadStats load_to_device(std::span<const LoadItem> items,
                                           const DeviceBufferFor& buffer_for,
                                           const DeviceLoadOptions& options = {});

// Device memory that onnxmap allocates, freed with the last copy of this handle: for tools,
// tests and examples (a serving runtime allocates its own, e.g. through torch). "cuda:N":
// cudaMalloc on that device; "host": host memory, faulted in (ready to use, as device memory
// is). Throws onnxmap::Error as load_to_device does for the device, and (device) when the
// allocation fails.
class ONNXMAP_API DeviceBuffer {
 public:
  DeviceBuffer(std::string_view device, std::uint64_t bytes);
  [[nodiscard]] void* data() const noexcept { return memory_.get(); }
  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }

 private:
  std::shared_ptr<void> memory_;
  std::uint64_t size_ = 0;
};

}  // namespace onnxmap
