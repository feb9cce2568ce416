// The memory sink (memory_sink.hpp).

#include "load/memory_sink.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string>

#include "onnxmap/bytes.hpp"

namespace onnxmap::detail {

// A reading thread: its staging buffer (made on the first request that needs it) and the
// requests it reads into place.
class MemorySink::Reader final : public LoadSink::Worker {
 public:
  explicit Reader(MemorySink& sink) : s_(sink) {}
  void run(const LoadUnit& unit) override;

 private:
  [[nodiscard]] std::uint64_t read_into_place(const Request& request);
  [[nodiscard]] bool read_in_place(const Request& request);
  void read_own_buffer(const Request& request);
  // Runs options.on_piece for each piece of `request`, on this thread.
  void work_on_pieces(const Request& request);

  MemorySink& s_;
  io::AlignedBuffer staging_;
  std::vector<std::size_t> landed_;  // items whose last piece the current request was
};

namespace {

// `buffer`, checked to hold `item`'s bytes exactly.
std::span<std::byte> sized_for(const ResolvedItem& item, std::span<std::byte> buffer) {
  if (buffer.size() != item.length) {
    throw Error(ErrorKind::invalid_argument,
                "buffer of " + std::to_string(buffer.size()) + " bytes for " +
                    std::to_string(item.length) + " bytes to load",
                Error::kNoOffset, item.load_item->tensor.path());
  }
  return buffer;
}

}  // namespace

LoadStats MemorySink::load(const LoadPlan& plan, MemoryTargets targets,
                           const LoadCallback& on_tensor, const LoadOptions& options) {
  // Caller buffers given up front are checked before any file is opened or read.
  for (std::size_t i = 0; i < targets.buffers.size(); ++i)
    (void)sized_for(plan.items[i], targets.buffers[i]);
  LoadLoop loop(plan, options, "the load");
  MemorySink sink(plan, targets, on_tensor, options, loop);
  LoadStats stats = loop.run(sink);
  stats.fresh_buffer_bytes = sink.fresh_buffer_bytes_;
  return stats;
}

unsigned MemorySink::start(std::size_t units) {
  return static_cast<unsigned>(std::min<std::size_t>(std::max(1U, options_.threads), units));
}

std::unique_ptr<LoadSink::Worker> MemorySink::worker(unsigned /*index*/) {
  return std::make_unique<Reader>(*this);
}

// An item whose bytes are in memory or decoded: handed over as is, or copied to its buffer.
void MemorySink::deliver_unstreamed(std::size_t i) {
  std::optional<TensorData> decoded;
  std::span<const std::byte> bytes = bytes_in_memory(plan_.items[i], decoded);
  if (caller_buffers()) {
    const std::span<std::byte> target =
        targets_.buffer_for != nullptr ? caller_buffer(i) : targets_.buffers[i];
    copy_bytes(bytes, target);  // guarded: a fault in a mapped file is an error
    {
      const std::lock_guard lock(loop_.lock);
      loop_.count({0, 0, bytes.size()});
    }
    bytes = target;
  }
  if (options_.on_piece) options_.on_piece(LoadedPiece{i, 0, bytes});
  if (options_.on_landed) options_.on_landed(LoadedTensor{i, bytes, nullptr});
  if (on_tensor_) on_tensor_(LoadedTensor{i, bytes, nullptr});
}

std::span<const std::byte> MemorySink::bytes_of(std::size_t item) const {
  const std::span<std::byte> target = states_[item].target;
  return target.empty() ? plan_.items[item].view : target;
}

std::span<std::byte> MemorySink::caller_buffer(std::size_t item) const {
  return sized_for(plan_.items[item], (*targets_.buffer_for)(item));
}

// The callback, then the pages released (map mode) and the buffer reused or given up.
void MemorySink::deliver(std::size_t item) {
  ItemState& state = states_[item];
  if (on_tensor_) on_tensor_(LoadedTensor{item, bytes_of(item), state.owned});
  const ResolvedItem& resolved = plan_.items[item];
  if (options_.mode == LoadMode::map && options_.release_after_callback) {
    plan_.files[resolved.file].file->release(resolved.offset, resolved.length);
  }
  const std::lock_guard lock(loop_.lock);
  // A buffer the callback kept an owner of is the caller's now; the others are reused.
  if (state.owned && state.owned.use_count() == 1) {
    pool_.give(std::move(*state.owned));
  } else if (state.owned) {
    pool_.forget(state.owned->size());
  }
  state.owned.reset();
  if (state.in_flight) {
    // Left in in_flight_ until admits() sweeps it: erasing here cost a pass over every item
    // in flight for each one that finished (180 000 tiny tensors: seconds).
    in_flight_bytes_ -= state.charge;
    state.in_flight = false;
  }
  loop_.changed.notify_all();
}

// A request may start when its new items fit the budget, or when no item in flight can
// complete without it (those ending before it): waiting for those could never end.
bool MemorySink::admits(const LoadUnit& unit) {
  if (!budgeted()) return true;
  std::uint64_t need = 0;
  for (const ReadPiece& piece : pieces_of(plan_, plan_.requests[unit.index])) {
    const ResolvedItem& item = plan_.items[piece.item];
    if (piece.item_offset != 0) continue;
    need += item.own_buffer ? io::FileReader::staging_size(item.offset, item.length) : item.length;
  }
  if (need == 0 || in_flight_bytes_ + need <= options_.max_in_flight_bytes) return true;
  std::erase_if(in_flight_, [&](std::size_t item) { return !states_[item].in_flight; });
  return std::none_of(in_flight_.begin(), in_flight_.end(), [&](std::size_t item) {
    return plan_.items[item].last_request < unit.index;
  });
}

void MemorySink::claim(const LoadUnit& unit) {
  for (const ReadPiece& piece : pieces_of(plan_, plan_.requests[unit.index])) {
    if (piece.item_offset != 0) continue;
    ItemState& state = states_[piece.item];
    if (!budgeted()) {
      state.target = targets_.buffers[piece.item];
      continue;
    }
    if (targets_.buffer_for != nullptr) {
      state.target = caller_buffer(piece.item);
    } else if (options_.mode != LoadMode::map) {
      assign_library_buffer(piece.item);
    }
    state.charge = std::max<std::uint64_t>(plan_.items[piece.item].length,
                                           state.owned ? state.owned->size() : 0);
    state.in_flight = true;
    in_flight_.push_back(piece.item);
    in_flight_bytes_ += state.charge;
  }
}

// A library buffer for `item`: its bytes alone, or for an own_buffer item the aligned range
// around them, so that its direct reads land in place.
void MemorySink::assign_library_buffer(std::size_t item) {
  const ResolvedItem& resolved = plan_.items[item];
  ItemState& state = states_[item];
  const std::uint64_t skip = resolved.own_buffer ? resolved.offset % io::kDirectAlign : 0;
  const std::uint64_t size = resolved.own_buffer
                                 ? io::FileReader::staging_size(resolved.offset, resolved.length)
                                 : resolved.length;
  state.owned = std::make_shared<io::AlignedBuffer>(
      pool_.take(static_cast<std::size_t>(size), fresh_buffer_bytes_));
  state.target = state.owned->span().subspan(static_cast<std::size_t>(skip),
                                             static_cast<std::size_t>(resolved.length));
}

bool MemorySink::Reader::read_in_place(const Request& r) {
  constexpr std::size_t kMaxVectors = 256;
  const io::FileReader& reader = s_.loop_.reader(r);
  if (reader.is_direct() || r.piece_count * 2 > kMaxVectors) return false;
  std::array<iovec, kMaxVectors> vectors{};
  std::size_t count = 0;
  std::uint64_t at = r.begin;
  for (const ReadPiece& piece : pieces_of(s_.plan_, r)) {
    const std::span<std::byte> target = s_.states_[piece.item].target;
    if (target.empty() || piece.offset < at) return false;  // map mode, or overlapping items
    if (piece.offset > at) vectors[count++] = {staging_.data(), piece.offset - at};  // a gap
    vectors[count++] = {target.data() + piece.item_offset, piece.length};
    at = piece.offset + piece.length;
  }
  // A short read (a signal, the end of the file) goes the staging way, which names the error.
  return reader.read_scattered(std::span(vectors.data(), count), r.begin, r.end - r.begin);
}

// The aligned range around `r` lands in its item's own buffer, at the same distance from the
// buffer's start as from the item's aligned start in the file: the bytes are in place.
void MemorySink::Reader::read_own_buffer(const Request& r) {
  const ReadPiece& piece = s_.plan_.pieces[r.first_piece];
  const std::span<std::byte> buffer = s_.states_[piece.item].owned->span();
  const std::uint64_t base = io::align_down(s_.plan_.items[piece.item].offset);
  (void)s_.loop_.reader(r).read(
      r.begin, r.end - r.begin,
      buffer.subspan(static_cast<std::size_t>(io::align_down(r.begin) - base)));
}

// Reads `r` and puts each piece in its item's buffer (map mode: in the page cache); returns the
// bytes copied to get them there.
std::uint64_t MemorySink::Reader::read_into_place(const Request& r) {
  if (r.own_buffer) {
    read_own_buffer(r);
    return 0;
  }
  if (staging_.size() == 0 && s_.plan_.largest_staged_request > 0) {
    staging_ = io::AlignedBuffer(
        static_cast<std::size_t>(s_.plan_.largest_staged_request + 2 * io::kDirectAlign));
  }
  // Buffered reads go straight into the tensors' buffers; direct ones need aligned staging.
  if (read_in_place(r)) return 0;
  const std::span<const std::byte> got =
      s_.loop_.reader(r).read(r.begin, r.end - r.begin, staging_.span());
  std::uint64_t copied = 0;
  for (const ReadPiece& piece : pieces_of(s_.plan_, r)) {
    const std::span<std::byte> target = s_.states_[piece.item].target;
    if (target.empty()) continue;  // map mode: the read filled the page cache
    std::memcpy(target.data() + piece.item_offset, got.data() + (piece.offset - r.begin),
                static_cast<std::size_t>(piece.length));
    copied += piece.length;
  }
  return copied;
}

void MemorySink::Reader::work_on_pieces(const Request& r) {
  if (!s_.options_.on_piece) return;
  for (const ReadPiece& piece : pieces_of(s_.plan_, r)) {
    s_.options_.on_piece(LoadedPiece{piece.item, piece.item_offset,
                                     s_.bytes_of(piece.item)
                                         .subspan(static_cast<std::size_t>(piece.item_offset),
                                                  static_cast<std::size_t>(piece.length))});
  }
}

void MemorySink::Reader::run(const LoadUnit& unit) {
  const Request& r = s_.plan_.requests[unit.index];
  // Map mode only fills the page cache: bytes all in it already (the plan counted them) need no
  // read. In the direct mode, the same requests are read buffered (LoadLoop::reader).
  const bool cached = s_.options_.mode == LoadMode::map && r.resident;
  const std::uint64_t copied = cached ? 0 : read_into_place(r);
  work_on_pieces(r);
  landed_.clear();
  {
    const std::lock_guard lock(s_.loop_.lock);
    const std::uint64_t read =
        cached ? 0 : LoadLoop::bytes_read(s_.loop_.reader(r), r.begin, r.end - r.begin);
    s_.loop_.count({1, read, copied});
    for (const ReadPiece& piece : pieces_of(s_.plan_, r)) {
      if (s_.loop_.land(piece.item, piece.length)) landed_.push_back(piece.item);
    }
  }
  if (s_.options_.on_landed) {
    for (const std::size_t item : landed_)
      s_.options_.on_landed(LoadedTensor{item, s_.bytes_of(item), nullptr});
  }
  s_.loop_.complete(landed_);
}

}  // namespace onnxmap::detail
