// The one indexing pass, from build_index() to the tables; docs/architecture.md ("The indexing
// pass") tells how a byte of the file becomes a record, in one page.

#include <string>

#include "index/level_scan.hpp"
#include "index/model_index.hpp"
#include "index/name_table.hpp"
#include "index/tensor_table.hpp"
#include "io/lfs_pointer.hpp"

namespace onnxmap::detail {

namespace {

// The root record: the whole file, as a message of kind `root`.
MessageRecord root_record(ModelIndex& index, MessageKind root) {
  if (index.file.size() >= MessageRecord::kOffsetLimit) {
    throw Error(ErrorKind::limit_exceeded, "model files of 256 TiB or more are not supported", 0)
        .in_context(index.display_name, "");
  }
  MessageRecord record;
  record.kind = static_cast<std::uint64_t>(root);
  record.first_child = kNone;
  if (index.file.size() < MessageRecord::kLongLength) {
    record.length = static_cast<std::uint32_t>(index.file.size());
  } else {
    record.length = MessageRecord::kLongLength;
    index.long_lengths.emplace_back(0, index.file.size());
  }
  return record;
}

// Fills the index's tables, one level of the message tree at a time: scanning the records of a
// level appends the next, so every record's children are contiguous. Returns the tensors' name
// hashes, by tensor id.
PodTable<std::uint32_t> scan_levels(ModelIndex& index, MessageKind root, IndexScope scope) {
  PodTable<std::uint32_t> name_hashes;
  PayloadTrimmer trim(index.file);
  PassContext ctx{index.file.bytes().data(), index.options, scope, trim};
  LevelScanner scanner(index, ctx, name_hashes);
  index.messages.push_back(root_record(index, root));
  std::uint32_t begin = 0;
  std::uint32_t end = 1;
  for (int depth = 0; begin < end; ++depth) {
    for (std::uint32_t id = begin; id < end; ++id) {
      // Most records of a large graph were stepped over when added (LevelScanner::try_plain):
      // they only learn where their (no) children begin, without a call per record.
      MessageRecord& record = index.messages[id];
      if (record.plain != 0) {
        record.first_child = static_cast<std::uint32_t>(index.messages.size());
        record.plain = 0;
        continue;
      }
      scanner.scan(id, depth);
    }
    begin = end;
    end = static_cast<std::uint32_t>(index.messages.size());
  }
  trim.finish();
  return name_hashes;
}

}  // namespace

std::shared_ptr<ModelIndex> build_index(MappedFile file, std::string display_name,
                                        std::filesystem::path folder, MessageKind root,
                                        const OpenOptions& options, IndexScope scope) {
  check_options(options);
  // A clone without Git LFS holds a pointer where the model should be: say so, not "wire type 6".
  if (const auto pointer = lfs_pointer(file.bytes())) {
    throw Error(ErrorKind::io, lfs_pointer_message(*pointer), Error::kNoOffset, {}, display_name);
  }
  auto index = std::make_shared<ModelIndex>();
  index->file = std::move(file);
  index->display_name = std::move(display_name);
  index->folder = std::move(folder);
  index->options = options;
  PodTable<std::uint32_t> name_hashes = scan_levels(*index, root, scope);
  // The tables grew by doubling; an index lives as long as its model, so return the slack.
  index->messages.shrink_to_fit();
  index->tensors.shrink_to_fit();
  index->dims.shrink_to_fit();
  name_constants(*index, name_hashes);
  build_name_table(*index, name_hashes);
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
