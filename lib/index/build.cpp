// The one indexing pass, from build_index() to the tables. The record table is filled breadth
// first, one level of the message tree at a time, so that every message's children are
// contiguous: level 0 is the root, and scanning the records of level n (index/level_scan.hpp)
// appends level n + 1. A level's records are cut into pieces (a very large message, such as a
// graph of 360 000 nodes, into runs of its fields) and the pieces into chunks; with more than
// one thread the chunks are scanned on a pool into outputs of their own, which are appended in
// file order, so the index is the same for any number of threads. A level where anything goes
// wrong (an error, a limit, an external data file to open) is scanned again on one thread,
// which reports exactly what the serial pass reports.

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>

#include "index/level_scan.hpp"
#include "index/model_index.hpp"
#include "index/tensor_table.hpp"

namespace onnxmap::detail {

namespace {

// Model files smaller than this are indexed on one thread unless Options::index_threads asks:
// below it, starting threads costs about what they save (bench/reader_bench.cpp).
constexpr std::uint64_t kParallelMinBytes = std::uint64_t{4} << 20U;
// Chunks per thread, so that uneven chunks even out; and the smallest chunk worth a task when
// the thread count was picked for the file.
constexpr std::uint64_t kChunksPerThread = 4;
constexpr std::uint64_t kMinChunkBytes = std::uint64_t{256} << 10U;
// When the count is picked for the file, a level is scanned on the pool only if it has this many
// records or a record this many fields: below, the work (about 100 ns a record) is not worth
// waking threads for, least of all on a busy machine (an LLM's graph of a few thousand fields).
constexpr std::uint32_t kMinParallelRecords = 16384;

// Thrown by a worker of a parallel level at what only the serial scan may do: open an external
// data file (data file ids follow the order of first use).
struct NeedsSerial {};

unsigned pick_threads(const Options& options, std::uint64_t file_size, IndexScope scope) {
  if (scope == IndexScope::metadata) return 1;
  if (options.index_threads != 0) return std::min(options.index_threads, 256U);
  if (file_size < kParallelMinBytes) return 1;
  return std::clamp(std::thread::hardware_concurrency(), 1U, 256U);
}

// Kinds whose messages may be split into runs of fields: those with no singular message field
// (a second occurrence merges with the first, which needs the whole message), tensors excepted.
bool splittable(MessageKind kind) {
  if (kind == MessageKind::TensorProto) return false;
  const FieldActions& actions = FieldActions::get();
  for (std::uint32_t number = 1; number < 64; ++number) {
    const FieldAction action = actions(kind, number);
    if (action.role == FieldRole::indexed && !action.repeated) return false;
  }
  return true;
}

class IndexBuilder {
 public:
  IndexBuilder(ModelIndex& index, IndexScope scope)
      : index_(index),
        scope_(scope),
        threads_(pick_threads(index.options, index.file.size(), scope)),
        trim_(index.file),
        ctx_{index.file.bytes().data(), index.options, scope, trim_},
        open_([this](std::string_view location) {
          const std::uint32_t id = open_data_file(index_, location);
          return DataFileRef{id, index_.data_files[id].file.size()};
        }) {
    for (int kind = 0; kind < schema::kMessageKindCount; ++kind) {
      splittable_[kind] = splittable(static_cast<MessageKind>(kind));
    }
  }

  void run(MessageKind root) {
    if (index_.file.size() >= MessageRecord::kOffsetLimit) {
      throw Error(ErrorKind::limit_exceeded, "model files of 256 TiB or more are not supported", 0)
          .in_context(index_.display_name, "");
    }
    MessageRecord& record = index_.messages.emplace_back();
    record.kind = static_cast<std::uint64_t>(root);
    if (index_.file.size() < MessageRecord::kLongLength) {
      record.length = static_cast<std::uint32_t>(index_.file.size());
    } else {
      record.length = MessageRecord::kLongLength;
      index_.long_lengths.emplace_back(0, index_.file.size());
    }
    std::uint32_t begin = 0;
    std::uint32_t end = 1;
    for (int depth = 0; begin < end; ++depth) {
      // Until the level is appended, its records' children are taken to begin where the level
      // ends: parent() and path() then work for every record of the level, from any thread.
      for (std::uint32_t id = begin; id < end; ++id) index_.messages[id].first_child = end;
      index_level(begin, end, depth);
      begin = end;
      end = static_cast<std::uint32_t>(index_.messages.size());
    }
    trim_.finish();
  }

