#include "onnxmap/bulk.hpp"

#include "onnxmap/error.hpp"

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace onnxmap {

namespace {

// One chunk of one tensor: bytes [begin, end) of its data.
struct Chunk {
  std::size_t tensor;
  std::uint64_t begin;
  std::uint64_t end;
};

// Splits every tensor with a view into chunks, ordered by where the bytes are, so each thread
// reads sequentially and neighbouring chunks are neighbours on disk.
std::vector<Chunk> plan_chunks(std::span<const Tensor> tensors, std::size_t chunk_bytes) {
  std::vector<std::size_t> order(tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::pair(tensors[a].data_file(), tensors[a].file_offset()) <
           std::pair(tensors[b].data_file(), tensors[b].file_offset());
  });
  std::vector<Chunk> chunks;
  for (const std::size_t i : order) {
    const std::uint64_t size =
        tensors[i].storage() == TensorStorage::typed ? 0 : tensors[i].bytes().size();
    for (std::uint64_t begin = 0; begin < size; begin += chunk_bytes) {
      chunks.push_back({i, begin, std::min<std::uint64_t>(size, begin + chunk_bytes)});
    }
  }
  return chunks;
}

// Runs work(i) for i in [0, count) on up to `threads` threads; rethrows the first exception.
void run_parallel(std::size_t count, unsigned threads,
                  const std::function<void(std::size_t)>& work) {
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_lock;
  const auto worker = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      try {
        work(i);
      } catch (...) {
        const std::lock_guard lock(failure_lock);
        if (!failure) failure = std::current_exception();
        next = count;
      }
    }
  };
  std::vector<std::jthread> pool;
  const unsigned n = std::max(1U, std::min<unsigned>(threads, static_cast<unsigned>(count)));
  for (unsigned t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  pool.clear();  // joins
  if (failure) std::rethrow_exception(failure);
}

}  // namespace

void page_in(std::span<const Tensor> tensors, const BulkOptions& options) {
  for (const Tensor& t : tensors) t.prefetch();
  const auto chunks = plan_chunks(tensors, options.chunk_bytes);
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  run_parallel(chunks.size(), options.threads, [&](std::size_t c) {
    const Chunk& chunk = chunks[c];
    const auto bytes = tensors[chunk.tensor].bytes();
    // One read per page faults it in; the volatile sink keeps the reads from being optimised out.
    unsigned char sink = 0;
    for (std::uint64_t at = chunk.begin; at < chunk.end; at += page) {
      sink ^= static_cast<unsigned char>(bytes[at]);
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
  run_parallel(typed.size(), options.threads, [&](std::size_t k) {
    const TensorData data = tensors[typed[k]].data();
    std::memcpy(buffers[typed[k]].data(), data.bytes().data(), data.bytes().size());
  });
  const auto chunks = plan_chunks(tensors, options.chunk_bytes);
  run_parallel(chunks.size(), options.threads, [&](std::size_t c) {
    const Chunk& chunk = chunks[c];
    const auto bytes = tensors[chunk.tensor].bytes();
    std::memcpy(buffers[chunk.tensor].data() + chunk.begin, bytes.data() + chunk.begin,
                chunk.end - chunk.begin);
  });
}

}  // namespace onnxmap
