#include "index/level_append.hpp"

#include <algorithm>
#include <atomic>
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

// Where each output's records, tensors and dims go in the index's tables.
struct Bases {
  std::uint32_t records;
  std::uint32_t tensors;
  std::uint32_t dims;
};

// `level_end`: where the new level ends, and its records' children begin until it is scanned
// (parent() and path() then work for every record of the level, from any thread). `continues`:
// the chunk goes on with the previous chunk's split record, which it leaves alone.
void copy_output(ModelIndex& index, const LevelChunk& chunk, const LevelOutput& out,
                 const Bases& bases, std::uint32_t level_end, bool continues) {
  for (std::uint32_t id = chunk.begin; id < chunk.end && !continues; ++id) {
    MessageRecord& record = index.messages[id];
    record.first_child = bases.records + out.first_child[id - chunk.begin];
    record.plain = 0;
  }
  MessageRecord* const children = index.messages.begin() + bases.records;
  std::copy(out.records.begin(), out.records.end(), children);
  for (std::size_t i = 0; i < out.records.size(); ++i) children[i].first_child = level_end;
  TensorRecord* tensor = index.tensors.begin() + bases.tensors;
  for (TensorRecord t : out.tensors) {
    t.dims_begin += bases.dims;
    *tensor++ = t;
  }
  std::copy(out.dims.begin(), out.dims.end(), index.dims.begin() + bases.dims);
}

}  // namespace

std::uint64_t append_level(ModelIndex& index, const std::deque<LevelChunk>& chunks,
                           std::deque<LevelOutput>& outputs, unsigned threads) {
  std::vector<Bases> bases(outputs.size());
  Bases next{static_cast<std::uint32_t>(index.messages.size()),
             static_cast<std::uint32_t>(index.tensors.size()),
             static_cast<std::uint32_t>(index.dims.size())};
  for (std::size_t c = 0; c < outputs.size(); ++c) {
    bases[c] = next;
    next.records += static_cast<std::uint32_t>(outputs[c].records.size());
    next.tensors += static_cast<std::uint32_t>(outputs[c].tensors.size());
    next.dims += static_cast<std::uint32_t>(outputs[c].dims.size());
  }
  index.messages.grow_to(next.records);
  index.tensors.grow_to(next.tensors);
  index.dims.grow_to(next.dims);
  on_threads(threads, outputs.size(), [&](std::size_t c) {
    const bool continues =
        c > 0 && chunks[c].split && chunks[c - 1].split && chunks[c - 1].begin == chunks[c].begin;
    copy_output(index, chunks[c], outputs[c], bases[c], next.records, continues);
  });
  std::uint64_t weight = 0;
  for (std::size_t c = 0; c < outputs.size(); ++c) {
    LevelOutput& out = outputs[c];
    weight += out.weight;
    for (const auto& [id, length] : out.long_lengths) {
      index.long_lengths.emplace_back(bases[c].records + id, length);
    }
    for (auto& [id, spans] : out.merged_spans) {
      index.merged_spans.emplace_back(bases[c].records + id, std::move(spans));
    }
    for (PayloadError& error : out.payload_errors) {
      error.tensor += bases[c].tensors;
      index.payload_errors.push_back(std::move(error));
    }
  }
  return weight;
}

// Each run's scan says whether its children came in field order; the runs' ends tell the rest.
void sort_split_records(ModelIndex& index, const std::deque<LevelChunk>& chunks,
                        const std::deque<LevelOutput>& outputs, std::uint32_t level_end) {
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
      const LevelOutput& out = outputs[c];
      if (out.records.size() == 0) continue;
      in_order = in_order && !out.unsorted && out.records[0].field_number >= last_number;
      last_number = out.records[out.records.size() - 1].field_number;
    }
    if (in_order) continue;
    const std::uint32_t first = messages[id].first_child;
    const std::uint32_t end = id + 1 < level_end ? messages[id + 1].first_child
                                                 : static_cast<std::uint32_t>(messages.size());
    sort_records(messages, first, end, index.long_lengths, {});
  }
}

}  // namespace onnxmap::detail