 private:
  // One task's work: whole records [begin, end), or when `split` one run of the fields of
  // record `begin`.
  struct Chunk {
    std::uint32_t begin;
    std::uint32_t end;
    bool split = false;
    Span span{};
  };

  void index_level(std::uint32_t begin, std::uint32_t end, int depth) {
    if (threads_ > 1 && !serial_only_) {
      const std::vector<Chunk> chunks = make_chunks(begin, end);
      if (chunks.size() > 1) {
        std::vector<LevelOutput> outputs(chunks.size());
        if (scan_parallel(chunks, depth, outputs)) {
          append_all(chunks, outputs);
          sort_split_records(chunks, end);
          return;
        }
      }
    }
    // One output: the tensor tables are scanned into in place (moved there and back), so that
    // only the new records are copied.
    const std::vector<Chunk> whole{{begin, end}};
    std::vector<LevelOutput> out(1);
    out[0].tensors = std::move(index_.tensors);
    out[0].dims = std::move(index_.dims);
    out[0].payload_errors = std::move(index_.payload_errors);
    LevelScanner scanner(index_, ctx_, depth, open_, index_.messages.size(), 0, out[0]);
    scan_chunk(scanner, whole[0], out[0]);
    index_.tensors = std::move(out[0].tensors);
    index_.dims = std::move(out[0].dims);
    index_.payload_errors = std::move(out[0].payload_errors);
    out[0].payload_errors.clear();
    append_all(whole, out);
  }

  void scan_chunk(LevelScanner& scanner, const Chunk& chunk, LevelOutput& out) const {
    if (chunk.split) {
      scanner.scan({chunk.begin, chunk.span, false});
      return;
    }
    out.first_child.reserve(chunk.end - chunk.begin);
    for (std::uint32_t id = chunk.begin; id < chunk.end; ++id) {
      scanner.scan({id, index_.span(id), true});
    }
  }

  // The scan's cost of a record, in bytes walked: a plain record (stepped over when it was added,
  // most nodes of a graph) costs about what a few bytes of walking cost.
  [[nodiscard]] static std::uint64_t weight(const MessageRecord& record) noexcept {
    constexpr std::uint64_t kPlainWeight = 8;
    return record.plain != 0 ? kPlainWeight : record.length;  // kLongLength: large enough
  }

  // The level as chunks of about the same weight; a record heavier than that, of a splittable
  // kind, is cut into runs of its fields, one chunk each.
  [[nodiscard]] std::vector<Chunk> make_chunks(std::uint32_t begin, std::uint32_t end) const {
    const MessageRecord* const records = index_.messages.begin();
    std::uint64_t total = 0;
    for (std::uint32_t id = begin; id < end; ++id) total += weight(records[id]);
    const std::uint64_t min_chunk = index_.options.index_threads != 0 ? 1 : kMinChunkBytes;
    const std::uint64_t target = std::max(total / (threads_ * kChunksPerThread), min_chunk);
    std::vector<Chunk> chunks;
    std::uint32_t run = begin;  // the start of the run of whole records not yet in a chunk
    std::uint64_t bytes = 0;
    for (std::uint32_t id = begin; id < end; ++id) {
      const MessageRecord& record = records[id];
      const std::uint64_t record_weight = weight(record);
      if (record_weight > target && splittable_[record.kind] && record.merged == 0 &&
          record.plain == 0) {
        if (run < id) chunks.push_back({run, id});
        split(id, index_.span(id), target, chunks);
        run = id + 1;
        bytes = 0;
        continue;
      }
      bytes += record_weight;
      if (bytes >= target) {
        chunks.push_back({run, id + 1});
        run = id + 1;
        bytes = 0;
      }
    }
    if (run < end) chunks.push_back({run, end});
    // A level of a few records, none split (an LLM's few hundred tensors), is not worth a thread.
    const bool any_split =
        std::any_of(chunks.begin(), chunks.end(), [](const Chunk& chunk) { return chunk.split; });
    if (index_.options.index_threads == 0 && end - begin < kMinParallelRecords && !any_split) {
      return {{begin, end}};
    }
    return chunks;
  }

