#pragma once
// The pass's one parallel function (docs/architecture.md, "The indexing pass"): a level of many
// tensors (a graph's initializers) has the second half of its tensors read on a thread of its own
// while the serial scan reads the level up to them. Each tensor record of a level becomes exactly
// one TensorRecord, in record order, so the thread knows every id it writes before it starts; its
// dims go to a table of its own, joined after the first half's. It reads only tensors of the
// common layout (read_common_tensor) whose reading cannot fail nor need the serial pass (an
// external data file, a payload to unmap, a limit): it stops at the first other one, and the
// serial scan reads that one and the rest, so the index, and any error, are the serial pass's.

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "index/model_index.hpp"
#include "index/walker.hpp"

namespace onnxmap::detail {

class TensorSlice {
 public:
  // Starts the thread on the second half of the `count` tensors among level records
  // [begin, end), or
  // returns null when the level has too few to be worth one. Reserves the index's tensor
  // table and `name_hashes` for the level's tensors: until join(), the serial scan may append
  // only the level's tensors before the slice (it cannot do otherwise) and must not shrink them.
  static std::unique_ptr<TensorSlice> start(ModelIndex& index, const PassContext& ctx,
                                            PodTable<std::uint32_t>& name_hashes,
                                            std::uint32_t begin, std::uint32_t end,
                                            std::uint32_t count);
  TensorSlice(TensorSlice&&) = delete;
  TensorSlice& operator=(TensorSlice&&) = delete;
  ~TensorSlice();

  // The level record before which join() is due: the slice's first tensor record.
  [[nodiscard]] std::uint32_t first_record() const noexcept { return entries_.front().record; }
  // Waits for the thread and appends what it read to the index's tables. Once the serial scan
  // has read every record before first_record(), so that the first half's tensors are in.
  void join(ModelIndex& index, PodTable<std::uint32_t>& name_hashes);
  // Whether the thread read the tensor of record `id`; asked of each record from first_record()
  // on, in order.
  [[nodiscard]] bool indexed(std::uint32_t id) noexcept;

 private:
  TensorSlice() = default;
  void read(const std::byte* file, std::uint64_t page, TensorRecord* out, std::uint32_t* hashes);
  // read() in a guard of this thread's: any fault or exception leaves the rest to the serial scan.
  void read_guarded(const std::byte* file, std::uint64_t page, TensorRecord* out,
                    std::uint32_t* hashes) noexcept;

  // The slice's tensor records, in order, with what the thread needs of them, copied: the
  // record table may move meanwhile.
  struct Entry {
    std::uint32_t record;
    bool merged;
    ByteRange span;
  };
  std::vector<Entry> entries_;
  std::uint32_t first_tensor_ = 0;  // the id of the slice's first tensor
  std::uint64_t max_tensors_ = 0;
  std::uint32_t done_ = 0;  // how many of the slice's tensors the thread read
  std::uint32_t next_ = 0;  // indexed()'s place in entries_
  PodTable<std::int64_t> dims_;
  std::thread thread_;
};

}  // namespace onnxmap::detail
