#include "index/level_append.hpp"

#include <algorithm>
#include <atomic>
#include <new>
#include <thread>
#include <vector>

#include "index/level_scan.hpp"

namespace onnxmap::detail {

namespace {

// Runs work(0) .. work(count - 1) on up to `threads` threads, this one included.
template <class Work>
void on_threads(unsigned threads, std::size_t count, const Work& work) {
  std::atomic<std::size_t> next{0};
  const auto run = [&] {
    for (std::size_t i = next++; i < count; i = next++) work(i);
  };
  std::vector<std::thread> pool;
  for (std::size_t i = 1; i < threads && i < count; ++i) pool.emplace_back(run);
  run();
  for (std::thread& thread : pool) thread.join();
}

// Where each chunk's records and dims go in the index's tables.
struct Bases {
  std::uint32_t records;
  std::uint32_t dims;
};

// `level_end`: where the new level ends, and its records' children begin until it is scanned
// (parent() and path() then work for every record of the level, from any thread). `continues`:
// the chunk goes on with the previous chunk's split record, which it leaves alone.
void copy_output(ModelIndex& index, const LevelChunk& chunk, const ChunkResult& result,
                 const Bases& bases, std::uint32_t level_end, bool continues) {
  const LevelOutput& out = *result.out;
  const OutputMarks& from = result.begin;
  const OutputMarks& to = result.end;
  for (std::uint32_t id = chunk.begin; id < chunk.end && !continues; ++id) {
    MessageRecord& record = index.messages[id];
    record.first_child =
        bases.records + out.first_child[from.first_child + id - chunk.begin] - from.records;
    record.plain = 0;
  }
  // One pass: each child is copied with where its own children will begin (onto itself where
  // the chunk was scanned in place, into a children_window()).
  MessageRecord* const children = index.messages.begin() + bases.records;
  const MessageRecord* const scanned = out.records.begin() + from.records;
  for (std::uint32_t i = 0; i < to.records - from.records; ++i) {
    MessageRecord child = scanned[i];
    child.first_child = level_end;
    children[i] = child;
  }
  // The chunk's tensors are in the index already, their dims still numbered in the output.
  if (bases.dims != from.dims) {
    for (std::uint32_t t = result.first_tensor; t < result.end_tensor; ++t) {
      index.tensors[t].dims_begin = index.tensors[t].dims_begin - from.dims + bases.dims;
    }
  }
  std::copy(out.dims.begin() + from.dims, out.dims.begin() + to.dims,
            index.dims.begin() + bases.dims);
}

// The chunk's long lengths and merged spans, renumbered for the index, and its payload errors.
void append_lists(ModelIndex& index, const ChunkResult& result, const Bases& bases) {
  LevelOutput& out = *result.out;
  const OutputMarks& from = result.begin;
  const OutputMarks& to = result.end;
  for (std::uint32_t i = from.long_lengths; i < to.long_lengths; ++i) {
    const auto& [id, length] = out.long_lengths[i];
    index.long_lengths.emplace_back(id - from.records + bases.records, length);
  }
  for (std::uint32_t i = from.merged_spans; i < to.merged_spans; ++i) {
    auto& [id, spans] = out.merged_spans[i];
    index.merged_spans.emplace_back(id - from.records + bases.records, std::move(spans));
  }
  for (std::uint32_t i = from.payload_errors; i < to.payload_errors; ++i) {
    index.payload_errors.push_back(std::move(out.payload_errors[i]));
  }
}

// Where reserved room is not free (reserved_room_is_free()), a window is given only up to this
// many records (64 MiB).
constexpr std::uint64_t kMaxCostlyWindow = std::uint64_t{1} << 22U;

}  // namespace

PodTable<MessageRecord> children_window(ModelIndex& index, std::uint32_t begin,
                                        std::uint64_t weight) {
  const auto end = static_cast<std::uint32_t>(index.messages.size());
  std::uint64_t bytes = weight;  // the records' lengths (8 for a plain one: more than needed)
  const auto& merged = index.merged_spans;
  auto it = std::lower_bound(merged.begin(), merged.end(), begin,
                             [](const auto& entry, std::uint32_t id) { return entry.first < id; });
  for (; it != merged.end() && it->first < end; ++it) {
    for (const Span& span : it->second) bytes += span.length;
    bytes -= it->second.front().length;  // counted in the weight
  }
  // A level with more children than max_messages allows fails before it fills the window.
  const std::uint64_t max = index.options.max_messages;
  const std::uint64_t room = std::min(bytes / 2, max > end ? max - end : 0);
  if (room == 0 || (room > kMaxCostlyWindow && !reserved_room_is_free())) return {};
  try {
    index.messages.reserve(end + room);
  } catch (const std::bad_alloc&) {
    return {};
  }
  return PodTable<MessageRecord>::window(index.messages.begin() + end, room);
}

LevelSums append_level(ModelIndex& index, const std::deque<LevelChunk>& chunks,
                       const std::deque<ChunkResult>& results, unsigned threads) {
  std::vector<Bases> bases(results.size());
  Bases next{static_cast<std::uint32_t>(index.messages.size()),
             static_cast<std::uint32_t>(index.dims.size())};
  LevelSums sums;
  for (std::size_t c = 0; c < results.size(); ++c) {
    const ChunkResult& result = results[c];
    bases[c] = next;
    next.records += result.end.records - result.begin.records;
    next.dims += result.end.dims - result.begin.dims;
    sums.weight += result.end.weight - result.begin.weight;
    sums.tensors += result.end.tensor_children - result.begin.tensor_children;
  }
  index.messages.grow_to(next.records);
  index.dims.grow_to(next.dims);
  on_threads(threads, results.size(), [&](std::size_t c) {
    const bool continues =
        c > 0 && chunks[c].split && chunks[c - 1].split && chunks[c - 1].begin == chunks[c].begin;
    copy_output(index, chunks[c], results[c], bases[c], next.records, continues);
  });
  for (std::size_t c = 0; c < results.size(); ++c) append_lists(index, results[c], bases[c]);
  return sums;
}

LevelSums finish_level_in_place(ModelIndex& index, std::uint32_t begin, std::uint32_t end,
                                LevelOutput& out) {
  auto& messages = index.messages;
  for (std::uint32_t id = begin; id < end; ++id) {
    messages[id].first_child = out.first_child[id - begin];
    messages[id].plain = 0;
  }
  const auto level_end = static_cast<std::uint32_t>(messages.size());
  for (std::uint32_t id = end; id < level_end; ++id) messages[id].first_child = level_end;
  index.long_lengths.insert(index.long_lengths.end(), out.long_lengths.begin(),
                            out.long_lengths.end());
  for (auto& entry : out.merged_spans) index.merged_spans.push_back(std::move(entry));
  return {out.weight, out.tensor_children};
}

// Each run's scan says whether its children came in field order; the runs' ends tell the rest.
void sort_split_records(ModelIndex& index, const std::deque<LevelChunk>& chunks,
                        const std::deque<ChunkResult>& results, std::uint32_t level_end) {
  auto& messages = index.messages;
  for (std::size_t c = 0; c < chunks.size();) {
    const std::uint32_t id = chunks[c].begin;
    if (!chunks[c].split) {
      ++c;
      continue;
    }
    bool in_order = true;
    std::uint64_t last_number = 0;
    for (; c < chunks.size() && chunks[c].split && chunks[c].begin == id; ++c) {
      const ChunkResult& result = results[c];
      if (result.records() == 0) continue;
      const MessageRecord* const records = result.out->records.begin();
      in_order =
          in_order && !result.unsorted && records[result.begin.records].field_number >= last_number;
      last_number = records[result.end.records - 1].field_number;
    }
    if (in_order) continue;
    const std::uint32_t first = messages[id].first_child;
    const std::uint32_t end = id + 1 < level_end ? messages[id + 1].first_child
                                                 : static_cast<std::uint32_t>(messages.size());
    sort_records(messages, first, end, index.long_lengths, {});
  }
}

}  // namespace onnxmap::detail
