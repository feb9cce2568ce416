#include "onnxmap/model.hpp"

#include "common/close_names.hpp"
#include "io/fault_guard.hpp"
#include "io/read_check.hpp"
#include "view/leaf.hpp"

namespace onnxmap {

namespace {

using MP = schema::ModelProto;
constexpr std::uint32_t kRoot = 0;

}  // namespace

Model Model::open(const std::filesystem::path& path, const OpenOptions& options,
                  schema::MessageKind root) {
  return Model(detail::build_index(detail::open_source(path, options, root), root, options,
                                   detail::IndexScope::full));
}

Model Model::from_bytes(std::span<const std::byte> bytes, const OpenOptions& options,
                        schema::MessageKind root, const std::filesystem::path& folder) {
  return Model(detail::build_index(detail::source_from_bytes(bytes, options, folder), root, options,
                                   detail::IndexScope::full));
}

std::int64_t Model::ir_version() const {
  return wire::as_int64(
      detail::Fields(index_.get(), kRoot).varint_field(MP::kIrVersion).value_or(0));
}
std::vector<OperatorSetId> Model::opset_imports() const {
  return detail::decode_opsets(
      index_.get(), detail::Fields(index_.get(), kRoot).messages_field(MP::kOpsetImport));
}
std::string_view Model::producer_name() const {
  return detail::Fields(index_.get(), kRoot).string_field(MP::kProducerName);
}
std::string_view Model::producer_version() const {
  return detail::Fields(index_.get(), kRoot).string_field(MP::kProducerVersion);
}
std::string_view Model::domain() const {
  return detail::Fields(index_.get(), kRoot).string_field(MP::kDomain);
}
ModelVersion Model::model_version() const {
  return {wire::as_int64(
      detail::Fields(index_.get(), kRoot).varint_field(MP::kModelVersion).value_or(0))};
}
std::string_view Model::doc_string() const {
  return detail::Fields(index_.get(), kRoot).string_field(MP::kDocString);
}
std::vector<StringStringEntry> Model::metadata_props() const {
  return detail::decode_entries(
      index_.get(), detail::Fields(index_.get(), kRoot).messages_field(MP::kMetadataProps));
}
std::optional<Graph> Model::graph() const& {
  const auto [first, last] = index_->children(kRoot, MP::kGraph);
  if (first == last) return std::nullopt;
  return detail::ViewAccess::make<Graph>(index_.get(), first);
}
ViewRange<Function> Model::functions() const& {
  return detail::ViewAccess::range<Function>(index_.get(), index_->children(kRoot, MP::kFunctions));
}
ViewRange<TrainingInfo> Model::training_info() const& {
  return detail::ViewAccess::range<TrainingInfo>(index_.get(),
                                                 index_->children(kRoot, MP::kTrainingInfo));
}

std::size_t Model::tensor_count() const noexcept {
  return index_->tensors.size();
}
Tensor Model::tensor_at(std::size_t i) const& {
  return detail::ViewAccess::make<Tensor>(index_.get(), static_cast<std::uint32_t>(i));
}

namespace {

// index.find_tensor(name); inside a FrontEndScope, run as a guarded kernel (it compares names in
// the map, allocates nothing and throws nothing), so that a lost page is an Error.
std::uint32_t find_id(const detail::ModelIndex& index, std::string_view name) {
  if (!detail::reading_for_front_end()) return index.find_tensor(name);
  std::uint32_t id = detail::kNone;
  detail::guard_faults(index.file.bytes(), [&]() noexcept { id = index.find_tensor(name); });
  return id;
}

}  // namespace

std::optional<Tensor> Model::find_tensor(std::string_view name) const& {
  const std::uint32_t id = find_id(*index_, name);
  if (id == detail::kNone) return std::nullopt;
  return detail::ViewAccess::make<Tensor>(index_.get(), id);
}

Tensor Model::tensor(std::string_view name) const& {
  if (auto found = find_tensor(name)) return *found;
  const std::string close = detail::close_names(name, [&](const auto& visit) {
    for (const auto& record : index_->tensors) {
      detail::check_for_front_end(record.name);
      visit(record.name);
    }
  });
  throw Error(ErrorKind::not_found,
              "no tensor named '" + std::string(name) + "'" +
                  (close.empty() ? "" : "; did you mean " + close + "?"),
              Error::kNoOffset, {}, index_->display_name);
}

std::vector<Tensor> Model::tensors(std::string_view name) const& {
  std::vector<Tensor> out;
  for (std::uint32_t id = find_id(*index_, name); id != detail::kNone;
       id = index_->tensors[id].next_same_name) {
    out.push_back(detail::ViewAccess::make<Tensor>(index_.get(), id));
  }
  return out;
}

std::optional<Tensor> Model::tensor_at_path(std::string_view path) const& {
  const std::uint32_t record = index_->record_at_path(path);
  if (record == detail::kNone) return std::nullopt;
  const std::uint32_t id = index_->tensor_of_message(record);
  if (id == detail::kNone) return std::nullopt;
  return detail::ViewAccess::make<Tensor>(index_.get(), id);
}

std::vector<Error> Model::payload_errors() const {
  std::vector<Error> out;
  out.reserve(index_->payload_errors.size());
  for (const auto& entry : index_->payload_errors) out.push_back(entry.error);
  return out;
}

std::uint64_t Model::index_bytes() const noexcept {
  return index_->memory_bytes();
}
std::size_t Model::message_count() const noexcept {
  return index_->messages.size();
}
const std::filesystem::path& Model::path() const noexcept {
  return index_->file.path();
}
const std::filesystem::path& Model::folder() const noexcept {
  return index_->folder;
}
std::uint64_t Model::file_size() const noexcept {
  return index_->file.size();
}
std::optional<FetchStats> Model::fetch_stats() const noexcept {
  if (!index_->fetcher) return std::nullopt;
  return index_->fetcher->totals();
}

std::optional<FileVersion> Model::opened_version() const noexcept {
  // A URL's files are the local mirror's, which grows as ranges arrive: not the model's version.
  if (index_->fetcher) return std::nullopt;
  return index_->file.version();
}

std::vector<std::filesystem::path> Model::changed_on_disk() const {
  std::vector<std::filesystem::path> changed;
  if (index_->fetcher) return changed;
  const auto check = [&changed](const MappedFile& file) {
    if (file.version() && file_version(file.path()) != file.version()) {
      changed.push_back(file.path());
    }
  };
  check(index_->file);
  for (const detail::DataFile& data : index_->data_files) check(data.file);
  return changed;
}

}  // namespace onnxmap
