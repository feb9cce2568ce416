#pragma once
// The loader's plan (load.hpp): where each item's bytes are, and the large file reads that
// cover them in file order, neighbours coalesced, each marked where its pages are in the page
// cache. Every load reads by this one plan, through one loop (load_loop.hpp) whose sinks (the
// memory sink's buffers, the device sink's ring) take its requests as they are.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "io/mapped_file.hpp"
#include "io/payload_fetcher.hpp"
#include "onnxmap/load.hpp"

namespace onnxmap::detail {

// How an item's bytes are got.
enum class ItemSource {
  stream,  // read from a file (a mapped model's payload)
  memory,  // already in memory (a model opened in the read or direct mode, or from bytes)
  typed,   // decoded from typed fields
};

struct ResolvedItem {
  const LoadItem* load_item = nullptr;  // the item of the caller's plan this resolves
  ItemSource source = ItemSource::memory;
  std::size_t file = 0;             // stream: index into LoadPlan::files
  std::uint64_t offset = 0;         // stream: in that file
  std::span<const std::byte> view;  // stream and memory: the bytes in the map or in memory
  std::uint64_t length = 0;
  std::size_t first_request = 0;  // stream: the requests covering the item
  std::size_t last_request = 0;
  // stream: read straight into a library buffer of its own that starts at the aligned file
  // offset below the item's bytes, so direct reads land in place (no staging, no copy).
  bool own_buffer = false;
};

// The bytes of an item that is not streamed: its view of memory, or its typed fields decoded
// into `decoded`, which holds them for as long as the bytes are used.
[[nodiscard]] std::span<const std::byte> bytes_in_memory(const ResolvedItem& item,
                                                         std::optional<TensorData>& decoded);

// One piece of an item inside a request.
struct ReadPiece {
  std::size_t item;
  std::uint64_t offset;  // in the file
  std::uint64_t length;
  std::uint64_t item_offset;  // where the piece starts in the item's bytes
};

// One read: [begin, end) of files[file]; its pieces are pieces[first_piece, first_piece+count).
// Its aligned range [align_down(begin), align_up(end)) spans at most the cut's request_bytes,
// so a direct read of it fits a buffer of that size. A request of an own_buffer item has that
// one piece, and its aligned range ends where the item's next request's aligned range begins.
struct Request {
  std::size_t file;
  std::uint64_t begin;
  std::uint64_t end;
  std::size_t first_piece;
  std::size_t piece_count;
  bool own_buffer = false;
  // Every page of its pieces was in the page cache when the plan was made (ReadCut::residency):
  // read buffered whatever the mode (an O_DIRECT read would fetch them from the disk again),
  // or in map mode not read at all.
  bool resident = false;
};

// A file the plan reads, and for a model opened by URL who fills it and its location there.
struct PlanFile {
  const MappedFile* file = nullptr;
  const PayloadFetcher* fetcher = nullptr;
  std::string_view location;  // "" for the model file
};

// How the streamed items are cut into requests, the same rule for every load.
struct ReadCut {
  // The most bytes a request's aligned range spans: a multiple of kDirectAlign, at least one.
  std::uint64_t request_bytes = 0;
  // Items closer than this in a file share a request, the gap read too.
  std::uint64_t max_gap_bytes = 0;
  // Whether to count the page cache under each request (Request::resident): a load that reads
  // buffered whatever the page cache holds has no use for the count.
  bool residency = false;
};

// The cut load() takes from its options: request_bytes and max_gap_bytes; residency counted in
// the map and direct modes (in the direct mode a resident request is read buffered: O_DIRECT
// would fetch its pages from the disk again).
[[nodiscard]] ReadCut read_cut(const LoadOptions& options) noexcept;

struct LoadPlan {
  std::vector<PlanFile> files;
  std::vector<ResolvedItem> items;
  // The stream items (indices into items), in file order (by file, then offset): what the
  // requests are cut from.
  std::vector<std::size_t> streamed;
  std::vector<Request> requests;
  std::vector<ReadPiece> pieces;
  std::uint64_t largest_staged_request = 0;  // of the requests that are not own_buffer
  FetchStats fetched;                        // what fetching a remote model's streamed bytes took
};

// Whose buffers the items are read into.
enum class Buffers : std::uint8_t { library, caller };

// The pieces of `request`, in file order.
[[nodiscard]] inline std::span<const ReadPiece> pieces_of(const LoadPlan& plan,
                                                          const Request& request) noexcept {
  return std::span(plan.pieces).subspan(request.first_piece, request.piece_count);
}

// Resolves every item (throwing bytes()'s or slice_rows()'s error for a bad one) and puts the
// streamed ones in file order; no request yet (cut_reads). own_buffer is decided here, by the
// load's `mode` and `buffers`.
[[nodiscard]] LoadPlan resolve_plan(std::span<const LoadItem> items, LoadMode mode,
                                    Buffers buffers);
// Cuts the streamed items into requests by `cut`, fetches a remote model's requests into its
// mirror, then counts the page cache under each request if the cut asks.
void cut_reads(LoadPlan& plan, const ReadCut& cut);
// Both, by read_cut(options).
[[nodiscard]] LoadPlan make_load_plan(std::span<const LoadItem> items, const LoadOptions& options,
                                      Buffers buffers);

}  // namespace onnxmap::detail
