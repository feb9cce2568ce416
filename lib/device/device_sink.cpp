// The device sink (device_sink.hpp).

#include "device/device_sink.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "onnxmap/bytes.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::detail {

// One worker: its stream, its slot of the ring (allocated on first need), and the copies
// queued on its stream whose completion is not counted yet. Its destructor waits for the
// stream before the slot goes, so nothing is freed under a copy, also on the way out of an
// error.
class DeviceSink::Stream final : public LoadSink::Worker {
 public:
  Stream(DeviceSink& sink, unsigned stream) : s_(sink), stream_(stream) {}
  ~Stream() override;
  void run(const LoadUnit& unit) override;
  void finish() override { settle(); }

 private:
  struct Pending {
    std::size_t item;
    std::uint64_t bytes;
  };
  // Waits for the stream and lands what it copied; a failure names the first tensor whose
  // copies were in flight.
  void settle();
  void land();
  std::byte* slot();
  void stage_request(const Request& request);
  void register_request(const Request& request);
  void stage_item(std::size_t item);
  void copy(std::size_t item, std::uint64_t at, const std::byte* from, std::uint64_t length,
            bool staged);

  DeviceSink& s_;
  unsigned stream_;
  std::optional<PinnedMemory> slot_;
  std::vector<Pending> pending_;
  UnitCounts counts_;    // of the copies pending
  DeviceLoadStats own_;  // the device's fields, added to the sink's at the end
  std::vector<std::size_t> landed_;
};

DeviceSink::Stream::~Stream() {
  s_.engine_.drain(stream_);
  const std::lock_guard lock(s_.loop_.lock);
  s_.stats_.bytes_staged += own_.bytes_staged;
  s_.stats_.bytes_registered += own_.bytes_registered;
  s_.stats_.pinned_bytes += own_.pinned_bytes;
  s_.stats_.registrations += own_.registrations;
  s_.stats_.registrations_refused += own_.registrations_refused;
}

void DeviceSink::Stream::settle() {
  try {
    s_.engine_.synchronize(stream_);
  } catch (const Error& e) {
    if (pending_.empty()) throw;
    s_.throw_naming(e, pending_.front().item);
  }
  land();
}

void DeviceSink::Stream::land() {
  if (pending_.empty()) return;
  landed_.clear();
  {
    const std::lock_guard lock(s_.loop_.lock);
    s_.loop_.count(counts_);
    for (const Pending& p : pending_) {
      if (s_.loop_.land(p.item, p.bytes)) landed_.push_back(p.item);
    }
  }
  pending_.clear();
  counts_ = {};
  s_.loop_.complete(landed_);
}

std::byte* DeviceSink::Stream::slot() {
  if (!slot_) {
    slot_.emplace(s_.engine_, static_cast<std::size_t>(s_.ring_.slot_bytes));
    own_.pinned_bytes += s_.ring_.slot_bytes;
  }
  return slot_->data();
}

void DeviceSink::Stream::copy(std::size_t item, std::uint64_t at, const std::byte* from,
                              std::uint64_t length, bool staged) {
  s_.engine_.copy_async(s_.targets_of_[item] + at, from, static_cast<std::size_t>(length), stream_);
  pending_.push_back({item, length});
  (staged ? own_.bytes_staged : own_.bytes_registered) += length;
}

// The request read into the slot (its aligned range fits, as the plan was cut), each piece copied
// from where it landed.
void DeviceSink::Stream::stage_request(const Request& request) {
  settle();  // the slot's previous copies are done
  const io::FileReader& reader = s_.loop_.reader(request);
  const std::uint64_t length = request.end - request.begin;
  const std::span<const std::byte> got =
      reader.read(request.begin, length, {slot(), static_cast<std::size_t>(s_.ring_.slot_bytes)});
  counts_.bytes_read += LoadLoop::bytes_read(reader, request.begin, length);
  std::vector<PieceBytes> passing;
  for (const ReadPiece& piece : pieces_of(s_.plan_, request)) {
    const std::byte* from = got.data() + (piece.offset - request.begin);
    copy(piece.item, piece.item_offset, from, piece.length, true);
    passing.push_back({piece.item, piece.item_offset, {from, piece.length}});
  }
  s_.pass(passing);
}

// The pages under the request registered, copied from, and unregistered once copied.
void DeviceSink::Stream::register_request(const Request& request) {
  const std::byte* map = s_.plan_.files[request.file].file->bytes().data();
  const std::uint64_t begin = io::align_down(request.begin);
  const std::uint64_t length = io::align_up(request.end) - begin;
  if (!s_.engine_.register_host(map + begin, static_cast<std::size_t>(length))) {
    ++own_.registrations_refused;
    stage_request(request);
    return;
  }
  ++own_.registrations;
  {
    const Registration registration(s_.engine_, map + begin, stream_);
    std::vector<PieceBytes> passing;
    for (const ReadPiece& piece : pieces_of(s_.plan_, request)) {
      copy(piece.item, piece.item_offset, map + piece.offset, piece.length, false);
      passing.push_back({piece.item, piece.item_offset, {map + piece.offset, piece.length}});
    }
    s_.pass(passing);
    s_.engine_.synchronize(stream_);
  }
  land();
}

