#include "remote/remote_model.hpp"

#include <cstdlib>
#include <map>
#include <mutex>

#include "io/payload_fetcher.hpp"
#include "onnxmap/error.hpp"
#include "remote/cache_record.hpp"
#include "remote/endpoint.hpp"
#include "remote/metadata_fetch.hpp"
#include "remote/mirror_file.hpp"
#include "remote/url.hpp"

namespace onnxmap::detail {

namespace {

using remote::MirrorFile;
using schema::MessageKind;

// The first request asks for this much; a model file up to kWholeFile bytes is then fetched
// whole in at most one more (the .onnx of an external-data model is all metadata).
constexpr std::uint64_t kProbe = std::uint64_t{256} << 10U;
constexpr std::uint64_t kWholeFile = std::uint64_t{4} << 20U;

std::filesystem::path make_temporary_folder() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/onnxmap-remote-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw Error(ErrorKind::io, "cannot create a temporary folder for the mirror", Error::kNoOffset,
                {}, pattern);
  }
  return pattern;
}

// The mirror of one remote model and every data file it names. Fetches are serialized.
class RemoteModel final : public PayloadFetcher {
 public:
  RemoteModel(std::string_view url, const RemoteOptions& options)
      : given_(url), options_(options) {}

  ~RemoteModel() override {
    try {
      save_record();
    } catch (...) {  // a cache that cannot be written is only a cache
    }
  }

  // Fills the mirror with the metadata (or trusts a cached one) and returns its folder.
  std::filesystem::path prepare(MessageKind root, int max_depth) {
    endpoint_ = remote::resolve_endpoint(given_, options_);
    // The cache is keyed by the URL requested as shown (an s3:// URL's endpoint included, no
    // secret), and the record holds that form only.
    shown_url_ = shown_url(endpoint_.url);
    const bool cached = !options_.cache_dir.empty();
    folder_ =
        cached ? remote::cache_folder(options_.cache_dir, shown_url_) : make_temporary_folder();
    if (cached) std::filesystem::create_directories(folder_);
    const auto record = cached ? remote::read_record(folder_ / "record") : std::nullopt;
    model_ = std::make_unique<MirrorFile>(folder_ / remote::file_name(endpoint_.url), endpoint_,
                                          options_, session_);
    const std::span<const std::byte> first = model_->start(kProbe);
    if (record && record->url == shown_url_ &&
        record->files[0].validators == model_->validators()) {
      model_->restore(record->files[0].validators, record->files[0].held);
      for (std::size_t i = 1; i < record->files.size(); ++i) {
        add_data_file(record->files[i].location)
            .restore(record->files[i].validators, record->files[i].held);
      }
      return folder_;
    }
    if (record) model_->discard();
    if (model_->size() <= kWholeFile) model_->ensure(0, model_->size());
    // A little more depth than the index allows, so that the index reports a deep file.
    for (const std::string& location :
         remote::fetch_metadata(*model_, first, root, max_depth + 2)) {
      (void)add_data_file(location).start(1);  // its size and validators: one byte
    }
    return folder_;
  }

  // After the index pass: a temporary mirror's names go (its files live on while mapped and
  // open here); a cache's record is written.
  void indexed() noexcept override {
    try {
      drop_names_or_save();
    } catch (...) {  // a name left in the temporary folder, or a cache not written, is no error
    }
  }

  using PayloadFetcher::fetch;
  FetchStats fetch(std::string_view location, std::span<const ByteRange> ranges) const override {
    const std::lock_guard lock(mutex_);
    return file_for(location).ensure(ranges);
  }

  [[nodiscard]] FetchStats totals() const noexcept override { return session_.totals(); }

  [[nodiscard]] const std::filesystem::path& model_path() const { return model_->path(); }

 private:
  void drop_names_or_save() {
    if (folder_.empty()) return;
    if (options_.cache_dir.empty()) {
      std::filesystem::remove_all(folder_);
    } else {
      save_record();
    }
  }

  MirrorFile& add_data_file(const std::string& location) {
    std::string url = remote::resolve_location(endpoint_.url, location);
    if (url == endpoint_.url)
      throw Error(ErrorKind::unsafe_path,
                  "external data location '" + location + "' is the model itself", Error::kNoOffset,
                  "external_data", endpoint_.shown);
    const std::filesystem::path path = folder_ / location;
    std::filesystem::create_directories(path.parent_path());
    std::string shown = shown_url(url);
    remote::Endpoint endpoint{std::move(url), std::move(shown), endpoint_.access};
    auto file = std::make_unique<MirrorFile>(path, std::move(endpoint), options_, session_);
    MirrorFile& added = *file;
    data_.emplace(location, std::move(file));
    return added;
  }

  MirrorFile& file_for(std::string_view location) const {
    if (location.empty()) return *model_;
    const auto found = data_.find(location);
    if (found == data_.end()) {
      throw Error(ErrorKind::not_found,
                  "external data location '" + std::string(location) + "' has no mirror",
                  Error::kNoOffset, {}, endpoint_.shown);
    }
    return *found->second;
  }

  void save_record() const {
    if (options_.cache_dir.empty() || !model_) return;
    const std::lock_guard lock(mutex_);
    remote::CacheRecord record{shown_url_, {{"", model_->validators(), model_->held()}}};
    for (const auto& [location, file] : data_) {
      record.files.push_back({location, file->validators(), file->held()});
    }
    remote::write_record(folder_ / "record", record);
  }

  std::string given_;          // the URL as the caller gave it (it may hold secrets)
  remote::Endpoint endpoint_;  // what it is requested as
  std::string shown_url_;      // endpoint_.url fit to show: the cache's key and record
  RemoteOptions options_;
  remote::HttpSession session_;
  std::filesystem::path folder_;
  mutable std::mutex mutex_;
  std::unique_ptr<MirrorFile> model_;
  std::map<std::string, std::unique_ptr<MirrorFile>, std::less<>> data_;
};

}  // namespace

Mirror open_mirror(std::string_view url, const RemoteOptions& options, MessageKind root,
                   int max_depth) {
  auto remote = std::make_shared<RemoteModel>(url, options);
  try {
    std::filesystem::path folder = remote->prepare(root, max_depth);
    std::filesystem::path model_path = remote->model_path();
    return {std::move(model_path), std::move(folder), std::move(remote)};
  } catch (...) {
    remote->indexed();
    throw;
  }
}

}  // namespace onnxmap::detail
