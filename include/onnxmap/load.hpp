#pragma once
// The loader: the one way to read many tensors (and prefetch(tensor)'s way to read one), for a
// serving runtime that opens a checkpoint cold and must have every weight (or its shard of every
// weight) in memory as fast as the disk allows.
//
// The tensors asked for are read in file order with large requests on a small thread pool,
// neighbours coalesced into one request and small gaps between them read through rather than
// sought over. Each tensor is handed to a callback, on the calling thread, as soon as its bytes
// are complete, so a runtime can upload layer 0 to a device while layer 40 is still being read.
//
//   auto model = onnxmap::Model::open("llama.onnx");   // metadata only
//   onnxmap::load(onnxmap::plan(model), [&](const onnxmap::LoadedTensor& t) {
//     upload(t.item, t.bytes);                         // t.bytes valid until this returns
//   });
//
// Threads: a load runs reading threads of its own and returns when they are done. Callbacks run
// where LoadOptions says (on_tensor, progress and cancelled on the calling thread; on_piece and
// on_landed on reading threads; a BufferFor under the loader's lock). Any number of loads and
// prefetches of one model may run at once, from different threads, beside its other readers.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "onnxmap/export.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/options.hpp"
#include "onnxmap/tensor.hpp"

namespace onnxmap {

inline constexpr std::uint64_t kAllRows = std::numeric_limits<std::uint64_t>::max();

// One tensor, or rows [row_begin, row_end) of it along axis 0 (Tensor::slice_rows's rules and
// errors), to load.
struct LoadItem {
  Tensor tensor;
  std::uint64_t row_begin = 0;
  std::uint64_t row_end = kAllRows;  // kAllRows: the whole tensor

