#include "load/load_plan.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "index/model_index.hpp"
#include "io/file_reader.hpp"
#include "load/resident_plan.hpp"
#include "view/tensor_payload.hpp"
#include "view/view_access.hpp"

namespace onnxmap::detail {

namespace {

// The file an item's bytes are in, when they are a payload of a file (raw or external), and
// who fetches them for a model opened by URL.
PlanFile payload_file(const Tensor& t) {
  const ModelIndex* index = ViewAccess::index(t);
  const TensorRecord& r = index->tensors[ViewAccess::tensor(t)];
  return {index->payload_file(r), index->fetcher.get(), index->payload_location(r)};
}

ResolvedItem resolve(const LoadItem& item, LoadPlan& plan) {
  ResolvedItem out;
  out.load_item = &item;
  const Tensor& t = item.tensor;
  if (t.data_type() == DataType::string) return out;  // no raw layout: delivered without bytes
  if (t.storage() == TensorStorage::typed) {
    out.source = ItemSource::typed;
    out.length = item.row_end == kAllRows ? t.byte_size()
                                          : t.slice_rows(item.row_begin, item.row_end).size();
    return out;
  }
  // The same checks and errors as the views (invalid payloads, bad row ranges), but no fetch:
  // a remote model's bytes are fetched for the whole plan at once (fetch_remote).
  out.view =
      item.row_end == kAllRows ? payload_view(t) : rows_view(t, item.row_begin, item.row_end);
  out.length = out.view.size();
  const PlanFile file = payload_file(t);
  if (file.file == nullptr || !file.file->is_mapped() || out.length == 0) return out;
  out.source = ItemSource::stream;
  const auto found = std::find_if(plan.files.begin(), plan.files.end(),
                                  [&](const PlanFile& f) { return f.file == file.file; });
  out.file = static_cast<std::size_t>(found - plan.files.begin());
  if (found == plan.files.end()) plan.files.push_back(file);
  out.offset = static_cast<std::uint64_t>(out.view.data() - file.file->bytes().data());
  return out;
}

// Direct reads into library buffers: an item this large is read into a buffer of its own, in
// place; smaller ones share requests with their neighbours and are copied out of the staging
// buffer (at most 8 KiB of alignment per item would be a large share of a small one, and a
// read each a lot of calls).
constexpr std::uint64_t kOwnBufferBytes = std::uint64_t{1} << 20U;

// An own_buffer item's requests: at most `cap` bytes each, cut at aligned file offsets counted
// from the aligned start of the item, so that their aligned ranges tile the item's buffer.
void plan_own_requests(LoadPlan& plan, std::size_t i, std::uint64_t cap) {
  ResolvedItem& item = plan.items[i];
  const std::uint64_t base = io::align_down(item.offset);
  const std::uint64_t end = item.offset + item.length;
  item.first_request = plan.requests.size();
  for (std::uint64_t at = item.offset; at < end;) {
    const std::uint64_t stop = std::min(end, base + ((at - base) / cap + 1) * cap);
    plan.requests.push_back({item.file, at, stop, plan.pieces.size(), 1, true});
    plan.pieces.push_back({i, at, stop - at, at - item.offset});
    at = stop;
  }
  item.last_request = plan.requests.size() - 1;
}

// The stream items in file order (LoadPlan::streamed); a stream item always has bytes.
std::vector<std::size_t> streamed_in_file_order(const LoadPlan& plan) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    if (plan.items[i].source == ItemSource::stream) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::pair(plan.items[a].file, plan.items[a].offset) <
           std::pair(plan.items[b].file, plan.items[b].offset);
  });
  return order;
}

// Cuts the streamed items, in file order, into requests whose aligned range spans at most
// `cut.request_bytes`, joining items less than `cut.max_gap_bytes` apart (own_buffer items have
// requests of their own).
void plan_requests(LoadPlan& plan, const ReadCut& cut) {
  const std::uint64_t cap = std::max(io::align_down(cut.request_bytes), io::kDirectAlign);
  for (const std::size_t i : plan.streamed) {
    ResolvedItem& item = plan.items[i];
    if (item.own_buffer) {
      plan_own_requests(plan, i, cap);
      continue;
    }
    std::uint64_t at = item.offset;
    const std::uint64_t end = item.offset + item.length;
    item.first_request = plan.requests.size();  // corrected below if it joins the last request
    bool first = true;
    while (at < end) {
      Request* r = plan.requests.empty() ? nullptr : &plan.requests.back();
      // An item that overlaps an earlier one (a tensor and rows of it) may begin before the
      // last request: it starts a request of its own, for its pieces lie after their request's
      // start.
      const bool joins = r != nullptr && !r->own_buffer && r->file == item.file && at >= r->begin &&
                         at <= r->end + cut.max_gap_bytes && at < io::align_down(r->begin) + cap;
      if (!joins) {
        plan.requests.push_back({item.file, at, at, plan.pieces.size(), 0});
        r = &plan.requests.back();
      }
      const std::uint64_t take = std::min(end, io::align_down(r->begin) + cap) - at;
      plan.pieces.push_back({i, at, take, at - item.offset});
      ++r->piece_count;
      r->end = std::max(r->end, at + take);
      if (first) item.first_request = plan.requests.size() - 1;
      item.last_request = plan.requests.size() - 1;
      first = false;
      at += take;
    }
  }
  for (const Request& r : plan.requests) {
    if (!r.own_buffer)
      plan.largest_staged_request = std::max(plan.largest_staged_request, r.end - r.begin);
  }
}

