#pragma once
// Scans one record of the breadth-first record table: a structural message's fields are walked
// once (index/walker.hpp), its indexed children appended to the table as the next level, its leaf
// messages validated; a tensor becomes a TensorRecord (index/tensor_table.hpp).

#include <array>
#include <cstdint>
#include <vector>

#include "index/tensor_table.hpp"
#include "index/walker.hpp"

namespace onnxmap::detail {

class LevelScanner {
 public:
  // The children go to `index`'s tables, which grow as the level is read (the scan only ever
  // indexes into them, never holds a pointer); external data files it opens join data_files;
  // each tensor's name hash is appended to `name_hashes`.
  LevelScanner(ModelIndex& index, PassContext& ctx, PodTable<std::uint32_t>& name_hashes);

  // Scans record `id`, at `depth` in the tree: its children begin where the table ends now.
  // Throws onnxmap::Error naming the file and the record's path. A record marked plain (stepped
  // over when it was added) is not scanned: its caller clears the mark and sets first_child.
  void scan(std::uint32_t id, int depth);

  // walk_fields' handler for structural messages.
  [[nodiscard]] static std::uint64_t own_fields() noexcept { return 0; }
  void field(const wire::Field& /*field*/) {}
  void leaf(ByteRange span, MessageKind kind, int depth) { validate_leaf(ctx_, span, kind, depth); }
  void child(const wire::Field& field, const FieldAction& action, int depth);

 private:
  // A later occurrence of a singular message field, merged into the record of the first.
  struct Merge {
    std::uint32_t record;
    ByteRange span;
  };

  void scan_message(std::uint32_t id, int depth);
  void prefetch_ahead(std::uint32_t id) const noexcept;
  [[nodiscard]] bool try_plain(MessageKind kind, const ByteRange& span);
  void file_merged_spans();

  ModelIndex& index_;
  PassContext& ctx_;
  PodTable<std::uint32_t>& name_hashes_;
  // Per record: its first child's id, whether the children arrived in field order, the singular
  // message fields seen (field number, record id), and merges into them.
  std::uint32_t first_child_ = 0;
  std::uint32_t last_number_ = 0;  // the field number of the record's last child so far
  bool sorted_ = true;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> singles_;
  std::vector<Merge> merges_;
  // Per message kind, how many more failed try_plain steps it is worth.
  static constexpr int kPlainCredit = 16;
  std::array<int, schema::kMessageKindCount> plain_credit_;
};

// Sorts records [first, end) of the index by field number, keeping wire order within a field
// (libprotobuf writes fields in number order, so this is rare), renumbering `long_lengths` (sorted
// by id) and `merge_ids` to match.
void sort_records(ModelIndex& index, std::uint32_t first, std::uint32_t end,
                  std::vector<std::uint32_t*> merge_ids);

}  // namespace onnxmap::detail
