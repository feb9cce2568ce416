// The one indexing pass, from build_index() to the tables; docs/architecture.md ("The indexing
// pass") tells how a byte of the file becomes a record, in one page.
//
// Threads. On one thread a level's children go straight into the index's tables.
// With more, a level's records are cut into chunks (a very large message, such as a graph of
// 360 000 nodes, into runs of its fields), scanned on a pool as they are cut, each thread into
// an output of its own (index/level_output.hpp), and the chunks' parts appended in file order,
// so the index is the same for any number of threads. Two things go straight into the index
// instead. A level's tensors are its TensorProto records, counted when the level was added, so
// each chunk writes its tensors at ids known before it is scanned (TensorSlots). And the level's
// first chunks, while one thread takes them all, are scanned into a window of the index's table
// past its end (children_window()), where their children stay.
// A level where anything goes wrong (an error, a limit, an external data file to open) is
// scanned again on one thread, which reports exactly what the serial pass reports; such levels
// are counted (ModelIndex::pass, Model::index_pass()).

#include <algorithm>
#include <atomic>
#include <deque>
#include <string>
#include <thread>

#include "index/chunk_feed.hpp"
#include "index/level_append.hpp"
#include "index/level_scan.hpp"
#include "index/model_index.hpp"
#include "index/name_table.hpp"
#include "index/record_runs.hpp"
#include "index/tensor_table.hpp"

namespace onnxmap::detail {

namespace {

// Model files smaller than this are indexed on one thread: below it, starting threads costs about
// what they save (bench/reader_bench.cpp).
constexpr std::uint64_t kParallelMinBytes = std::uint64_t{4} << 20U;
// Chunks per thread, so that uneven chunks even out; and the smallest chunk worth a task.
constexpr std::uint64_t kChunksPerThread = 16;
constexpr std::uint64_t kMinChunkBytes = std::uint64_t{256} << 10U;
// A level is scanned on the pool only if it has this many records or a record this many fields:
// below, the work (about 100 ns a record) is not worth waking threads for, least of all on a busy
// machine (an LLM's graph of a few thousand fields). Nor are its payloads: unmapping them
// (index/payload_trim.hpp) while another thread runs interrupts that thread's core each time.
constexpr std::uint32_t kMinParallelRecords = 16384;

std::atomic<bool> pool_everywhere{false};  // set_pool_everywhere_for_tests()

// Thrown by a worker of a parallel level at what only the serial scan may do: open an external
// data file (data file ids follow the order of first use).
struct NeedsSerial {};

unsigned pick_threads(const OpenOptions& options, std::uint64_t file_size, IndexScope scope,
                      bool everywhere) {
  if (scope == IndexScope::metadata) return 1;
  if (file_size < kParallelMinBytes && !everywhere) return 1;
  if (options.threads != 0) return std::min(options.threads, 256U);
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
        everywhere_(pool_everywhere.load(std::memory_order_relaxed)),
        threads_(pick_threads(index.options, index.file.size(), scope, everywhere_)),
        trim_(index.file),
        ctx_{index.file.bytes().data(), index.options, scope, trim_},
        open_([this](std::string_view location) {
          const std::uint32_t id = open_data_file(index_, location);
          return DataFileRef{id, index_.data_files[id].file.size()};
        }) {
    index_.pass.threads = threads_;
    for (int kind = 0; kind < schema::kMessageKindCount; ++kind) {
      splittable_[kind] = splittable(static_cast<MessageKind>(kind));
    }
  }

  // The tensors' name hashes, by tensor id.
  [[nodiscard]] const PodTable<std::uint32_t>& name_hashes() const noexcept { return name_hashes_; }

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
    // Until a level is appended, its records' children are taken to begin where the level ends
    // (copy_output sets it): parent() and path() then work for every record, from any thread.
    record.first_child = 1;
    level_ = {scan_weight(record), gets_tensor_record(root, ctx_.metadata()) ? 1U : 0U};
    std::uint32_t begin = 0;
    std::uint32_t end = 1;
    for (int depth = 0; begin < end; ++depth) {
      index_level(begin, end, depth);
      begin = end;
      end = static_cast<std::uint32_t>(index_.messages.size());
    }
    trim_.finish();
  }

