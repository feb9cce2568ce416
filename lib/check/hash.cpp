// hash_model (verify.hpp): the work cut into tasks spread over a pool of threads: one a file
// for the file's digest, read through the map in chunks, and the tensors' digests in groups of
// about kGroup bytes of a file each, read through the same map at the same time (a cold page is
// read from the disk once, by whichever task touches it first). verify_model is manifest.cpp's.

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "index/model_index.hpp"
#include "io/digest.hpp"
#include "onnxmap/verify.hpp"
#include "view/view_access.hpp"

namespace onnxmap {

namespace {

using detail::Digest;

constexpr std::uint64_t kChunk = std::uint64_t{16} << 20U;
constexpr std::uint64_t kGroup = std::uint64_t{64} << 20U;

// The digest of `bytes`, fed in chunks, counting them into `done`.
std::string digest_of(DigestAlgorithm algorithm, std::span<const std::byte> bytes,
                      std::atomic<std::uint64_t>& done) {
  Digest digest(algorithm);
  for (std::uint64_t at = 0; at < bytes.size(); at += kChunk) {
    const std::uint64_t length = std::min<std::uint64_t>(kChunk, bytes.size() - at);
    digest.update(bytes.subspan(at, length));
    done += length;
  }
  return digest.finish_hex();
}

// The row slices plan() gives each of R ranks of `tensor`, for each R of `ranks` (each slice
// once, by row_begin), digests empty; none where plan() does not cut it.
std::vector<TensorDigest::Rows> rank_rows(const Tensor& tensor, std::span<const unsigned> ranks) {
  std::set<std::pair<std::uint64_t, std::uint64_t>> slices;
  const std::uint64_t rows = tensor.row_count();
  for (const unsigned r : ranks) {
    if (r < 2 || !tensor.can_slice_rows() || rows < r) continue;
    for (unsigned rank = 0; rank < r; ++rank)
      slices.emplace(rows * rank / r, rows * (rank + 1) / r);
  }
  std::vector<TensorDigest::Rows> out;
  for (const auto& [begin, end] : slices) out.push_back({begin, end, ""});
  return out;
}

// The files and tensors of `model` (digests empty), and the mapped file of each entry of files.
std::vector<const MappedFile*> list(const Model& model, const detail::ModelIndex& index,
                                    std::span<const unsigned> ranks, Manifest& manifest) {
  std::vector<const MappedFile*> mapped{&index.file};
  manifest.files.push_back({index.file.path().filename().string(), index.file.size(), ""});
  for (const detail::DataFile& data : index.data_files) {
    manifest.files.push_back({data.location, data.file.size(), ""});
    mapped.push_back(&data.file);
  }
  for (std::uint32_t t = 0; t < index.tensors.size(); ++t) {
    const detail::TensorRecord& r = index.tensors[t];
    if (!r.has_stored_bytes()) continue;
    const std::size_t file = r.storage == TensorStorage::external ? r.data_file + 1 : 0;
    const Tensor tensor = model.tensor_at(t);
    manifest.tensors.push_back({std::string(tensor.lookup_name()), tensor.path(),
                                manifest.files[file].file, r.payload_offset, r.payload_length, "",
                                rank_rows(tensor, ranks)});
  }
  return mapped;
}

// The tasks that fill `manifest`'s digests: each writes digests no other task writes. They hold
// `manifest`, `done` and the files of `mapped` by reference.
std::vector<std::function<void()>> tasks_for(std::span<const MappedFile* const> mapped,
                                             DigestAlgorithm algorithm, Manifest& manifest,
                                             std::atomic<std::uint64_t>& done) {
  std::vector<std::function<void()>> tasks;
  for (std::size_t f = 0; f < mapped.size(); ++f) {
    tasks.emplace_back([&manifest, &done, file = mapped[f], f, algorithm] {
      file->advise_sequential(0, file->size());
      manifest.files[f].digest = digest_of(algorithm, file->bytes(), done);
    });
  }
  std::map<std::string_view, const MappedFile*> file_of;
  for (std::size_t f = 0; f < manifest.files.size(); ++f)
    file_of[manifest.files[f].file] = mapped[f];
  // Groups of tensors, each tensor with the file it lies in.
  std::vector<std::pair<std::size_t, const MappedFile*>> group;
  std::uint64_t bytes = 0;
  const auto close_group = [&] {
    if (group.empty()) return;
    tasks.emplace_back([&manifest, &done, group = std::move(group), algorithm] {
      for (const auto& [i, file] : group) {
        TensorDigest& d = manifest.tensors[i];
        const std::span<const std::byte> bytes = file->bytes().subspan(d.offset, d.length);
        d.digest = digest_of(algorithm, bytes, done);
        if (d.rows.empty()) continue;
        // A sliced tensor's rows are whole bytes, so a row is length / rows bytes; slices are
        // hashed from the pages just read, and not counted as bytes read again.
        const std::uint64_t row_bytes = d.length / d.rows.back().row_end;
        std::atomic<std::uint64_t> again{0};
        for (TensorDigest::Rows& s : d.rows) {
          s.digest = digest_of(
              algorithm,
              bytes.subspan(s.row_begin * row_bytes, (s.row_end - s.row_begin) * row_bytes), again);
        }
      }
    });
    group = {};
    bytes = 0;
  };
  for (std::size_t t = 0; t < manifest.tensors.size(); ++t) {
    group.emplace_back(t, file_of.at(manifest.tensors[t].file));
    bytes += manifest.tensors[t].length;
    if (bytes >= kGroup) close_group();
  }
  close_group();
  return tasks;
}

// Runs `tasks` on `threads` threads (the caller's among them); the first error stops the rest
// and is thrown.
void run_all(const std::vector<std::function<void()>>& tasks, unsigned threads) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex failed_mutex;
  std::exception_ptr failed;
  const auto work = [&] {
    for (std::size_t i = next++; i < tasks.size() && !stop; i = next++) {
      try {
        tasks[i]();
      } catch (...) {
        const std::lock_guard lock(failed_mutex);
        if (!failed) failed = std::current_exception();
        stop = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (failed) std::rethrow_exception(failed);
}

}  // namespace

Manifest hash_model(const Model& model, const HashOptions& options) {
  if (options.algorithm == DigestAlgorithm::sha1) {
    throw Error(ErrorKind::invalid_argument,
                "a manifest's digests are sha256 or xxh3-128 (sha1 is for checksum keys)");
  }
  const detail::ModelIndex& index = *detail::ViewAccess::index(model);
  Manifest manifest;
  manifest.algorithm = options.algorithm;
  const std::vector<const MappedFile*> mapped = list(model, index, options.ranks, manifest);
  if (index.fetcher) {  // a URL's files, fetched whole into the mirror first
    index.fetcher->fetch("", 0, index.file.size());
    for (const detail::DataFile& data : index.data_files) {
      index.fetcher->fetch(data.location, 0, data.file.size());
    }
  }
  std::atomic<std::uint64_t> done{0};
  const auto tasks = tasks_for(mapped, options.algorithm, manifest, done);
  const unsigned cores = std::max(1U, std::thread::hardware_concurrency());
  const unsigned threads = options.threads != 0 ? options.threads : cores;
  run_all(tasks, std::max<unsigned>(1, std::min<std::size_t>(threads, tasks.size())));
  if (options.progress) options.progress(done.load(), done.load());
  return manifest;
}

}  // namespace onnxmap
