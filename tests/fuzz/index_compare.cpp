#include "index_compare.hpp"

#include <cstring>
#include <functional>
#include <memory>
#include <optional>

#include "index/model_index.hpp"

namespace onnxmap::fuzz {

namespace {

struct Outcome {
  std::shared_ptr<const detail::ModelIndex> index;
  std::optional<Error> error;
};

Outcome build(const std::function<MappedFile()>& file, OpenOptions options, schema::MessageKind root,
              unsigned threads, const std::filesystem::path& folder) {
  options.threads = threads;
  try {
    return {detail::build_index(file(), "model.onnx", folder, root, options), std::nullopt};
  } catch (const Error& e) {
    return {nullptr, e};
  }
}

template <class Table>
bool same_bytes(const Table& a, const Table& b) {
  return a.size() == b.size() &&
         (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0);
}

// Where a tensor's name is in its index's file (-1 for an empty name, which may point nowhere).
std::ptrdiff_t name_at(const detail::ModelIndex& index, const detail::TensorRecord& t) {
  if (t.name.empty()) return -1;
  return reinterpret_cast<const std::byte*>(t.name.data()) - index.file.bytes().data();
}

bool same_tensor(const detail::ModelIndex& ia, const detail::TensorRecord& a,
                 const detail::ModelIndex& ib, const detail::TensorRecord& b) {
  // Field by field: the record has padding, whose bytes mean nothing.
  return a.message == b.message && a.next_same_name == b.next_same_name &&
         name_at(ia, a) == name_at(ib, b) && a.name.size() == b.name.size() &&
         a.data_type == b.data_type && a.name_hash == b.name_hash && a.storage == b.storage &&
         a.typed_field == b.typed_field && a.data_file == b.data_file &&
         a.payload_offset == b.payload_offset && a.payload_length == b.payload_length &&
         a.dims_begin == b.dims_begin && a.dims_count == b.dims_count;
}

std::string compare_indexes(const detail::ModelIndex& a, const detail::ModelIndex& b) {
  if (!same_bytes(a.messages, b.messages)) return "message records differ";
  if (a.tensors.size() != b.tensors.size()) return "tensor counts differ";
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    if (!same_tensor(a, a.tensors[i], b, b.tensors[i]))
      return "tensor " + std::to_string(i) + " differs";
  }
  if (!same_bytes(a.dims, b.dims)) return "dims differ";
  if (!same_bytes(a.name_slots, b.name_slots)) return "name slots differ";
  if (a.long_lengths != b.long_lengths) return "long lengths differ";
  if (a.merged_spans.size() != b.merged_spans.size()) return "merged spans differ";
  for (std::size_t i = 0; i < a.merged_spans.size(); ++i) {
    const auto& [id_a, spans_a] = a.merged_spans[i];
    const auto& [id_b, spans_b] = b.merged_spans[i];
    if (id_a != id_b || spans_a.size() != spans_b.size()) return "merged spans differ";
    for (std::size_t j = 0; j < spans_a.size(); ++j) {
      if (spans_a.begin()[j].offset != spans_b.begin()[j].offset ||
          spans_a.begin()[j].length != spans_b.begin()[j].length) {
        return "merged spans differ";
      }
    }
  }
  if (a.data_files.size() != b.data_files.size()) return "data files differ";
  for (std::size_t i = 0; i < a.data_files.size(); ++i) {
    if (a.data_files[i].location != b.data_files[i].location) return "data files differ";
  }
  if (a.payload_errors.size() != b.payload_errors.size()) return "payload errors differ";
  for (std::size_t i = 0; i < a.payload_errors.size(); ++i) {
    if (a.payload_errors[i].tensor != b.payload_errors[i].tensor ||
        std::string(a.payload_errors[i].error.what()) != b.payload_errors[i].error.what()) {
      return "payload errors differ";
    }
  }
  return "";
}

std::string compare_outcomes(const std::function<MappedFile()>& file, const OpenOptions& options,
                             schema::MessageKind root, unsigned threads,
                             const std::filesystem::path& folder) {
  const PoolEverywhere pool;
  const Outcome one = build(file, options, root, 1, folder);
  const Outcome many = build(file, options, root, threads, folder);
  const std::string label = std::to_string(threads) + " threads: ";
  if (one.error || many.error) {
    if (!one.error || !many.error) {
      return label + "one build failed (" +
             std::string(one.error ? one.error->what() : many.error->what()) + ")";
    }
    if (std::string(one.error->what()) != many.error->what() ||
        one.error->kind() != many.error->kind() || one.error->offset() != many.error->offset() ||
        one.error->field_path() != many.error->field_path()) {
      return label + "errors differ: '" + one.error->what() + "' and '" + many.error->what() + "'";
    }
    return "";
  }
  const std::string difference = compare_indexes(*one.index, *many.index);
  return difference.empty() ? "" : label + difference;
}

}  // namespace

PoolEverywhere::PoolEverywhere() : before_(detail::set_pool_everywhere_for_tests(true)) {}
PoolEverywhere::~PoolEverywhere() {
  detail::set_pool_everywhere_for_tests(before_);
}

std::string compare_thread_counts(std::span<const std::byte> bytes, const OpenOptions& options,
                                  schema::MessageKind root, unsigned threads,
                                  const std::filesystem::path& folder) {
  return compare_outcomes([bytes] { return MappedFile::from_bytes(bytes); }, options, root, threads,
                          folder);
}

std::string compare_thread_counts(const std::filesystem::path& path, const OpenOptions& options,
                                  unsigned threads) {
  return compare_outcomes([&] { return MappedFile::open(path, options.mode); }, options,
                          schema::MessageKind::ModelProto, threads, path.parent_path());
}

}  // namespace onnxmap::fuzz