// Marks the requests whose pieces are all in the page cache: one count per window of nearby
// pieces (ResidentWindows), so one for most requests; the gaps a request reads are not asked
// about (a buffered read of them is as good as a direct one).
void mark_resident(LoadPlan& plan) {
  for (Request& r : plan.requests) {
    const MappedFile& file = *plan.files[r.file].file;
    ResidentWindows windows;
    bool resident = true;
    for (const ReadPiece& piece : pieces_of(plan, r)) {
      resident = windows.add(file, piece.offset, piece.offset + piece.length);
      if (!resident) break;
    }
    r.resident = resident && windows.finish();
  }
}

// A remote model's streamed bytes are fetched into its mirror before any is read: every request
// of a file in one call, which runs several at once.
FetchStats fetch_remote(const LoadPlan& plan) {
  FetchStats fetched;
  for (std::size_t f = 0; f < plan.files.size(); ++f) {
    if (plan.files[f].fetcher == nullptr) continue;
    std::vector<ByteRange> ranges;
    for (const Request& r : plan.requests) {
      if (r.file == f) ranges.push_back({r.begin, r.end - r.begin});
    }
    fetched += plan.files[f].fetcher->fetch(plan.files[f].location, ranges);
  }
  return fetched;
}

}  // namespace

std::span<const std::byte> bytes_in_memory(const ResolvedItem& item,
                                           std::optional<TensorData>& decoded) {
  if (item.source != ItemSource::typed) return item.view;
  return decoded.emplace(item.load_item->tensor.data()).bytes();
}

ReadCut read_cut(const LoadOptions& options) noexcept {
  return {options.request_bytes, options.max_gap_bytes, options.mode != LoadMode::read};
}

LoadPlan resolve_plan(std::span<const LoadItem> items, LoadMode mode, Buffers buffers) {
  LoadPlan plan;
  plan.items.reserve(items.size());
  const bool own_buffers = mode == LoadMode::direct && buffers == Buffers::library;
  for (const LoadItem& item : items) {
    ResolvedItem& resolved = plan.items.emplace_back(resolve(item, plan));
    resolved.own_buffer =
        own_buffers && resolved.source == ItemSource::stream && resolved.length >= kOwnBufferBytes;
  }
  plan.streamed = streamed_in_file_order(plan);
  return plan;
}

void cut_reads(LoadPlan& plan, const ReadCut& cut) {
  plan_requests(plan, cut);
  plan.fetched = fetch_remote(plan);
  if (cut.residency) mark_resident(plan);
}

LoadPlan make_load_plan(std::span<const LoadItem> items, const LoadOptions& options,
                        Buffers buffers) {
  LoadPlan plan = resolve_plan(items, options.mode, buffers);
  cut_reads(plan, read_cut(options));
  return plan;
}

}  // namespace onnxmap::detail

namespace onnxmap {

namespace {

// The tensor `name` names: a path as Tensor::path() gives it, or a lookup name.
Tensor tensor_named(const Model& model, const std::string& name) {
  if (auto by_path = model.tensor_at_path(name)) return *by_path;
  return model.tensor(name);
}

// Whether `name` matches the fnmatch glob `pattern`; an empty pattern matches every name.
bool glob_matches(std::string_view pattern, std::string_view name) {
  return pattern.empty() ||
         ::fnmatch(std::string(pattern).c_str(), std::string(name).c_str(), 0) == 0;
}

std::vector<Tensor> picked_tensors(const Model& model, const PlanOptions& options) {
  if (!options.filter.empty() && !options.names.empty()) {
    throw Error(ErrorKind::invalid_argument, "a plan takes a filter or names, not both");
  }
  std::vector<Tensor> picked;
  if (!options.names.empty()) {
    for (const std::string& name : options.names) picked.push_back(tensor_named(model, name));
    return picked;
  }
  for (std::size_t i = 0; i < model.tensor_count(); ++i) {
    const Tensor t = model.tensor_at(i);
    if (glob_matches(options.filter, t.lookup_name())) picked.push_back(t);
  }
  return picked;
}

}  // namespace

std::vector<LoadItem> plan(const Model& model, const PlanOptions& options) {
  const unsigned rank = options.rank;
  const unsigned ranks = options.ranks;
  if (ranks == 0 || rank >= ranks) {
    throw Error(ErrorKind::invalid_argument,
                "rank " + std::to_string(rank) + " of " + std::to_string(ranks) + " ranks");
  }
  std::vector<LoadItem> items;
  for (const Tensor& t : picked_tensors(model, options)) {
    const std::uint64_t rows = t.row_count();
    if (ranks == 1 || !t.can_slice_rows() || rows < ranks) {
      items.push_back({t});
      continue;
    }
    items.push_back({t, rows * rank / ranks, rows * (rank + 1) / ranks});
  }
  return items;
}

}  // namespace onnxmap
