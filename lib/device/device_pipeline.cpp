// The device loader's pipeline (device_pipeline.hpp).

#include "device/device_pipeline.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <thread>

#include "onnxmap/bytes.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::detail {

// One worker: its stream, its slot of the ring (allocated on first need), and the copies
// queued on its stream whose completion is not counted yet. Its destructor waits for the
// stream before the slot goes, so nothing is freed under a copy, also on the way out of an
// error.
class DevicePipeline::Worker {
 public:
  Worker(DevicePipeline& pipeline, unsigned stream) : p_(pipeline), stream_(stream) {}
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker() { p_.engine_.drain(stream_); }

  void run(const Unit& unit);
  // Waits for the stream and counts what it copied; a failure names the first tensor whose
  // copies were in flight.
  void settle() {
    try {
      p_.engine_.synchronize(stream_);
    } catch (const Error& e) {
      if (pending_.empty()) throw;
      p_.throw_naming(e, pending_.front().item);
    }
    p_.complete(pending_);
  }
  DeviceLoadStats stats;

 private:
  std::byte* slot();
  void stage_request(const Request& request);
  void register_request(const Request& request);
  void stage_memory(std::size_t item);
  void copy(std::size_t item, std::uint64_t at, const std::byte* from, std::uint64_t length,
            bool staged);

  DevicePipeline& p_;
  unsigned stream_;
  std::optional<PinnedMemory> slot_;
  std::vector<Pending> pending_;
};

std::byte* DevicePipeline::Worker::slot() {
  if (!slot_) {
    slot_.emplace(p_.engine_, static_cast<std::size_t>(p_.ring_.slot_bytes));
    stats.pinned_bytes += p_.ring_.slot_bytes;
  }
  return slot_->data();
}

void DevicePipeline::Worker::copy(std::size_t item, std::uint64_t at, const std::byte* from,
                                  std::uint64_t length, bool staged) {
  p_.engine_.copy_async(p_.target(item) + at, from, static_cast<std::size_t>(length), stream_);
  pending_.push_back({item, length, staged});
  (staged ? stats.bytes_staged : stats.bytes_registered) += length;
}

// The request read into the slot (its aligned range fits, ring_cut), each piece copied from
// where it landed.
void DevicePipeline::Worker::stage_request(const Request& request) {
  settle();  // the slot's previous copies are done
  const io::FileReader& reader = p_.run_.reader(request);
  const std::uint64_t length = request.end - request.begin;
  const std::span<const std::byte> got =
      reader.read(request.begin, length, {slot(), static_cast<std::size_t>(p_.ring_.slot_bytes)});
  stats.bytes_read += LoadRun::bytes_read(reader, request.begin, length);
  for (const ReadPiece& piece : pieces_of(p_.plan_, request)) {
    copy(piece.item, piece.item_offset, got.data() + (piece.offset - request.begin), piece.length,
         true);
  }
}

// The pages under the request registered, copied from, and unregistered once copied.
void DevicePipeline::Worker::register_request(const Request& request) {
  const std::byte* map = p_.plan_.files[request.file].file->bytes().data();
  const std::uint64_t begin = io::align_down(request.begin);
  const std::uint64_t length = io::align_up(request.end) - begin;
  if (!p_.engine_.register_host(map + begin, static_cast<std::size_t>(length))) {
    ++stats.registrations_refused;
    stage_request(request);
    return;
  }
  ++stats.registrations;
  {
    const Registration registration(p_.engine_, map + begin, stream_);
    for (const ReadPiece& piece : pieces_of(p_.plan_, request)) {
      copy(piece.item, piece.item_offset, map + piece.offset, piece.length, false);
    }
    p_.engine_.synchronize(stream_);
  }
  p_.complete(pending_);
}

// An item in memory (or decoded from typed fields) copied through the slot a part at a time.
void DevicePipeline::Worker::stage_memory(std::size_t item) {
  std::optional<TensorData> decoded;
  const std::span<const std::byte> bytes = bytes_in_memory(p_.plan_.items[item], decoded);
  for (std::uint64_t at = 0; at < bytes.size(); at += p_.ring_.slot_bytes) {
    settle();
    const auto part = static_cast<std::size_t>(std::min(p_.ring_.slot_bytes, bytes.size() - at));
    copy_bytes(bytes.subspan(static_cast<std::size_t>(at), part), {slot(), part});
    copy(item, at, slot(), part, true);
  }
}

void DevicePipeline::Worker::run(const Unit& unit) {
  if (unit.kind == UnitKind::memory) {
    try {
      stage_memory(unit.index);
    } catch (const Error& e) {
      p_.throw_naming(e, unit.index);
    }
    return;
  }
  const Request& request = p_.plan_.requests[unit.index];
  try {
    if (unit.kind == UnitKind::registered) {
      register_request(request);
    } else {
      stage_request(request);
    }
  } catch (const Error& e) {
    p_.throw_naming(e, pieces_of(p_.plan_, request).front().item);  // the request's first tensor
  }
}