// An item in memory (or decoded from typed fields) copied through the slot a part at a time.
void DeviceSink::Stream::stage_item(std::size_t item) {
  std::optional<TensorData> decoded;
  const std::span<const std::byte> bytes = bytes_in_memory(s_.plan_.items[item], decoded);
  const PieceBytes whole{item, 0, bytes};
  s_.pass({&whole, 1});
  for (std::uint64_t at = 0; at < bytes.size(); at += s_.ring_.slot_bytes) {
    settle();
    const auto part = static_cast<std::size_t>(std::min(s_.ring_.slot_bytes, bytes.size() - at));
    copy_bytes(bytes.subspan(static_cast<std::size_t>(at), part), {slot(), part});
    counts_.bytes_copied += part;
    copy(item, at, slot(), part, true);
  }
}

void DeviceSink::Stream::run(const LoadUnit& unit) {
  if (unit.of == LoadUnit::Of::item) {
    try {
      stage_item(unit.index);
    } catch (const Error& e) {
      s_.throw_naming(e, unit.index);
    }
    return;
  }
  const Request& request = s_.plan_.requests[unit.index];
  ++counts_.requests;
  try {
    if (s_.paths_[unit.index] == RequestPath::registered) {
      register_request(request);
    } else {
      stage_request(request);
    }
  } catch (const Error& e) {
    s_.throw_naming(e, pieces_of(s_.plan_, request).front().item);  // the request's first tensor
  }
}

void DeviceSink::deliver_unstreamed(std::size_t item) {
  if (on_piece_) on_piece_(LoadedPiece{item, 0, {}});
}

void DeviceSink::pass(std::span<const PieceBytes> pieces) {
  if (!on_piece_) return;
  std::vector<const PieceBytes*> waiting;
  for (const PieceBytes& piece : pieces) {
    if (!pass_if_due(piece, false)) waiting.push_back(&piece);
  }
  for (const PieceBytes* piece : waiting) (void)pass_if_due(*piece, true);
}

bool DeviceSink::pass_if_due(const PieceBytes& piece, bool wait) {
  {
    // Workers take units in file order, so the earliest piece not yet passed is always held by
    // a worker that waits for no other: these waits end.
    std::unique_lock held(loop_.lock);
    const auto due = [&] { return passed_[piece.item] == piece.at || loop_.stopped(); };
    if (wait) loop_.changed.wait(held, due);
    if (loop_.stopped()) return true;
    if (!due()) return false;
  }
  on_piece_(LoadedPiece{piece.item, piece.at, piece.bytes});
  const std::lock_guard held(loop_.lock);
  passed_[piece.item] += piece.bytes.size();
  loop_.changed.notify_all();
  return true;
}

// A device error that names no tensor yet names `item`'s; other errors pass unchanged.
void DeviceSink::throw_naming(const Error& e, std::size_t item) const {
  if (e.kind() != ErrorKind::device || !e.field_path().empty()) throw e;
  const Tensor& tensor = plan_.items[item].load_item->tensor;
  throw Error(e.kind(), e.detail(), e.offset(), tensor.path(), e.file());
}

DeviceSink::DeviceSink(const LoadPlan& plan, const Ring& ring, DeviceTargets targets,
                       const DeviceLoadOptions& options, CopyEngine& engine, LoadLoop& loop)
    : plan_(plan),
      targets_(targets),
      engine_(engine),
      ring_(ring),
      paths_(request_paths(plan, {options.path, options.load.mode, engine.prefers_registration()})),
      targets_of_(plan.items.size(), nullptr),
      on_piece_(options.on_piece),
      passed_(plan.items.size(), 0),
      loop_(loop) {}

DeviceLoadStats DeviceSink::load(const LoadPlan& plan, const Ring& ring, DeviceTargets targets,
                                 const DeviceLoadOptions& options, CopyEngine& engine) {
  LoadLoop loop(plan, options.load, "the load to " + engine.name());
  DeviceSink sink(plan, ring, targets, options, engine, loop);
  const LoadStats common = loop.run(sink);
  DeviceLoadStats stats = sink.stats_;
  static_cast<LoadStats&>(stats) = common;
  return stats;
}

unsigned DeviceSink::start(std::size_t units) {
  stats_.threads = static_cast<unsigned>(std::min<std::size_t>(ring_.threads, units));
  engine_.make_streams(stats_.threads);
  return stats_.threads;
}

std::unique_ptr<LoadSink::Worker> DeviceSink::worker(unsigned index) {
  engine_.bind_thread();
  return std::make_unique<Stream>(*this, index);
}

// The destinations of the unit's items, asked for as they are first scheduled.
void DeviceSink::claim(const LoadUnit& unit) {
  if (unit.of == LoadUnit::Of::item) {
    schedule(unit.index);
    return;
  }
  for (const ReadPiece& piece : pieces_of(plan_, plan_.requests[unit.index])) {
    schedule(piece.item);
  }
}

// Asks for `item`'s destination the first time one of its units is taken.
void DeviceSink::schedule(std::size_t item) {
  if (targets_of_[item] != nullptr) return;
  void* to =
      targets_.buffer_for != nullptr ? (*targets_.buffer_for)(item) : targets_.pointers[item];
  if (to == nullptr) {
    throw Error(ErrorKind::invalid_argument, "no destination to copy to", Error::kNoOffset,
                plan_.items[item].load_item->tensor.path());
  }
  targets_of_[item] = static_cast<std::byte*>(to);
}

}  // namespace onnxmap::detail
