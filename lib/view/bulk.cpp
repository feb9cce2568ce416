#include "onnxmap/bulk.hpp"

#include "io/file_reader.hpp"
#include "onnxmap/error.hpp"
#include "onnxmap/mapped_file.hpp"

#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace onnxmap {

namespace {

// One chunk of one tensor: bytes [begin, end) of its data.
struct Chunk {
  std::size_t tensor;
  std::uint64_t begin;
  std::uint64_t end;
};

// Tensors read in place (not typed), ordered by where their bytes are, so each thread reads
// sequentially and neighbouring work is neighbouring on disk. The sort keys are computed once:
// a model may hold hundreds of thousands of tensors.
std::vector<std::size_t> file_order(std::span<const Tensor> tensors) {
  struct Key {
    std::string_view file;
    std::uint64_t offset;
    std::size_t tensor;
  };
  std::vector<Key> keys;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].storage() != TensorStorage::typed && tensors[i].byte_size() > 0) {
      keys.push_back({tensors[i].data_file(), tensors[i].file_offset(), i});
    }
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    return std::pair(a.file, a.offset) < std::pair(b.file, b.offset);
  });
  std::vector<std::size_t> order(keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k) order[k] = keys[k].tensor;
  return order;
}

// Splits every tensor read in place into chunks of at most `chunk_bytes`, in file order, and
// groups consecutive chunks into units of work of about `chunk_bytes`: a model of 180 000 tiny
// tensors is a few units, not 180 000.
std::vector<std::vector<Chunk>> plan_work(std::span<const Tensor> tensors,
                                          std::span<const std::size_t> order,
                                          std::size_t chunk_bytes) {
  std::vector<std::vector<Chunk>> work;
  std::uint64_t unit_bytes = chunk_bytes;  // full: the next chunk starts a unit
  for (const std::size_t i : order) {
    const std::uint64_t size = tensors[i].bytes().size();
    for (std::uint64_t begin = 0; begin < size; begin += chunk_bytes) {
      const std::uint64_t end = std::min<std::uint64_t>(size, begin + chunk_bytes);
      if (unit_bytes + (end - begin) > chunk_bytes) {
        work.emplace_back();
        unit_bytes = 0;
      }
      work.back().push_back({i, begin, end});
      unit_bytes += end - begin;
    }
  }
  return work;
}

// The pages under `tensors`' bytes, as address ranges merged where tensors lie within a page of
// each other, so that advising them is one system call per run of neighbours, not per tensor.
std::vector<std::pair<std::uintptr_t, std::uintptr_t>> page_runs(std::span<const Tensor> tensors,
                                                                 std::span<const std::size_t> order,
                                                                 std::uintptr_t page) {
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> runs;
  for (const std::size_t i : order) {
    const auto bytes = tensors[i].bytes();
    const auto begin = reinterpret_cast<std::uintptr_t>(bytes.data()) / page * page;
    const auto end =
        (reinterpret_cast<std::uintptr_t>(bytes.data()) + bytes.size() + page - 1) / page * page;
    if (!runs.empty() && begin >= runs.back().first && begin <= runs.back().second) {
      runs.back().second = std::max(runs.back().second, end);
    } else {
      runs.emplace_back(begin, end);
    }
  }
  return runs;
}

}  // namespace

void page_in(std::span<const Tensor> tensors, const BulkOptions& options) {
  const auto page = static_cast<std::uintptr_t>(MappedFile::page_size());
  for (const Tensor& t : tensors) {
    if (t.storage() == TensorStorage::typed) t.prefetch();  // decoded later, not touched here
  }
  const std::vector<std::size_t> order = file_order(tensors);
  for (const auto& [begin, end] : page_runs(tensors, order, page)) {
    (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_WILLNEED);
  }
  const auto work = plan_work(tensors, order, options.chunk_bytes);
  io::run_parallel(work.size(), options.threads, [&](std::size_t w) {
    // One read per page faults it in; the volatile sink keeps the reads from being optimised out.
    unsigned char sink = 0;
    for (const Chunk& chunk : work[w]) {
      const auto bytes = tensors[chunk.tensor].bytes();
      for (std::uint64_t at = chunk.begin; at < chunk.end; at += page) {
        sink ^= static_cast<unsigned char>(bytes[at]);
      }
    }
    [[maybe_unused]] volatile unsigned char keep = sink;
  });
}

void read_into(std::span<const Tensor> tensors, std::span<const std::span<std::byte>> buffers,
               const BulkOptions& options) {
  if (tensors.size() != buffers.size()) {
    throw Error(ErrorKind::invalid_argument, std::to_string(tensors.size()) + " tensors but " +
                                                 std::to_string(buffers.size()) + " buffers");
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (buffers[i].size() != tensors[i].byte_size()) {
      throw Error(ErrorKind::invalid_argument,
                  "buffer of " + std::to_string(buffers[i].size()) + " bytes for a tensor of " +
                      std::to_string(tensors[i].byte_size()),
                  Error::kNoOffset, tensors[i].path());
    }
  }
  // Typed tensors must be decoded whole; the rest are copied chunk by chunk.
  std::vector<std::size_t> typed;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].storage() == TensorStorage::typed) typed.push_back(i);
  }
  io::run_parallel(typed.size(), options.threads, [&](std::size_t k) {
    const TensorData data = tensors[typed[k]].data();
    if (!data.bytes().empty())  // an empty tensor's span may be null: memcpy must not see it
      std::memcpy(buffers[typed[k]].data(), data.bytes().data(), data.bytes().size());
  });
  const auto work = plan_work(tensors, file_order(tensors), options.chunk_bytes);
  io::run_parallel(work.size(), options.threads, [&](std::size_t w) {
    for (const Chunk& chunk : work[w]) {
      const auto bytes = tensors[chunk.tensor].bytes();
      std::memcpy(buffers[chunk.tensor].data() + chunk.begin, bytes.data() + chunk.begin,
                  chunk.end - chunk.begin);
    }
  });
}

}  // namespace onnxmap