 private:
  // The state of a level scanned on the pool: chunks cut on this thread are held back until the
  // level proves worth the pool, then the workers start and take them as they are cut.
  struct PoolLevel {
    PoolLevel(std::uint32_t level_begin, int level_depth, TensorSlots level_tensors,
              unsigned threads)
        : begin(level_begin), depth(level_depth), tensors(level_tensors), outputs(threads) {}
    std::uint32_t begin;  // the level's first record; it ends where the table does
    int depth;
    TensorSlots tensors;  // the level's, from its first tensor
    ChunkFeed feed;
    std::vector<LevelOutput> outputs;  // one per thread, this one's first
    // The front taker's chunks while they are the level's first: their children are scanned
    // into a window of the index's table right past its end, where they stay.
    LevelOutput in_place;
    std::vector<LevelChunk> held;
    bool worth = false;  // the pool pays for this level once it has two chunks
    std::vector<std::thread> workers;
    std::atomic<bool> failed{false};
    std::atomic<bool> needs_serial{false};
  };

  // Ends the workers of a level however its cutting ends.
  struct JoinWorkers {
    PoolLevel& level;
    explicit JoinWorkers(PoolLevel& pool_level) : level(pool_level) {}
    JoinWorkers(const JoinWorkers&) = delete;
    JoinWorkers& operator=(const JoinWorkers&) = delete;
    ~JoinWorkers() {
      level.feed.close();
      for (std::thread& worker : level.workers) worker.join();
    }
  };

  void index_level(std::uint32_t begin, std::uint32_t end, int depth) {
    const TensorSlots tensors = grow_tensor_table();
    if (threads_ > 1 && !serial_only_) {
      switch (scan_on_pool(begin, end, depth, tensors)) {
        case PoolOutcome::scanned: ++index_.pass.pool_levels; return;
        case PoolOutcome::needs_serial: ++index_.pass.serial_rescans; break;
        case PoolOutcome::not_worth: break;
      }
    }
    // Straight into the index's tables, nothing to copy: the children are appended to its
    // records, and the dims and payload errors are moved into the output and back.
    LevelOutput out;
    out.dims = std::move(index_.dims);
    out.payload_errors = std::move(index_.payload_errors);
    LevelScanner scanner(index_, ctx_, depth, open_, 0, tensors, out, index_.messages);
    scan_chunk(scanner, {begin, end, tensors.next}, out);
    index_.dims = std::move(out.dims);
    index_.payload_errors = std::move(out.payload_errors);
    level_ = finish_level_in_place(index_, begin, end, out);
  }

  // Grows the tensor table by the level's tensors, up to max_tensors (the scan reports passing
  // it), for the scan to write in place.
  TensorSlots grow_tensor_table() {
    const std::uint64_t first = index_.tensors.size();
    index_.tensors.grow_to(std::min(first + level_.tensors, index_.options.max_tensors));
    name_hashes_.grow_to(index_.tensors.size());
    return {index_.tensors.data(), name_hashes_.data(), static_cast<std::uint32_t>(first),
            static_cast<std::uint32_t>(index_.tensors.size())};
  }

  enum class PoolOutcome { scanned, not_worth, needs_serial };

  // Cuts the level into chunks on this thread while the pool scans those already cut, then
  // scans with the pool. not_worth (nothing scanned) when the level is too small for threads;
  // needs_serial when it must be scanned again on one thread: a worker failed (an error, or
  // NeedsSerial), or the level passes a limit the workers could only check against what
  // precedes their own chunk.
  PoolOutcome scan_on_pool(std::uint32_t begin, std::uint32_t end, int depth, TensorSlots tensors) {
    PoolLevel level(begin, depth, tensors, threads_);
    {
      const JoinWorkers join(level);
      if (!cut_level(begin, end, level)) return PoolOutcome::not_worth;
      level.feed.close();
      scan_from_feed(level, level.outputs[0]);
    }
    if (level.needs_serial) serial_only_ = true;  // the levels below would ask again
    if (level.failed) return PoolOutcome::needs_serial;
    std::uint64_t messages = index_.messages.size() + level.in_place.records.size();
    for (const LevelOutput& out : level.outputs) messages += out.records.size();
    if (messages > index_.options.max_messages) return PoolOutcome::needs_serial;
    // The window's children stay put only if the table need not move to take the others.
    if (!level.in_place.records.empty() && messages > index_.messages.capacity()) {
      return PoolOutcome::needs_serial;
    }
    level_ = append_level(index_, level.feed.chunks(), level.feed.results(), threads_);
    sort_split_records(index_, level.feed.chunks(), level.feed.results(), end);
    return PoolOutcome::scanned;
  }

