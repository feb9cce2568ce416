// How two runs of values differ (stats.hpp): compare_values, and compare_plans, which compares
// two plans' items on the loader's reading threads, piece by piece.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "io/fault_guard.hpp"
#include "onnxmap/error.hpp"
#include "onnxmap/stats.hpp"
#include "stats/pieces.hpp"
#include "stats/values.hpp"
#include "view/tensor_payload.hpp"

namespace onnxmap {

namespace {

using detail::ElementRange;

// Elements [first, last) of the items starting at `a` and `b`: byte runs equal in both are
// skipped without decoding (chunks of 65536 elements, which end on a byte boundary in any type).
ValuesDiff compare_range(const std::byte* a, const std::byte* b, DataType type, ElementRange range,
                         double tolerance) {
  const std::uint64_t bits = element_bits(type);
  constexpr std::uint64_t kChunk = 65536;
  ValuesDiff out;
  const std::span<const std::byte> a_bytes(
      a + range.first * bits / 8,
      static_cast<std::size_t>((range.last * bits + 7) / 8 - range.first * bits / 8));
  const std::span<const std::byte> b_bytes(b + range.first * bits / 8, a_bytes.size());
  detail::guard_faults(a_bytes, b_bytes, [&]() noexcept {
    ValuesDiff local;  // the kernel's own (kept in registers), handed out at its end
    detail::with_decoder(type, [&](auto decode) {
      for (std::uint64_t first = range.first; first < range.last; first += kChunk) {
        const std::uint64_t last = std::min(range.last, first + kChunk);
        const std::size_t from = first * bits / 8;
        const std::size_t to = (last * bits + 7) / 8;
        if (std::memcmp(a + from, b + from, to - from) == 0) continue;
        for (std::uint64_t i = first; i < last; ++i) {
          const double x = decode(a, i);
          const double y = decode(b, i);
          if (x == y || (std::isnan(x) && std::isnan(y))) continue;
          if (!std::isfinite(x) || !std::isfinite(y)) {
            ++local.differing;
            continue;
          }
          const double gap = std::abs(x - y);
          if (gap <= tolerance) continue;
          ++local.differing;
          local.max_abs = std::max(local.max_abs, gap);
          local.max_rel = std::max(local.max_rel, gap / std::max(std::abs(x), std::abs(y)));
        }
      }
    });
    out = local;
  });
  return out;
}

// Adds `part` into `total`: a count and two maxima, so the order of the parts does not matter.
void merge(ValuesDiff& total, const ValuesDiff& part) {
  total.differing += part.differing;
  total.max_abs = std::max(total.max_abs, part.max_abs);
  total.max_rel = std::max(total.max_rel, part.max_rel);
}

// compare_plans' refusals, before any read.
void check_pairs(std::span<const LoadItem> a, std::span<const LoadItem> b) {
  if (a.size() != b.size()) {
    throw Error(ErrorKind::invalid_argument, "plans of " + std::to_string(a.size()) + " and " +
                                                 std::to_string(b.size()) + " items to compare");
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    const Tensor& x = a[i].tensor;
    const Tensor& y = b[i].tensor;
    const auto refuse = [&](const std::string& why) {
      return Error(ErrorKind::invalid_argument, "cannot compare with " + y.path() + ": " + why,
                   Error::kNoOffset, x.path());
    };
    if (x.data_type() != y.data_type() || !has_stats(x.data_type())) {
      throw refuse("values of " + to_string(x.data_type()) + " and " + to_string(y.data_type()));
    }
    if (a[i].byte_size() != b[i].byte_size() ||
        detail::item_elements(a[i]) != detail::item_elements(b[i])) {
      throw refuse("the sizes differ");
    }
    if (b[i].row_end != kAllRows && !y.has_stored_bytes()) {
      throw refuse("rows of a tensor in typed fields");
    }
  }
}

// The loader's work (LoadOptions::on_piece, on_landed) that compares plan `a` with plan `b`.
class PlanComparer {
 public:
  PlanComparer(std::span<const LoadItem> a, std::span<const LoadItem> b, double tolerance,
               bool release)
      : a_(a), b_(b), tolerance_(tolerance), release_(release), out_(a.size()) {}

