#pragma once
// The loader's plan (load.hpp): where each item's bytes are, and the large file reads that
// cover them in file order, neighbours coalesced.

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
  const LoadItem* request = nullptr;
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
// A request of an own_buffer item has that one piece, and its aligned range ends where the
// item's next request's aligned range begins.
struct Request {
  std::size_t file;
  std::uint64_t begin;
  std::uint64_t end;
  std::size_t first_piece;
  std::size_t piece_count;
  bool own_buffer = false;
};

// A file the plan reads, and for a model opened by URL who fills it and its location there.
struct PlanFile {
  const MappedFile* file = nullptr;
  const PayloadFetcher* fetcher = nullptr;
  std::string_view location;  // "" for the model file
};

struct LoadPlan {
  std::vector<PlanFile> files;
  std::vector<ResolvedItem> items;
  // The stream items (indices into items), in file order (by file, then offset): what the
  // requests are cut from, and the device loader's chunks.
  std::vector<std::size_t> streamed;
  std::vector<Request> requests;
  std::vector<ReadPiece> pieces;
  std::uint64_t largest_staged_request = 0;  // of the requests that are not own_buffer
  FetchStats fetched;                        // what fetching a remote model's streamed bytes took
};

// Whose buffers the items are read into.
enum class Buffers : std::uint8_t { library, caller };

// Resolves every item (throwing bytes()'s or slice_rows()'s error for a bad one), plans the
// reads of the streamed ones, and fetches a remote model's.
[[nodiscard]] LoadPlan make_load_plan(std::span<const LoadItem> items, const LoadOptions& options,
                                      Buffers buffers);

}  // namespace onnxmap::detail