  // A chunk for the pool: held until the level is worth the pool and has two chunks, when the
  // workers start with the held chunks.
  void emit(PoolLevel& level, const LevelChunk& chunk) {
    if (!level.workers.empty()) {
      level.feed.push(chunk);
      return;
    }
    level.held.push_back(chunk);
    if (!level.worth || level.held.size() < 2) return;
    for (const LevelChunk& held : level.held) level.feed.push(held);
    level.held.clear();
    // Before any worker reads the table: reserving room may move it.
    level.in_place.records = children_window(index_, level.begin, level_.weight);
    // The first worker is the front taker: it starts while the rest are still being cut.
    for (unsigned i = 1; i < threads_; ++i) {
      level.workers.emplace_back(
          [this, &level, i] { scan_from_feed(level, level.outputs[i], i == 1); });
    }
  }

  // Scans the chunks of the feed into `thread_out`, this thread's output, until the feed is
  // drained; the front taker scans the level's first chunks, for as long as it takes them all,
  // into the level's window instead.
  void scan_from_feed(PoolLevel& level, LevelOutput& thread_out, bool front_taker = false) {
    bool in_place = front_taker && level.in_place.records.capacity() > 0;
    ChunkFeed::Taken taken;
    while (level.feed.take(front_taker, taken)) {
      if (level.failed) continue;
      in_place = in_place && taken.contiguous;
      LevelOutput& out = in_place ? level.in_place : thread_out;
      const LevelChunk& chunk = taken.chunk;
      ChunkResult* const result = taken.result;
      // Each chunk has a trimmer of its own: unmapping is per range of the file.
      PayloadTrimmer trim(index_.file);
      PassContext ctx{index_.file.bytes().data(), index_.options, scope_, trim};
      try {
        // max_messages is checked against what precedes the chunk in its output (earlier
        // chunks of this level): a lower bound, made exact once the level is scanned. Tensor ids
        // are exact already.
        result->start(out, chunk.first_tensor);
        const TensorSlots tensors{level.tensors.table, level.tensors.hashes, chunk.first_tensor,
                                  level.tensors.end};
        LevelScanner scanner(index_, ctx, level.depth, refuse_, index_.messages.size(), tensors,
                             out, out.records);
        scan_chunk(scanner, chunk, out);
        result->finish(scanner.unsorted(), scanner.next_tensor());
      } catch (const NeedsSerial&) {
        level.needs_serial = true;
        level.failed = true;
      } catch (...) {
        level.failed = true;
      }
      trim.finish();
    }
  }

  void scan_chunk(LevelScanner& scanner, const LevelChunk& chunk, LevelOutput& out) const {
    if (chunk.split) {
      scanner.scan({chunk.begin, chunk.span, false});
      return;
    }
    if (out.first_child.empty()) out.first_child.reserve(chunk.end - chunk.begin);
    for (std::uint32_t id = chunk.begin; id < chunk.end; ++id) {
      scanner.scan({id, index_.span(id), true});
    }
  }

  [[nodiscard]] bool can_split(const MessageRecord& record) const noexcept {
    return splittable_[record.kind] && record.merged == 0 && record.plain == 0;
  }