  // Cuts record `id` into runs of whole fields of about `target` bytes, stepping over lengths.
  // Malformed bytes end the cutting: the rest is one run, whose scan reports the problem.
  void split(std::uint32_t id, Span span, std::uint64_t target, std::vector<Chunk>& chunks) const {
    const std::byte* file = index_.file.bytes().data();
    const std::byte* pos = file + span.offset;
    const std::byte* const end = pos + span.length;
    const std::byte* start = pos;
    const auto run = [&](const std::byte* stop) {
      return Chunk{
          id,
          id + 1,
          true,
          {static_cast<std::uint64_t>(start - file), static_cast<std::uint64_t>(stop - start)}};
    };
    const std::size_t first = chunks.size();
    std::uint64_t fields = 0;
    // Stepping reads every field's tag, which maps the page-cache folio around it: the payloads
    // passed are trimmed as the scan trims them (index/payload_trim.hpp), or a graph of large
    // tensors would keep megabytes of payload pages mapped.
    PayloadTrimmer trim(index_.file);
    const auto passed = [&](const std::byte* field, const std::byte* next) {
      const auto at = static_cast<std::uint64_t>(field - file);
      trim.passed(at, Span{at, static_cast<std::uint64_t>(next - field)}, false);
    };
    try {
      while (pos != end) {
        pos = step_fields(file, pos, end, target, fields, passed);
        if (pos != end) {
          chunks.push_back(run(pos));
          start = pos;
        }
      }
    } catch (const Error&) {
      // The rest, malformed, is the last run.
    }
    trim.finish();
    chunks.push_back(run(end));
    const bool few_fields = index_.options.index_threads == 0 && fields < kMinParallelRecords;
    if (chunks.size() - first == 1 || few_fields) {
      chunks.resize(first);
      chunks.push_back({id, id + 1});
    }
  }

  // Scans the chunks on the pool. False when the level must be scanned again on one thread: a
  // worker failed (an error, or NeedsSerial), or the level passes a limit the workers could
  // only check against what precedes their own chunk.
  bool scan_parallel(const std::vector<Chunk>& chunks, int depth,
                     std::vector<LevelOutput>& outputs) {
    std::atomic<bool> failed{false};
    std::atomic<bool> needs_serial{false};
    const OpenDataFile refuse = [](std::string_view) -> DataFileRef { throw NeedsSerial{}; };
    on_pool(chunks.size(), [&](std::size_t c) {
      if (failed) return;
      // Each chunk has a trimmer of its own: unmapping is per range of the file.
      PayloadTrimmer trim(index_.file);
      PassContext ctx{index_.file.bytes().data(), index_.options, scope_, trim};
      try {
        LevelScanner scanner(index_, ctx, depth, refuse, index_.messages.size(),
                             index_.tensors.size(), outputs[c]);
        scan_chunk(scanner, chunks[c], outputs[c]);
      } catch (const NeedsSerial&) {
        needs_serial = true;
        failed = true;
      } catch (...) {
        failed = true;
      }
      trim.finish();
    });
    if (needs_serial) serial_only_ = true;  // the levels below would ask again
    if (failed) return false;
    std::uint64_t messages = index_.messages.size();
    std::uint64_t tensors = index_.tensors.size();
    for (const LevelOutput& out : outputs) {
      messages += out.records.size();
      tensors += out.tensors.size();
    }
    return messages <= index_.options.max_messages && tensors <= index_.options.max_tensors;
  }

  // Runs work(0) .. work(count - 1) on up to threads_ threads, this one included.
  template <class Work>
  void on_pool(std::size_t count, const Work& work) const {
    std::atomic<std::size_t> next{0};
    const auto run = [&] {
      for (std::size_t i = next++; i < count; i = next++) work(i);
    };
    std::vector<std::thread> pool;
    for (std::size_t i = 1; i < threads_ && i < count; ++i) pool.emplace_back(run);
    run();
    for (std::thread& thread : pool) thread.join();
  }

  // Where each output's records, tensors and dims go in the index's tables.
  struct Bases {
    std::uint32_t records;
    std::uint32_t tensors;
    std::uint32_t dims;
  };

