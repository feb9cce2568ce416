// hash_model and verify_model (verify.hpp): one job per file (the model file, each data file),
// jobs spread over threads; a job reads its file once, in chunks through the map, and feeds each
// chunk to the file's digest and to the digests of the tensors that lie in it.

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "index/model_index.hpp"
#include "io/digest.hpp"
#include "onnxmap/verify.hpp"
#include "view/view_access.hpp"

namespace onnxmap {

namespace {

using detail::Digest;

constexpr std::uint64_t kChunk = std::uint64_t{16} << 20U;

struct Slot {
  std::size_t tensor;  // into Manifest::tensors
  std::uint64_t begin, end;
};

struct FileJob {
  std::size_t file;  // into Manifest::files
  const MappedFile* mapped;
  std::string_view location;  // for the fetcher: "" for the model file
  std::vector<Slot> slots;    // by offset
};

// The files and the tensors of `model`, digests empty; and one job per file.
std::vector<FileJob> plan(const Model& model, const detail::ModelIndex& index,
                          Manifest& manifest) {
  std::vector<FileJob> jobs;
  manifest.files.push_back({index.file.path().filename().string(), index.file.size(), ""});
  jobs.push_back({0, &index.file, "", {}});
  for (const detail::DataFile& data : index.data_files) {
    manifest.files.push_back({data.location, data.file.size(), ""});
    jobs.push_back({jobs.size(), &data.file, data.location, {}});
  }
  for (std::uint32_t t = 0; t < index.tensors.size(); ++t) {
    const detail::TensorRecord& r = index.tensors[t];
    if (!r.has_stored_bytes()) continue;
    const std::size_t job = r.storage == TensorStorage::external ? r.data_file + 1 : 0;
    const Tensor tensor = model.tensor_at(t);
    manifest.tensors.push_back({std::string(tensor.lookup_name()), tensor.path(),
                                manifest.files[job].file, r.payload_offset, r.payload_length, ""});
    jobs[job].slots.push_back(
        {manifest.tensors.size() - 1, r.payload_offset, r.payload_offset + r.payload_length});
  }
  for (FileJob& job : jobs) {
    std::stable_sort(job.slots.begin(), job.slots.end(),
                     [](const Slot& a, const Slot& b) { return a.begin < b.begin; });
  }
  return jobs;
}

// Reads the job's file once and fills its digests in `manifest` (each job writes only its own).
void run(const FileJob& job, const detail::ModelIndex& index, DigestAlgorithm algorithm,
         Manifest& manifest, std::atomic<std::uint64_t>& done) {
  const std::span<const std::byte> bytes = job.mapped->bytes();
  if (index.fetcher) index.fetcher->fetch(job.location, 0, bytes.size());
  job.mapped->advise_sequential(0, bytes.size());
  Digest file(algorithm);
  std::vector<std::pair<const Slot*, Digest>> open;  // tensors begun, not ended
  std::size_t next = 0;
  const auto finish = [&](std::pair<const Slot*, Digest>& tensor) {
    manifest.tensors[tensor.first->tensor].digest = tensor.second.finish_hex();
  };
  for (std::uint64_t at = 0; at < bytes.size(); at += kChunk) {
    const std::uint64_t end = std::min<std::uint64_t>(bytes.size(), at + kChunk);
    file.update(bytes.subspan(at, end - at));
    while (next < job.slots.size() && job.slots[next].begin < end) {
      open.emplace_back(&job.slots[next++], Digest(algorithm));
    }
    for (auto it = open.begin(); it != open.end();) {
      const Slot& slot = *it->first;
      const std::uint64_t from = std::max(slot.begin, at), to = std::min(slot.end, end);
      if (from < to) it->second.update(bytes.subspan(from, to - from));
      if (slot.end > end) {
        ++it;
        continue;
      }
      finish(*it);
      it = open.erase(it);
    }
    done += end - at;
  }
  // Empty tensors at the file's end (the index keeps every other inside it).
  while (next < job.slots.size()) open.emplace_back(&job.slots[next++], Digest(algorithm));
  for (auto& tensor : open) finish(tensor);
  manifest.files[job.file].digest = file.finish_hex();
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
  const std::vector<FileJob> jobs = plan(model, index, manifest);
  std::uint64_t total = 0;
  for (const FileDigest& f : manifest.files) total += f.size;
  const unsigned threads = std::max(1U, std::min<unsigned>(
      options.threads ? options.threads : std::thread::hardware_concurrency(), jobs.size()));
  std::atomic<std::size_t> next{0};
  std::atomic<std::uint64_t> done{0};
  std::atomic<bool> stop{false};
  std::mutex failed_mutex;
  std::exception_ptr failed;  // the first error; the other jobs stop
  const auto work = [&] {
    for (std::size_t j = next++; j < jobs.size() && !stop; j = next++) {
      try {
        run(jobs[j], index, options.algorithm, manifest, done);
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
  if (options.progress) options.progress(done.load(), total);
  return manifest;
}

}  // namespace onnxmap