  // Cuts the level into chunks of about the same weight, emitted as they are cut; a record
  // heavier than that, of a splittable kind, is cut into runs of its fields, one chunk each.
  // False, having started no worker, when the level is not worth the pool.
  bool cut_level(std::uint32_t begin, std::uint32_t end, PoolLevel& level) {
    const std::uint64_t min_chunk = everywhere_ ? 1 : kMinChunkBytes;
    const std::uint64_t target = std::max(level_.weight / (threads_ * kChunksPerThread), min_chunk);
    // A level of a few records, none split (an LLM's few hundred tensors), is not worth a thread.
    level.worth = everywhere_ || end - begin >= kMinParallelRecords;
    if (!level.worth && std::none_of(index_.messages.begin() + begin, index_.messages.begin() + end,
                                     [&](const MessageRecord& r) {
                                       return scan_weight(r) > target && can_split(r);
                                     })) {
      return false;
    }
    std::uint32_t run = begin;  // the start of the run of whole records not yet in a chunk
    std::uint32_t run_tensor = level.tensors.next;  // the run's first tensor
    std::uint32_t tensor = run_tensor;              // the next record's, if it is one
    std::uint64_t bytes = 0;
    for (std::uint32_t id = begin; id < end; ++id) {
      const MessageRecord& record = index_.messages[id];  // read before this id's emit()
      const std::uint64_t record_weight = scan_weight(record);
      if (record_weight > target && can_split(record)) {
        if (run < id) emit(level, {run, id, run_tensor});
        split(id, index_.span(id), tensor, target, level);
        run = id + 1;
        run_tensor = tensor;
        bytes = 0;
        if (level.failed) break;
        continue;
      }
      tensor += gets_tensor_record(static_cast<MessageKind>(record.kind), ctx_.metadata()) ? 1 : 0;
      bytes += record_weight;
      if (bytes >= target) {
        emit(level, {run, id + 1, run_tensor});
        run = id + 1;
        run_tensor = tensor;
        bytes = 0;
        if (level.failed) break;
      }
    }
    if (run < end) emit(level, {run, end, run_tensor});
    return !level.workers.empty();
  }

  // Cuts record `id` into runs of about `target` bytes (index/record_runs.hpp), or emits it whole;
  // `tensor` is the id the level's next tensor gets. The record is cut only if it has as many
  // fields as a level needs records to be worth the pool.
  void split(std::uint32_t id, Span span, std::uint32_t tensor, std::uint64_t target,
             PoolLevel& level) {
    RunCutting cutting;
    cutting.target = target;
    cutting.min_fields = everywhere_ ? 0 : kMinParallelRecords;
    cutting.message_fields = ctx_.actions.message_fields(index_.kind(id), false);
    const bool cut = cut_into_runs(index_.file, span, cutting, [&](Span run) {
      level.worth = true;
      emit(level, {id, id + 1, tensor, true, run});
      return !level.failed;
    });
    if (!cut) emit(level, {id, id + 1, tensor});
  }

  ModelIndex& index_;
  IndexScope scope_;
  bool everywhere_;  // set_pool_everywhere_for_tests(), read once for the whole pass
  unsigned threads_;
  PayloadTrimmer trim_;  // the serial scan's
  PassContext ctx_;      // the serial scan's
  OpenDataFile open_;
  const OpenDataFile refuse_ = [](std::string_view) -> DataFileRef { throw NeedsSerial{}; };
  std::array<bool, schema::kMessageKindCount> splittable_{};
  bool serial_only_ = false;
  LevelSums level_;                      // of the level being indexed
  PodTable<std::uint32_t> name_hashes_;  // TensorSlots::hashes
};

}  // namespace

bool set_pool_everywhere_for_tests(bool on) noexcept {
  return pool_everywhere.exchange(on);
}

std::shared_ptr<ModelIndex> build_index(MappedFile file, std::string display_name,
                                        std::filesystem::path folder, MessageKind root,
                                        const OpenOptions& options, IndexScope scope) {
  check_options(options);
  auto index = std::make_shared<ModelIndex>();
  index->file = std::move(file);
  index->display_name = std::move(display_name);
  index->folder = std::move(folder);
  index->options = options;
  IndexBuilder builder(*index, scope);
  builder.run(root);
  // The tables grew by doubling; an index lives as long as its model, so return the slack.
  index->messages.shrink_to_fit();
  index->tensors.shrink_to_fit();
  index->dims.shrink_to_fit();
  build_name_table(*index, builder.name_hashes());
  return index;
}

std::shared_ptr<const ModelIndex> build_index(ModelSource source, MessageKind root,
                                              const OpenOptions& options, IndexScope scope) {
  // The fetcher learns the pass is over however it ends.
  struct Indexed {
    PayloadFetcher* fetcher;
    ~Indexed() {
      if (fetcher != nullptr) fetcher->indexed();
    }
  } indexed{source.fetcher.get()};
  OpenOptions effective = options;
  effective.mode = source.data_mode;
  auto index = build_index(std::move(source.file), std::move(source.display_name),
                           std::move(source.folder), root, effective, scope);
  index->fetcher = std::move(source.fetcher);
  return index;
}

}  // namespace onnxmap::detail
