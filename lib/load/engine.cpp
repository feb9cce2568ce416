// The loader's engine (engine.hpp).

#include "load/engine.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <thread>

#include "onnxmap/bytes.hpp"

namespace onnxmap::detail {

LoadStats Engine::run() {
  for (const auto& item : plan_.items) bytes_total_ += item.length;
  // Bytes in memory already, and typed fields, need no reading threads.
  std::size_t streamed = 0;
  for (std::size_t i = 0; i < plan_.items.size(); ++i) {
    const auto& item = plan_.items[i];
    if (item.source == ItemSource::stream) {
      states_[i].remaining = item.length;
      ++streamed;
      continue;
    }
    deliver_in_memory(i);
  }
  std::vector<std::jthread> pool;
  const auto threads = std::min<std::size_t>(std::max(1U, options_.threads), plan_.requests.size());
  for (std::size_t t = 0; t < threads; ++t) pool.emplace_back([this] { worker(); });
  // Without a progress or cancel callback to serve, only completed tensors wake this thread.
  const bool watched = run_.watched();
  for (std::size_t done = 0; done < streamed;) {
    std::unique_lock lock(run_.lock);
    run_.changed.wait(lock, [&] {
      return !complete_.empty() || run_.failed() || (watched && landed_ != landed_reported_);
    });
    if (run_.failed()) break;
    if (complete_.empty()) {
      lock.unlock();
      if (report_progress()) break;
      continue;
    }
    ++done;
    const std::size_t item = complete_.front();
    complete_.pop_front();
    lock.unlock();
    try {
      deliver(item, bytes_of(item), states_[item].owned);
    } catch (...) {
      run_.fail(std::current_exception());
      break;
    }
    finish(item);
  }
  run_.stop();
  pool.clear();  // joins
  run_.rethrow_failure();
  stats_.direct = run_.all_direct();
  stats_.retries = plan_.fetched.retries;
  stats_.retry_wait_ms = plan_.fetched.retry_wait_ms;
  return stats_;
}

void Engine::deliver(std::size_t item, std::span<const std::byte> bytes,
                     std::shared_ptr<const void> owner) {
  if (on_tensor_) on_tensor_(LoadedTensor{item, bytes, std::move(owner)});
  ++stats_.tensors;
  stats_.bytes += bytes.size();
  if (plan_.items[item].source != ItemSource::stream) memory_bytes_done_ += bytes.size();
  if (report_progress()) run_.rethrow_failure();  // the cancellation
}

bool Engine::report_progress() {
  if (!run_.watched()) return false;
  {
    const std::lock_guard lock(run_.lock);
    landed_reported_ = landed_;
  }
  return run_.report(stats_.tensors, memory_bytes_done_ + landed_reported_, bytes_total_);
}

// An item whose bytes are in memory or decoded: handed over as is, or copied to its buffer.
void Engine::deliver_in_memory(std::size_t i) {
  const auto& item = plan_.items[i];
  std::optional<TensorData> decoded;
  std::span<const std::byte> bytes = bytes_in_memory(item, decoded);
  if (!buffers_.empty() || buffer_for_ != nullptr) {
    const std::span<std::byte> target = buffers_.empty() ? caller_buffer(i) : buffers_[i];
    copy_bytes(bytes, target);  // guarded: a fault in a mapped file is an error
    stats_.bytes_copied += bytes.size();
    bytes = target;
  }
  if (options_.on_piece) options_.on_piece(LoadedPiece{i, 0, bytes});
  if (options_.on_landed) options_.on_landed(LoadedTensor{i, bytes, nullptr});
  deliver(i, bytes);
}

std::span<const std::byte> Engine::bytes_of(std::size_t item) const {
  const std::span<std::byte> target = states_[item].target;
  return target.empty() ? plan_.items[item].view : target;
}

std::span<std::byte> Engine::caller_buffer(std::size_t item) const {
  const std::span<std::byte> buffer = (*buffer_for_)(item);
  if (buffer.size() != plan_.items[item].length) {
    throw Error(ErrorKind::invalid_argument,
                "buffer of " + std::to_string(buffer.size()) + " bytes for " +
                    std::to_string(plan_.items[item].length) + " bytes to load",
                Error::kNoOffset, plan_.items[item].request->tensor.path());
  }
  return buffer;
}

void Engine::finish(std::size_t item) {
  const auto& resolved = plan_.items[item];
  ItemState& state = states_[item];
  if (options_.mode == LoadMode::map && options_.release_after_callback) {
    plan_.files[resolved.file].file->release(resolved.offset, resolved.length);
  }
  const std::lock_guard lock(run_.lock);
  // A buffer the callback kept an owner of is the caller's now; the others are reused.
  if (state.owned && state.owned.use_count() == 1) {
    pool_.give(std::move(*state.owned));
  } else if (state.owned) {
    pool_.forget(state.owned->size());
  }
  state.owned.reset();
  if (state.in_flight) {
    // Left in in_flight_ until must_wait() sweeps it: erasing here cost a pass over every item
    // in flight for each one that finished (180 000 tiny tensors: seconds).
    in_flight_bytes_ -= state.charge;
    state.in_flight = false;
  }
  run_.changed.notify_all();
}

void Engine::worker() {
  io::AlignedBuffer staging;  // made on the first request that needs it
  while (true) {
    std::unique_lock lock(run_.lock);
    const std::optional<std::size_t> request = take_request(lock);
    if (!request) return;
    lock.unlock();
    try {
      read_request(plan_.requests[*request], staging);
    } catch (...) {
      run_.fail(std::current_exception());
      return;
    }
  }
}

bool Engine::must_wait(std::size_t request, std::uint64_t need) {
  if (need == 0 || in_flight_bytes_ + need <= options_.max_in_flight_bytes) return false;
  std::erase_if(in_flight_, [&](std::size_t item) { return !states_[item].in_flight; });
  // Wait only for tensors that can complete without this request: those ending before it.
  return std::any_of(in_flight_.begin(), in_flight_.end(),
                     [&](std::size_t item) { return plan_.items[item].last_request < request; });
}

std::optional<std::size_t> Engine::take_request(std::unique_lock<std::mutex>& lock) {
  const bool library = buffers_.empty();
  while (true) {
    if (run_.stopped() || next_request_ >= plan_.requests.size()) return std::nullopt;
    const Request& r = plan_.requests[next_request_];
    std::uint64_t need = 0;
    for (const ReadPiece& piece : pieces_of(plan_, r)) {
      const detail::ResolvedItem& item = plan_.items[piece.item];
      if (piece.item_offset != 0 || !library) continue;
      need +=
          item.own_buffer ? io::FileReader::staging_size(item.offset, item.length) : item.length;
    }
    if (!must_wait(next_request_, need)) break;
    run_.changed.wait(lock);
  }
  const Request& r = plan_.requests[next_request_];
  for (const ReadPiece& piece : pieces_of(plan_, r)) {
    if (piece.item_offset != 0) continue;
    ItemState& state = states_[piece.item];
    const std::uint64_t length = plan_.items[piece.item].length;
    if (!library) {
      state.target = buffers_[piece.item];
      continue;
    }
    if (buffer_for_ != nullptr) {
      try {
        state.target = caller_buffer(piece.item);
      } catch (...) {
        run_.fail_locked(std::current_exception());
        return std::nullopt;
      }
    } else if (options_.mode != LoadMode::map) {
      assign_library_buffer(piece.item);
    }
    state.charge = std::max<std::uint64_t>(length, state.owned ? state.owned->size() : 0);
    state.in_flight = true;
    in_flight_.push_back(piece.item);
    in_flight_bytes_ += state.charge;
  }
  return next_request_++;
}

// A library buffer for `item`: its bytes alone, or for an own_buffer item the aligned range
// around them, so that its direct reads land in place.
void Engine::assign_library_buffer(std::size_t item) {
  const detail::ResolvedItem& resolved = plan_.items[item];
  ItemState& state = states_[item];
  const std::uint64_t skip = resolved.own_buffer ? resolved.offset % io::kDirectAlign : 0;
  const std::uint64_t size = resolved.own_buffer
                                 ? io::FileReader::staging_size(resolved.offset, resolved.length)
                                 : resolved.length;
  state.owned = std::make_shared<io::AlignedBuffer>(
      pool_.take(static_cast<std::size_t>(size), stats_.fresh_buffer_bytes));
  state.target = state.owned->span().subspan(static_cast<std::size_t>(skip),
                                             static_cast<std::size_t>(resolved.length));
}

bool Engine::read_in_place(const Request& r, std::span<std::byte> staging) {
  constexpr std::size_t kMaxVectors = 256;
  const io::FileReader& reader = run_.reader(r);
  if (reader.is_direct() || r.piece_count * 2 > kMaxVectors) return false;
  std::array<iovec, kMaxVectors> vectors{};
  std::size_t count = 0;
  std::uint64_t at = r.begin;
  for (const ReadPiece& piece : pieces_of(plan_, r)) {
    const std::span<std::byte> target = states_[piece.item].target;
    if (target.empty() || piece.offset < at) return false;  // map mode, or overlapping items
    if (piece.offset > at) vectors[count++] = {staging.data(), piece.offset - at};  // a gap
    vectors[count++] = {target.data() + piece.item_offset, piece.length};
    at = piece.offset + piece.length;
  }
  // A short read (a signal, the end of the file) goes the staging way, which names the error.
  return reader.read_scattered(std::span(vectors.data(), count), r.begin, r.end - r.begin);
}

// The aligned range around `r` lands in its item's own buffer, at the same distance from the
// buffer's start as from the item's aligned start in the file: the bytes are in place.
void Engine::read_own_buffer(const Request& r) {
  const ReadPiece& piece = plan_.pieces[r.first_piece];
  const std::span<std::byte> buffer = states_[piece.item].owned->span();
  const std::uint64_t base = io::align_down(plan_.items[piece.item].offset);
  (void)run_.reader(r).read(
      r.begin, r.end - r.begin,
      buffer.subspan(static_cast<std::size_t>(io::align_down(r.begin) - base)));
}

// Reads `r` and puts each piece in its item's buffer (map mode: in the page cache); returns the
// bytes copied to get them there.
std::uint64_t Engine::read_into_place(const Request& r, io::AlignedBuffer& staging) {
  if (r.own_buffer) {
    read_own_buffer(r);
    return 0;
  }
  if (staging.size() == 0 && plan_.largest_staged_request > 0) {
    staging = io::AlignedBuffer(
        static_cast<std::size_t>(plan_.largest_staged_request + 2 * io::kDirectAlign));
  }
  // Buffered reads go straight into the tensors' buffers; direct ones need aligned staging.
  if (read_in_place(r, staging.span())) return 0;
  const std::span<const std::byte> got =
      run_.reader(r).read(r.begin, r.end - r.begin, staging.span());
  std::uint64_t copied = 0;
  for (const ReadPiece& piece : pieces_of(plan_, r)) {
    const std::span<std::byte> target = states_[piece.item].target;
    if (target.empty()) continue;  // map mode: the read filled the page cache
    std::memcpy(target.data() + piece.item_offset, got.data() + (piece.offset - r.begin),
                static_cast<std::size_t>(piece.length));
    copied += piece.length;
  }
  return copied;
}

void Engine::work_on_pieces(const Request& r) {
  if (!options_.on_piece) return;
  for (const ReadPiece& piece : pieces_of(plan_, r)) {
    options_.on_piece(LoadedPiece{piece.item, piece.item_offset,
                                  bytes_of(piece.item)
                                      .subspan(static_cast<std::size_t>(piece.item_offset),
                                               static_cast<std::size_t>(piece.length))});
  }
}

void Engine::complete(const std::vector<std::size_t>& landed) {
  if (options_.on_landed) {
    for (const std::size_t item : landed)
      options_.on_landed(LoadedTensor{item, bytes_of(item), nullptr});
  }
  const std::lock_guard lock(run_.lock);
  complete_.insert(complete_.end(), landed.begin(), landed.end());
  // A request that completes no tensor still moves progress, which the caller may watch.
  if (!landed.empty() || run_.watched()) run_.changed.notify_all();
}

void Engine::read_request(const Request& r, io::AlignedBuffer& staging) {
  // Map mode only fills the page cache: bytes all in it already (the plan counted them) need no
  // read. In the direct mode, the same requests are read buffered (LoadRun::reader).
  const bool cached = options_.mode == LoadMode::map && r.resident;
  const std::uint64_t copied = cached ? 0 : read_into_place(r, staging);
  work_on_pieces(r);
  std::vector<std::size_t> landed;  // items whose last piece this was
  {
    const std::lock_guard lock(run_.lock);
    stats_.bytes_copied += copied;
    if (!cached) stats_.bytes_read += LoadRun::bytes_read(run_.reader(r), r.begin, r.end - r.begin);
    ++stats_.requests;
    for (const ReadPiece& piece : pieces_of(plan_, r)) {
      states_[piece.item].remaining -= piece.length;
      landed_ += piece.length;
      if (states_[piece.item].remaining == 0) landed.push_back(piece.item);
    }
  }
  complete(landed);
}

}  // namespace onnxmap::detail
