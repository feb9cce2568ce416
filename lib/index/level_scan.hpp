#pragma once
// Scans the records of one level of the breadth-first record table: each structural message's
// fields are walked once (index/walker.hpp), its indexed children appended to a LevelOutput, its
// leaf messages validated; each tensor becomes a TensorRecord (index/tensor_table.hpp).

#include <array>
#include <cstdint>
#include <vector>

#include "index/level_output.hpp"
#include "index/tensor_table.hpp"
#include "index/walker.hpp"

namespace onnxmap::detail {

// A record's bytes, or a run of whole fields of them: the pass may split a large message (a
// graph of 360 000 nodes) into pieces scanned on different threads.
struct ScanPiece {
  std::uint32_t record = 0;
  Span span;
  bool whole = true;  // the record's every span, not a run of its fields
};

class LevelScanner {
 public:
  // `index` is read (records of this and earlier levels) and, when `open_data_file` opens files,
  // its data_files grow. The children go to `records`: `out.records`, or on one thread the
  // index's own table, which then grows as the level is read (the scan only ever indexes into
  // it, never holds a pointer). `messages_before` counts what precedes `records` in the index,
  // for max_messages. The tensors go to `tensors`.
  LevelScanner(const ModelIndex& index, PassContext& ctx, int depth, const OpenDataFile& open,
               std::uint64_t messages_before, TensorSlots tensors, LevelOutput& out,
               PodTable<MessageRecord>& records);

  // Scans one piece; throws onnxmap::Error naming the file and the record's path.
  void scan(const ScanPiece& piece);
  // A run of a split record's fields scanned so far had children out of field order (whole
  // records put their own children in order).
  [[nodiscard]] bool unsorted() const noexcept { return unsorted_; }
  // The id the next tensor scanned would get.
  [[nodiscard]] std::uint32_t next_tensor() const noexcept { return tensors_.next; }

  // walk_fields' handler for structural messages.
  [[nodiscard]] static std::uint64_t own_fields() noexcept { return 0; }
  void field(const CursorField& /*field*/) {}
  void leaf(Span span, MessageKind kind, int depth) { validate_leaf(ctx_, span, kind, depth); }
  void child(const CursorField& field, const FieldAction& action, int depth);

 private:
  // A later occurrence of a singular message field, merged into the record of the first.
  struct Merge {
    std::uint32_t record;
    Span span;
  };

  void scan_record(const ScanPiece& piece);
  void prefetch_ahead(std::uint32_t id) const noexcept;
  [[nodiscard]] bool try_plain(MessageKind kind, const Span& span);
  void sort_children(std::uint32_t first, std::uint32_t end);
  void file_merged_spans();

  const ModelIndex& index_;
  PassContext& ctx_;
  int depth_;
  const OpenDataFile& open_;
  TensorSlots tensors_;
  LevelOutput& out_;
  PodTable<MessageRecord>& records_;
  int max_depth_;
  std::uint64_t message_room_;  // records_ may hold this many before max_messages is passed
  // Per record: its first child's local id, whether the children arrived in field order, the
  // singular message fields seen (field number, local record id), and merges into them.
  std::uint32_t first_child_ = 0;
  std::uint32_t last_number_ = 0;  // the field number of the record's last child so far
  bool sorted_ = true;
  bool unsorted_ = false;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> singles_;
  std::vector<Merge> merges_;
  // Per message kind, how many more failed try_plain steps it is worth.
  static constexpr int kPlainCredit = 16;
  std::array<int, schema::kMessageKindCount> plain_credit_;
};

// Sorts records [first, end) of `records` by field number, keeping wire order within a field
// (libprotobuf writes fields in number order, so this is rare), renumbering `long_lengths`
// (sorted by id) and `merge_ids` to match.
void sort_records(PodTable<MessageRecord>& records, std::uint32_t first, std::uint32_t end,
                  std::vector<std::pair<std::uint32_t, std::uint64_t>>& long_lengths,
                  std::vector<std::uint32_t*> merge_ids);

}  // namespace onnxmap::detail
