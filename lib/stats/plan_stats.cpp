// The statistics of a plan's items, counted on the loader's reading threads (stats.hpp).

#include <functional>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "onnxmap/error.hpp"
#include "onnxmap/stats.hpp"
#include "stats/patterns.hpp"
#include "stats/pieces.hpp"
#include "stats/values.hpp"

namespace onnxmap {

namespace {

using detail::ElementRange;

// An item counted piece by piece: its bit patterns' counts so far, and the elements counted.
struct PartialCounts {
  std::vector<std::uint64_t> counts;
  std::vector<ElementRange> done;
};

// The loader's work (LoadOptions::on_piece, on_landed) that counts a plan. An item of a type
// counted by bit pattern has each piece counted where it lands, its elements cut between pieces
// once it is all in; any other item is counted whole by tensor_stats once it is all in.
class PlanCounter {
 public:
  PlanCounter(std::span<const LoadItem> plan, unsigned bins, std::function<bool()> cancelled)
      : plan_(plan), bins_(bins), cancelled_(std::move(cancelled)), out_(plan.size()) {}

  void piece(const LoadedPiece& piece) {
    const LoadItem& item = plan_[piece.item];
    const DataType type = item.tensor.data_type();
    const std::uint64_t count = detail::item_elements(item);
    const std::uint64_t bits = element_bits(type);
    // An item in one piece is counted whole by landed(), on this thread, next.
    if (!detail::counted_by_pattern(type, count) || piece.bytes.size() * 8 >= count * bits) return;
    const ElementRange whole =
        detail::whole_elements(piece.offset, piece.bytes.size(), bits, count);
    // A piece too small to be worth its own table of counts is left to landed().
    if (whole.last - whole.first < (std::uint64_t{1} << bits) / 4) return;
    std::vector<std::uint64_t> counts(std::size_t{1} << bits);
    const std::byte* item_start = piece.bytes.data() - piece.offset;
    detail::add_patterns(item_start, whole.first, whole.last, bits, counts);
    const std::lock_guard lock(mutex_);
    PartialCounts& partial = partial_[piece.item];
    if (partial.counts.empty()) {
      partial.counts = std::move(counts);
    } else {
      for (std::size_t k = 0; k < counts.size(); ++k) partial.counts[k] += counts[k];
    }
    partial.done.push_back(whole);
  }

  void landed(const LoadedTensor& t) {
    const LoadItem& item = plan_[t.item];
    const DataType type = item.tensor.data_type();
    if (!has_stats(type)) return;
    const std::uint64_t count = detail::item_elements(item);
    std::optional<PartialCounts> partial;
    {
      const std::lock_guard lock(mutex_);
      if (const auto found = partial_.find(t.item); found != partial_.end()) {
        partial = std::move(found->second);
        partial_.erase(found);
      }
    }
    if (!partial) {
      out_[t.item] = detail::tensor_stats_until(t.bytes, type, count, bins_, cancelled_);
      return;
    }
    detail::check_values(t.bytes, type, count);
    const std::uint64_t bits = element_bits(type);
    for (const ElementRange& r : detail::left_over(std::move(partial->done), count)) {
      detail::add_patterns(t.bytes.data(), r.first, r.last, bits, partial->counts);
    }
    out_[t.item] = detail::stats_from_patterns(partial->counts, type, count, bins_);
  }

  // Each item's statistics, once the load has returned.
  [[nodiscard]] std::vector<std::optional<TensorStats>> results() && { return std::move(out_); }

 private:
  std::span<const LoadItem> plan_;
  unsigned bins_;
  std::function<bool()> cancelled_;  // LoadOptions::cancelled: asked while counting a whole item
  std::vector<std::optional<TensorStats>> out_;  // item i written by its on_landed alone
  std::mutex mutex_;
  std::unordered_map<std::size_t, PartialCounts> partial_;  // guarded by mutex_
};

}  // namespace

std::vector<std::optional<TensorStats>> plan_stats(std::span<const LoadItem> plan, unsigned bins,
                                                   const LoadOptions& options) {
  if (bins == 0) throw Error(ErrorKind::invalid_argument, "a histogram of 0 bins");
  PlanCounter counter(plan, bins, options.cancelled);
  LoadOptions work = options;
  work.on_piece = [&counter](const LoadedPiece& piece) { counter.piece(piece); };
  work.on_landed = [&counter](const LoadedTensor& t) { counter.landed(t); };
  (void)load(plan, {}, work);
  return std::move(counter).results();
}

}  // namespace onnxmap