  // The elements lying whole in the piece, against the same bytes of b's item.
  void piece(const LoadedPiece& piece) {
    const LoadItem& other = b_[piece.item];
    if (!other.tensor.has_stored_bytes()) return;  // decoded whole by landed()
    const DataType type = other.tensor.data_type();
    const std::uint64_t bits = element_bits(type);
    const ElementRange whole = detail::whole_elements(piece.offset, piece.bytes.size(), bits,
                                                      detail::item_elements(other));
    const ValuesDiff part =
        compare_with_b(piece.item, piece.bytes.data() - piece.offset, whole, release_);
    const std::lock_guard lock(mutex_);
    merge(out_[piece.item], part);
    done_[piece.item].push_back(whole);
  }

  // The elements cut between pieces, or all of them against b's item decoded.
  void landed(const LoadedTensor& t) {
    const LoadItem& other = b_[t.item];
    const DataType type = other.tensor.data_type();
    const std::uint64_t count = detail::item_elements(other);
    detail::check_values(t.bytes, type, count);
    if (!other.tensor.has_stored_bytes()) {
      const TensorData decoded = other.tensor.data();
      const ValuesDiff all = compare_values(t.bytes, decoded.bytes(), type, count, tolerance_);
      const std::lock_guard lock(mutex_);
      out_[t.item] = all;
      return;
    }
    std::vector<ElementRange> done;
    {
      const std::lock_guard lock(mutex_);
      done = std::move(done_[t.item]);
      done_.erase(t.item);
    }
    ValuesDiff rest;
    for (const ElementRange& r : detail::left_over(std::move(done), count)) {
      merge(rest, compare_with_b(t.item, t.bytes.data(), r, false));
    }
    const std::lock_guard lock(mutex_);
    merge(out_[t.item], rest);
  }

  [[nodiscard]] std::vector<ValuesDiff> results() && { return std::move(out_); }

 private:
  // Elements `range` of a's item `item` (its bytes at `a_start`) against b's, whose bytes are
  // made readable first (and dropped after, with `release`).
  ValuesDiff compare_with_b(std::size_t item, const std::byte* a_start, ElementRange range,
                            bool release) const {
    if (range.last == range.first) return {};
    const LoadItem& other = b_[item];
    const DataType type = other.tensor.data_type();
    const std::uint64_t bits = element_bits(type);
    const std::uint64_t from = range.first * bits / 8;
    const std::uint64_t length = (range.last * bits + 7) / 8 - from;
    const std::uint64_t rows_at =
        other.row_end == kAllRows ? 0
                                  : other.tensor.row_range(other.row_begin, other.row_end).offset;
    const auto b_bytes = detail::payload_range(other.tensor, rows_at + from, length);
    const ValuesDiff out = compare_range(a_start, b_bytes.data() - from, type, range, tolerance_);
    if (release) detail::release_payload_range(other.tensor, rows_at + from, length);
    return out;
  }

  std::span<const LoadItem> a_;
  std::span<const LoadItem> b_;
  double tolerance_;
  bool release_;
  std::mutex mutex_;
  std::vector<ValuesDiff> out_;                                      // guarded by mutex_
  std::unordered_map<std::size_t, std::vector<ElementRange>> done_;  // guarded by mutex_
};

}  // namespace

ValuesDiff compare_values(std::span<const std::byte> a, std::span<const std::byte> b, DataType type,
                          std::uint64_t count, double tolerance) {
  detail::check_values(a, type, count);
  detail::check_values(b, type, count);
  return compare_range(a.data(), b.data(), type, {0, count}, tolerance);
}

std::vector<ValuesDiff> compare_plans(std::span<const LoadItem> a, std::span<const LoadItem> b,
                                      double tolerance, const LoadOptions& options) {
  check_pairs(a, b);
  PlanComparer comparer(a, b, tolerance,
                        options.mode == LoadMode::map && options.release_after_callback);
  LoadOptions work = options;
  work.on_piece = [&comparer](const LoadedPiece& piece) { comparer.piece(piece); };
  work.on_landed = [&comparer](const LoadedTensor& t) { comparer.landed(t); };
  (void)load(a, {}, work);
  return std::move(comparer).results();
}

}  // namespace onnxmap
