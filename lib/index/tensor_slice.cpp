#include "index/tensor_slice.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "common/fault_guard.hpp"
#include "index/payload_trim.hpp"
#include "index/tensor_fields.hpp"
#include "index/tensor_table.hpp"

namespace onnxmap::detail {

namespace {

// A level with fewer tensors is read on one thread: below it, starting a thread costs about what
// it saves (some 100 ns a tensor), least of all on a busy machine.
constexpr std::uint32_t kMinTensors = 16384;

}  // namespace

std::unique_ptr<TensorSlice> TensorSlice::start(ModelIndex& index, const PassContext& ctx,
                                                PodTable<std::uint32_t>& name_hashes,
                                                std::uint32_t begin, std::uint32_t end,
                                                std::uint32_t count) {
  if (count < kMinTensors || !gets_tensor_record(MessageKind::TensorProto, ctx.metadata()) ||
      std::thread::hardware_concurrency() < 2) {
    return nullptr;
  }
  std::unique_ptr<TensorSlice> slice(new TensorSlice);
  const std::uint32_t before = count / 2;  // the first half's tensors, read by the serial scan
  // From the level's end back: only the records of the second half are read (a graph's
  // initializers come last, as writers put them).
  slice->entries_.reserve(count - before);
  for (std::uint32_t id = end; id-- > begin && slice->entries_.size() < count - before;) {
    if (index.kind(id) != MessageKind::TensorProto) continue;
    slice->entries_.push_back({id, index.messages[id].merged != 0, index.span(id)});
  }
  std::reverse(slice->entries_.begin(), slice->entries_.end());
  const std::size_t level_tensors = index.tensors.size();
  slice->first_tensor_ = static_cast<std::uint32_t>(level_tensors + before);
  slice->max_tensors_ = ctx.options.max_tensors;
  // Room for the whole level, so that neither table moves while the thread writes into it.
  index.tensors.reserve(level_tensors + count);
  name_hashes.reserve(level_tensors + count);
  TensorRecord* out = index.tensors.data() + slice->first_tensor_;
  std::uint32_t* hashes = name_hashes.data() + slice->first_tensor_;
  slice->thread_ = std::thread([slice = slice.get(), file = ctx.file, page = ctx.page, out,
                                hashes] { slice->read_guarded(file, page, out, hashes); });
  return slice;
}

TensorSlice::~TensorSlice() {
  if (thread_.joinable()) thread_.join();
}

// The thread's work: index_tensor's for a tensor of the common layout, up to the first tensor
// that is not, or whose reading would fail or need the serial pass.
void TensorSlice::read(const std::byte* file, std::uint64_t page, TensorRecord* out,
                       std::uint32_t* hashes) {
  std::size_t dims_kept = 0;
  for (std::uint32_t i = 0; i < entries_.size(); ++i) {
    const Entry& entry = entries_[i];
    if (entry.merged || first_tensor_ + i >= max_tensors_) break;
    TensorFields fields;
    TensorRecord tensor;
    tensor.message = entry.record;
    tensor.dims_begin = static_cast<std::uint32_t>(dims_.size());
    if (!read_common_tensor(file, entry.span, page, dims_, fields)) break;
    if (fields.raw && !PayloadTrimmer::ignores_known_mapped(*fields.raw)) break;
    tensor.dims_count = static_cast<std::uint32_t>(dims_.size() - tensor.dims_begin);
    const std::span<const std::int64_t> dims(dims_.data() + tensor.dims_begin, tensor.dims_count);
    // Not external (the common layout has no data_location), so no file is ever opened.
    auto located = locate_payload(fields, dims, entry.span.offset, OpenDataFile{});
    if (!std::holds_alternative<Payload>(located)) break;
    fill_tensor_record(fields, std::get<Payload>(located), tensor);
    out[i] = tensor;
    hashes[i] = tensor.name_hash;
    dims_kept = dims_.size();
    done_ = i + 1;
  }
  dims_.truncate(dims_kept);
}

void TensorSlice::read_guarded(const std::byte* file, std::uint64_t page, TensorRecord* out,
                               std::uint32_t* hashes) noexcept {
  try {
    // A file that shrinks while it is read faults on this thread, which no guard of the caller's
    // thread covers: this one's reads zeros instead, and then the slice is dropped.
    guard_reads([&] {
      try {
        read(file, page, out, hashes);
      } catch (...) {
        // What threw (malformed framing, memory) the serial scan of that tensor throws again.
      }
    });
  } catch (...) {
    done_ = 0;  // a fault: what was read may hold zeros; the serial scan reads it all again
    dims_.truncate(0);
  }
}

void TensorSlice::join(ModelIndex& index, PodTable<std::uint32_t>& name_hashes) {
  thread_.join();
  // Read before first_record(), the first half's tensors are all in.
  assert(index.tensors.size() == first_tensor_ && name_hashes.size() == first_tensor_);
  index.tensors.take_written(done_);
  name_hashes.take_written(done_);
  const std::size_t dims_base = index.dims.size();
  for (std::uint32_t i = 0; i < done_; ++i) {
    index.tensors[first_tensor_ + i].dims_begin += static_cast<std::uint32_t>(dims_base);
  }
  index.dims.reserve(dims_base + dims_.size());
  if (!dims_.empty()) {
    std::memcpy(index.dims.data() + dims_base, dims_.data(), dims_.size() * sizeof(std::int64_t));
  }
  index.dims.take_written(dims_.size());
}

bool TensorSlice::indexed(std::uint32_t id) noexcept {
  if (next_ >= done_ || entries_[next_].record != id) return false;
  ++next_;
  return true;
}

}  // namespace onnxmap::detail
