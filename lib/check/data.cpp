// Reading every payload (CheckOptions::read_data): each raw and external range is read in file
// order, BOOL elements must be 0 or 1, and external data `checksum` keys are verified. A checksum
// is the SHA-1 of the file `location` names (onnx's definition); a checksum of the tensor's own
// range is accepted too, since writers differ on which they store.

#include <algorithm>
#include <map>
#include <string>

#include "check/checks.hpp"
#include "io/digest.hpp"
#include "io/fault_guard.hpp"
#include "io/guarded_bytes.hpp"
#include "io/mapped_file.hpp"
#include "view/view_access.hpp"

namespace onnxmap::detail {

namespace {

constexpr std::size_t kChunk = std::size_t{8} << 20U;  // progress granularity

bool is_hex_digest(std::string_view text) {
  return text.size() == 40 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return out;
}

std::string_view checksum_of(const Tensor& tensor) {
  std::string_view value;
  for (const StringStringEntry& entry : tensor.external_data()) {
    if (entry.key == "checksum") value = entry.value;  // the last entry wins, as for the others
  }
  return value;
}

class DataReader {
 public:
  DataReader(const Model& model, const CheckOptions& options, CheckReport& report)
      : model_(model), options_(options), report_(report) {}

  void run() {
    std::vector<Tensor> tensors;
    for (std::size_t i = 0; i < model_.tensor_count(); ++i) {
      const Tensor t = model_.tensor_at(i);
      if (!t.has_stored_bytes()) continue;
      if (t.storage() == TensorStorage::external && !checksum_of(t).empty()) {
        hashed_files_.emplace(std::string(t.data_file()), std::nullopt);
      }
      tensors.push_back(t);
    }
    // Files are read whole for their checksum; their tensors need no second read unless their
    // values are checked.
    const auto read_by_hash = [&](const Tensor& t) {
      return t.storage() == TensorStorage::external &&
             hashed_files_.contains(std::string(t.data_file())) &&
             t.data_type() != DataType::boolean;
    };
    std::erase_if(tensors, read_by_hash);
    std::stable_sort(tensors.begin(), tensors.end(), [](const Tensor& a, const Tensor& b) {
      return a.data_file() != b.data_file() ? a.data_file() < b.data_file()
                                            : a.file_offset() < b.file_offset();
    });
    for (const Tensor& t : tensors) total_ += t.bytes().size();
    for (auto& [location, digest] : hashed_files_) {
      try {
        files_.emplace(location, opened_file(location));
        total_ += files_.at(location).size();
      } catch (const Error& e) {
        add_problem(report_, ProblemKind::external_data, "external_data", e.detail());
      }
    }
    for (const Tensor& t : tensors) read_tensor(t);
    verify_checksums();
    report_.bytes_read = done_;
    sink_ = touched_;
  }

 private:
  // The data file at `location` as the model opened it (a file replaced on disk since is not
  // the model's); opened again by its path only where the model did not open it.
  std::span<const std::byte> opened_file(const std::string& location) {
    for (const DataFile& file : ViewAccess::index(model_)->data_files) {
      if (file.location == location) return file.file.bytes();
    }
    const MappedFile reopened = MappedFile::open(model_.folder() / location, options_.open.mode);
    return reopened_.emplace(location, reopened).first->second.bytes();
  }

  void advance(std::uint64_t bytes) {
    done_ += bytes;
    if (options_.progress) options_.progress(done_, total_);
  }

  void read_tensor(const Tensor& t) {
    const std::span<const std::byte> bytes = t.bytes();
    const bool is_bool = t.data_type() == DataType::boolean;
    bool bad_bool_reported = false;
    for (std::size_t at = 0; at < bytes.size(); at += kChunk) {
      const auto chunk = bytes.subspan(at, std::min(kChunk, bytes.size() - at));
      if (is_bool && !bad_bool_reported) {
        std::size_t bad = chunk.size();
        std::byte value{};
        guard_faults(chunk, [&]() noexcept {
          const auto found = std::find_if(chunk.begin(), chunk.end(),
                                          [](std::byte b) { return b > std::byte{1}; });
          bad = static_cast<std::size_t>(found - chunk.begin());
          if (found != chunk.end()) value = *found;
        });
        if (bad != chunk.size()) {
          add_problem(report_, ProblemKind::payload, t.path(),
                      "BOOL element " + std::to_string(at + bad) + " is " +
                          std::to_string(std::to_integer<int>(value)) + ", not 0 or 1",
                      detail::offset_of(t));
          bad_bool_reported = true;
        }
      } else {
        // One load per page is what brings a mapped page in from disk.
        touched_ ^= touch_pages(chunk);
      }
      advance(chunk.size());
    }
  }

  std::optional<std::string> file_digest(const std::string& location) {
    auto& digest = hashed_files_.at(location);
    if (digest) return digest;
    const auto file = files_.find(location);
    if (file == files_.end()) return std::nullopt;  // could not be opened: reported already
    const std::span<const std::byte> bytes = file->second;
    Digest sha(DigestAlgorithm::sha1);
    for (std::size_t at = 0; at < bytes.size(); at += kChunk) {
      const auto chunk = bytes.subspan(at, std::min(kChunk, bytes.size() - at));
      sha.update(chunk);
      advance(chunk.size());
    }
    digest = sha.finish_hex();
    return digest;
  }

  void verify_checksums() {
    for (std::size_t i = 0; i < model_.tensor_count(); ++i) {
      const Tensor t = model_.tensor_at(i);
      if (t.storage() != TensorStorage::external) continue;
      const std::string_view stored = checksum_of(t);
      if (stored.empty()) continue;
      const std::string path = t.path() + ".external_data";
      if (!is_hex_digest(stored)) {
        add_problem(report_, ProblemKind::checksum, path,
                    "checksum '" + std::string(stored) + "' is not a SHA-1 (40 hex digits)",
                    detail::offset_of(t));
        continue;
      }
      const std::string location(t.data_file());
      const auto file = file_digest(location);
      if (!file) continue;
      const std::string expected = lowercase(stored);
      if (*file == expected || digest_hex(DigestAlgorithm::sha1, t.bytes()) == expected) continue;
      add_problem(report_, ProblemKind::checksum, path,
                  "checksum " + expected + " is neither the SHA-1 of '" + location + "' (" + *file +
                      ") nor of the tensor's bytes",
                  detail::offset_of(t));
    }
  }

  const Model& model_;
  const CheckOptions& options_;
  CheckReport& report_;
  std::map<std::string, std::optional<std::string>> hashed_files_;  // location -> digest
  std::map<std::string, std::span<const std::byte>> files_;         // location -> its bytes
  std::map<std::string, MappedFile> reopened_;
  std::uint64_t total_ = 0;
  std::uint64_t done_ = 0;
  std::byte touched_{0};
  volatile std::byte sink_{0};  // keeps the page loads from being optimized away
};

}  // namespace

void check_data(const Model& model, const CheckOptions& options, CheckReport& report) {
  DataReader(model, options, report).run();
}

}  // namespace onnxmap::detail