  // The bytes the loader delivers for it: the tensor's byte_size(), or its rows' length
  // (Tensor::row_range, which throws for rows the tensor cannot be cut into).
  [[nodiscard]] std::uint64_t byte_size() const {
    return row_end == kAllRows ? tensor.byte_size() : tensor.row_range(row_begin, row_end).length;
  }
};

// What the callback gets: the index of the item in the plan, and its bytes in the raw_data layout.
// Library-owned bytes (load) and mapped bytes released after the callback are valid only until
// the callback returns, unless the callback keeps a copy of `owner`; bytes in caller buffers
// (load_into) stay.
struct LoadedTensor {
  std::size_t item = 0;
  std::span<const std::byte> bytes;
  // Library buffers (load in the read and direct modes): the buffer `bytes` is in. A callback
  // that keeps a copy keeps `bytes` valid for as long as it holds it: the buffer is the
  // caller's then (the loader neither reuses nor writes it again; the caller may write it), so
  // keeping a tensor needs no copy. Null otherwise.
  std::shared_ptr<const void> owner;
};

using LoadCallback = std::function<void(const LoadedTensor&)>;

// A run of an item's bytes that one read put in place (LoadOptions::on_piece).
struct LoadedPiece {
  std::size_t item = 0;
  std::uint64_t offset = 0;          // where `bytes` begin in the item's bytes
  std::span<const std::byte> bytes;  // valid until the item's callback returns
};

// What every load takes, into memory (LoadOptions) or to a device (DeviceLoadOptions::load),
// each field meaning the same in both. The defaults written here are load()'s; a device load
// starts from device_load_defaults() (device.hpp), which says where and why it differs.
struct CommonLoadOptions {
  // How files are read. read (default): pread, buffered; direct: O_DIRECT into aligned buffers,
  // leaving the page cache alone (buffered where the file system refuses, and for a request
  // whose bytes are all in the page cache already, which O_DIRECT would read from the disk
  // again); map: the page cache is filled by large reads (a request whose bytes are all there
  // already is not read) and the bytes are taken from the map (load(): views, zero-copy).
  LoadMode mode = LoadMode::read;
  // Reading threads, besides the caller's (default 4).
  unsigned threads = 4;
  // Bytes held for tensors being read or not yet delivered, at most this much (default 1 GiB;
  // one tensor larger than the bound is read alone): library buffers and mapped pages in use,
  // or a device load's pinned ring.
  std::uint64_t max_in_flight_bytes = std::uint64_t{1} << 30U;
  // Tensors closer than this in a file are read with one request, the gap included (default
  // 1 MiB).
  std::uint64_t max_gap_bytes = std::uint64_t{1} << 20U;
  // Called on the calling thread as tensors are delivered and as bytes land in between: bytes
  // delivered so far and the total, so one large tensor shows progress too (default none).
  ProgressCallback progress;
  // Asked on the calling thread whenever progress is reported: true stops the load, which then
  // throws onnxmap::Error (cancelled) once the reads in progress have ended (default none).
  std::function<bool()> cancelled;
};

// The options of a load into memory (load, load_into, prefetch): the common ones, and those
// that only a load whose bytes end in this process's memory has.
struct LoadOptions : CommonLoadOptions {
  // The largest read, 4096-aligned (default 16 MiB). A device load's reads each span one slot
  // of its pinned ring instead (device.hpp).
  std::uint64_t request_bytes = std::uint64_t{16} << 20U;
  // map: drop each tensor's pages from this process after its callback (MADV_DONTNEED), so a
  // model larger than memory loads with bounded resident memory (default true).
  bool release_after_callback = true;
  // Work on the bytes done on the reading threads as they land (statistics, comparisons), so
  // that the calling thread, which runs every callback, is not what a warm load waits on
  // (default none).
  // on_piece is called for each piece of an item (the bytes one request read), pieces of one
  // item possibly at once on several threads and in any order; on_landed once every piece of
  // the item has passed on_piece, with all its bytes (owner null), before the item's callback.
  // Items the loader does not read (bytes in memory, decoded typed fields) pass both, as one
  // piece, on the calling thread. Both must be safe to call from several threads at once; what
  // they throw stops the load and is thrown from it.
  std::function<void(const LoadedPiece&)> on_piece;
  LoadCallback on_landed;
};

// What a load did, for every load (host and device: DeviceLoadStats extends it).
struct LoadStats {
  std::size_t tensors = 0;
  std::uint64_t bytes = 0;       // bytes delivered (to the caller, or copied to the device)
  double seconds = 0;            // wall time of the load, planning (and a URL's fetch) included
  double cpu_seconds = 0;        // CPU time of this process meanwhile, user and system
  std::uint64_t bytes_read = 0;  // bytes read from files, coalesced gaps and alignment included
  std::uint64_t requests = 0;    // the plan's reads (requests) done
  // Library buffers (load in read and direct modes) allocated fresh; the other tensors reused a
  // buffer an earlier tensor had been handed over in. 0 for loads into caller or device memory.
  std::uint64_t fresh_buffer_bytes = 0;
  // Bytes copied after they were read or decoded: out of the aligned staging buffer of a direct
  // read (tensors under 1 MiB, read with their neighbours, and every tensor read into a caller's
  // buffer, which cannot take the aligned range around it), out of a buffered read too scattered
  // for one preadv, and into caller buffers (or a device load's pinned ring) from memory (models
  // opened in the read or direct mode, typed fields). Direct reads of larger tensors into
  // library buffers land in place.
  std::uint64_t bytes_copied = 0;
  // Every file was opened for O_DIRECT and none refused it (requests found in the page cache
  // were read from there, buffered, all the same).
  bool direct = false;
  // A model opened by URL: the retries its streamed bytes' requests took, and the time waited
  // before them (RemoteOptions' retry_* bounds). 0 for files.
  std::uint64_t retries = 0;
  std::uint64_t retry_wait_ms = 0;
};

// One statistic by name, for reports: a count, a flag, seconds, or a word (DeviceLoadStats'
// path). fields_of gives every field of a statistics type (LoadStats here, DeviceLoadStats in
// device.hpp): the one list `onnxmap load --json` and Python's stats dictionaries are made from.
struct StatsField {
  std::string_view name;  // as the member is named: "tensors", "bytes", ..., "direct"
  std::variant<std::uint64_t, bool, double, std::string_view> value;
};
// Every field of `stats`, in declaration order.
[[nodiscard]] ONNXMAP_API std::vector<StatsField> fields_of(const LoadStats& stats);

// Loads `items` into library-owned, 4096-aligned buffers (map mode: views), calling `on_tensor`
// for each as soon as it is complete. Tensors in typed fields are decoded. STRING tensors have
// no raw layout: they are delivered with no bytes (read them with Tensor::strings()). Throws
// onnxmap::Error as bytes() or slice_rows() would for a bad item, and (io) for a read the system
// refuses; the first error stops the load.
ONNXMAP_API LoadStats load(std::span<const LoadItem> items, const LoadCallback& on_tensor,
                           const LoadOptions& options = {});
// The same into `buffers[i]`, whose size must equal item i's byte count (checked before any
// read: invalid_argument). `on_tensor` may be empty.
ONNXMAP_API LoadStats load_into(std::span<const LoadItem> items,
                                std::span<const std::span<std::byte>> buffers,
                                const LoadCallback& on_tensor, const LoadOptions& options = {});

// The buffer item `item` is read into, asked for when its first read is scheduled, within the
// loader's budget: it must be exactly the item's byte count (LoadedTensor's bytes, as in a
// plan of load_into). Called on a loader thread under the loader's lock: keep it short (an
// allocation); what it throws stops the load and is thrown from load_into.
using BufferFor = std::function<std::span<std::byte>(std::size_t item)>;

// The same, each buffer asked of `buffer_for` when the tensor's read is scheduled, so that
// max_in_flight_bytes bounds the buffers the loader holds: a callback that hands each buffer
// on and lets it go loads a model larger than memory into buffers of the caller's own.
ONNXMAP_API LoadStats load_into(std::span<const LoadItem> items, const BufferFor& buffer_for,
                                const LoadCallback& on_tensor, const LoadOptions& options = {});

// Reads the plan's bytes into the page cache in large requests (a model opened with
// LoadMode::map), so that later touches through the map cost no disk read. Returns when done.
ONNXMAP_API void prefetch(std::span<const LoadItem> plan, const LoadOptions& options = {});
// The same for one tensor: its bytes read into the page cache in large requests on the loader's
// threads (a cold touch through the map reads 4 KiB a fault; a model opened by URL fetches
// them). A no-op for typed storage and for models opened in the read or direct mode.
ONNXMAP_API void prefetch(const Tensor& tensor, const LoadOptions& options = {});

// Which tensors a plan takes, and which rows of each. The parts compose: a filter or names
// picks tensors, a shard then cuts each picked tensor's rows.
struct PlanOptions {
  // Tensors whose lookup name matches this fnmatch glob ("" = every tensor), in model order.
  std::string filter;
  // Or these tensors, in this order, each by lookup name or by path as Tensor::path() gives it
  // ("graph.initializer[3]"); a name that finds none is a not_found error. Not with `filter`.
  std::vector<std::string> names;
  // The tensor-parallel shard `rank` of `ranks`: rows [rows*rank/ranks, rows*(rank+1)/ranks) of
  // every tensor that can_slice_rows() with at least `ranks` rows; every other tensor (typed
  // fields, STRING, fewer rows) whole. ranks 1: whole tensors.
  unsigned rank = 0;
  unsigned ranks = 1;

  // The common plans in a word: plan(model, PlanOptions::matching("*.mlp.*")),
  // plan(model, PlanOptions::shard(1, 4)); set the other fields on the result to compose.
  [[nodiscard]] static PlanOptions matching(std::string glob) {
    PlanOptions options;
    options.filter = std::move(glob);
    return options;
  }
  [[nodiscard]] static PlanOptions shard(unsigned rank, unsigned ranks) {
    PlanOptions options;
    options.rank = rank;
    options.ranks = ranks;
    return options;
  }
};

// The items to load for `options`: the one way the command line, Python and the viewer plan.
// Throws onnxmap::Error: invalid_argument for a rank outside 0..ranks-1 or a filter beside
// names, not_found for a name no tensor has.
[[nodiscard]] ONNXMAP_API std::vector<LoadItem> plan(const Model& model,
                                                     const PlanOptions& options = {});

}  // namespace onnxmap