  // Appends the outputs of a level, in order: their children get ids after every record so far,
  // and each scanned record learns where its children begin. The tables grow once, and the
  // outputs are copied into them on the pool.
  void append_all(const std::vector<Chunk>& chunks, std::vector<LevelOutput>& outputs) {
    std::vector<Bases> bases(outputs.size());
    Bases next{static_cast<std::uint32_t>(index_.messages.size()),
               static_cast<std::uint32_t>(index_.tensors.size()),
               static_cast<std::uint32_t>(index_.dims.size())};
    for (std::size_t c = 0; c < outputs.size(); ++c) {
      bases[c] = next;
      next.records += static_cast<std::uint32_t>(outputs[c].records.size());
      next.tensors += static_cast<std::uint32_t>(outputs[c].tensors.size());
      next.dims += static_cast<std::uint32_t>(outputs[c].dims.size());
    }
    index_.messages.grow_to(next.records);
    index_.tensors.grow_to(next.tensors);
    index_.dims.grow_to(next.dims);
    on_pool(outputs.size(), [&](std::size_t c) {
      // A chunk that goes on with the previous chunk's split record leaves that record alone.
      const bool continues =
          c > 0 && chunks[c].split && chunks[c - 1].split && chunks[c - 1].begin == chunks[c].begin;
      copy_output(chunks[c], outputs[c], bases[c], continues);
    });
    for (std::size_t c = 0; c < outputs.size(); ++c) {
      LevelOutput& out = outputs[c];
      for (const auto& [id, length] : out.long_lengths) {
        index_.long_lengths.emplace_back(bases[c].records + id, length);
      }
      for (auto& [id, spans] : out.merged_spans) {
        index_.merged_spans.emplace_back(bases[c].records + id, std::move(spans));
      }
      for (PayloadError& error : out.payload_errors) {
        error.tensor += bases[c].tensors;
        index_.payload_errors.push_back(std::move(error));
      }
    }
  }

  void copy_output(const Chunk& chunk, const LevelOutput& out, const Bases& bases, bool continues) {
    for (std::uint32_t id = chunk.begin; id < chunk.end && !continues; ++id) {
      MessageRecord& record = index_.messages[id];
      record.first_child = bases.records + out.first_child[id - chunk.begin];
      record.plain = 0;
    }
    std::copy(out.records.begin(), out.records.end(), index_.messages.begin() + bases.records);
    TensorRecord* tensor = index_.tensors.begin() + bases.tensors;
    for (TensorRecord t : out.tensors) {
      t.dims_begin += bases.dims;
      *tensor++ = t;
    }
    std::copy(out.dims.begin(), out.dims.end(), index_.dims.begin() + bases.dims);
  }

  // A record split across pieces got its children in wire order; put them in field order.
  void sort_split_records(const std::vector<Chunk>& chunks, std::uint32_t level_end) {
    auto& messages = index_.messages;
    std::uint32_t sorted = kNone;
    for (const Chunk& chunk : chunks) {
      if (!chunk.split || chunk.begin == sorted) continue;
      sorted = chunk.begin;
      const std::uint32_t first = messages[chunk.begin].first_child;
      const std::uint32_t end = chunk.begin + 1 < level_end
                                    ? messages[chunk.begin + 1].first_child
                                    : static_cast<std::uint32_t>(messages.size());
      const bool in_order = std::is_sorted(messages.begin() + first, messages.begin() + end,
                                           [](const MessageRecord& a, const MessageRecord& b) {
                                             return a.field_number < b.field_number;
                                           });
      if (!in_order) sort_records(messages, first, end, index_.long_lengths, {});
    }
  }

  ModelIndex& index_;
  IndexScope scope_;
  unsigned threads_;
  PayloadTrimmer trim_;  // the serial scan's
  PassContext ctx_;      // the serial scan's
  OpenDataFile open_;
  std::array<bool, schema::kMessageKindCount> splittable_{};
  bool serial_only_ = false;
};

}  // namespace

MappedFile open_model_file(const std::filesystem::path& path, const Options& options) {
  try {
    return MappedFile::open(path, options.load);
  } catch (const Error& e) {
    throw e.in_context(path.string(), "");
  }
}

std::shared_ptr<ModelIndex> build_index(MappedFile file, std::string display_name,
                                        std::filesystem::path folder, MessageKind root,
                                        const Options& options, IndexScope scope) {
  check_options(options);
  auto index = std::make_shared<ModelIndex>();
  index->file = std::move(file);
  index->display_name = std::move(display_name);
  index->folder = std::move(folder);
  index->options = options;
  IndexBuilder(*index, scope).run(root);
  // The tables grew by doubling; an index lives as long as its model, so return the slack.
  index->messages.shrink_to_fit();
  index->tensors.shrink_to_fit();
  index->dims.shrink_to_fit();
  build_name_table(*index);
  return index;
}

}  // namespace onnxmap::detail