// A device error that names no tensor yet names `item`'s; other errors pass unchanged.
void DevicePipeline::throw_naming(const Error& e, std::size_t item) const {
  if (e.kind() != ErrorKind::device || !e.field_path().empty()) throw e;
  const Tensor& tensor = plan_.items[item].request->tensor;
  throw Error(e.kind(), e.detail(), e.offset(), tensor.path(), e.file());
}

DevicePipeline::DevicePipeline(const LoadPlan& plan, const Ring& ring, DeviceTargets targets,
                               const DeviceLoadOptions& options, CopyEngine& engine)
    : plan_(plan),
      targets_(targets),
      options_(options),
      engine_(engine),
      ring_(ring),
      targets_of_(plan.items.size(), nullptr),
      run_(plan, options.load, "the load to " + engine.name()),
      remaining_(plan.items.size(), 0) {
  units_ = make_units(plan, {options.path, options.load.mode, engine.prefers_registration()});
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    remaining_[i] = plan.items[i].length;
    total_bytes_ += plan.items[i].length;
    if (remaining_[i] > 0)
      ++items_left_;
    else
      ++stats_.tensors;  // nothing to copy: on the device already
  }
}

std::byte* DevicePipeline::target(std::size_t item) const {
  return targets_of_[item];
}

// The next unit, its items' targets asked for as they are first scheduled; null at the end,
// after a failure or a cancellation.
const Unit* DevicePipeline::take() {
  const std::lock_guard lock(run_.lock);
  if (run_.stopped() || next_unit_ >= units_.size()) return nullptr;
  const Unit& unit = units_[next_unit_++];
  if (unit.kind == UnitKind::memory) {
    schedule(unit.index);
  } else {
    for (const ReadPiece& piece : pieces_of(plan_, plan_.requests[unit.index])) {
      schedule(piece.item);
    }
  }
  return &unit;
}

// Asks for `item`'s destination the first time one of its units is taken.
void DevicePipeline::schedule(std::size_t item) {
  if (targets_of_[item] != nullptr) return;
  void* to =
      targets_.buffer_for != nullptr ? (*targets_.buffer_for)(item) : targets_.pointers[item];
  if (to == nullptr) {
    throw Error(ErrorKind::invalid_argument, "no destination to copy to", Error::kNoOffset,
                plan_.items[item].request->tensor.path());
  }
  targets_of_[item] = static_cast<std::byte*>(to);
}

void DevicePipeline::complete(std::vector<Pending>& pending) {
  if (pending.empty()) return;
  {
    const std::lock_guard lock(run_.lock);
    for (const Pending& p : pending) {
      done_bytes_ += p.bytes;
      remaining_[p.item] -= p.bytes;
      if (remaining_[p.item] == 0) {
        --items_left_;
        ++stats_.tensors;
      }
    }
  }
  pending.clear();
  run_.changed.notify_all();
}

void DevicePipeline::work(unsigned stream) {
  try {
    engine_.bind_thread();
    Worker worker(*this, stream);
    while (const Unit* unit = take()) worker.run(*unit);
    worker.settle();
    const std::lock_guard lock(run_.lock);
    stats_.bytes_staged += worker.stats.bytes_staged;
    stats_.bytes_registered += worker.stats.bytes_registered;
    stats_.bytes_read += worker.stats.bytes_read;
    stats_.pinned_bytes += worker.stats.pinned_bytes;
    stats_.registrations += worker.stats.registrations;
    stats_.registrations_refused += worker.stats.registrations_refused;
  } catch (...) {
    run_.fail(std::current_exception());
  }
  {
    const std::lock_guard lock(run_.lock);
    --running_;
  }
  run_.changed.notify_all();
}

// Progress and cancellation, on the calling thread; true: stop.
bool DevicePipeline::report() {
  std::uint64_t done = 0;
  std::size_t tensors = 0;
  {
    const std::lock_guard lock(run_.lock);
    done = done_bytes_;
    tensors = stats_.tensors;
  }
  return run_.report(tensors, done, total_bytes_);
}

DeviceLoadStats DevicePipeline::run() {
  const auto threads = static_cast<unsigned>(
      std::min<std::size_t>(ring_.threads, std::max<std::size_t>(1, units_.size())));
  stats_.threads = threads;
  engine_.make_streams(threads);
  running_ = threads;
  {
    std::vector<std::jthread> workers;
    for (unsigned t = 0; t < threads; ++t) workers.emplace_back([this, t] { work(t); });
    std::uint64_t reported = UINT64_MAX;
    while (true) {
      std::unique_lock lock(run_.lock);
      run_.changed.wait(lock, [&] {
        return run_.failed() || items_left_ == 0 || running_ == 0 || done_bytes_ != reported;
      });
      if (run_.failed() || items_left_ == 0 || running_ == 0) break;
      reported = done_bytes_;
      lock.unlock();
      if (report()) break;
    }
  }  // joins: every worker has waited for its stream and let its slot go
  run_.rethrow_failure();
  (void)report();
  stats_.bytes = total_bytes_;
  stats_.direct = run_.all_direct();
  return stats_;
}

}  // namespace onnxmap::detail
