#pragma once
// Output helpers shared by the verbs: labelled lines, aligned tables, human-readable sizes, and
// JSON printed the one way every verb prints it. Each verb builds its JSON once and renders
// its text from that JSON, so the two forms cannot disagree.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace onnxmap::cli {

// The column where the values of labelled lines start ("ir_version:     3").
inline constexpr std::size_t kLabelColumn = 16;

// "label:" padded to `column` characters, then `value`, then a newline. A label too long for the
// column gets one space before its value: the padding never underflows.
[[nodiscard]] std::string labelled(std::string_view label, std::string_view value,
                                   std::size_t column = kLabelColumn);

// One line of text for a field that may hold several: its first line, with " (N more lines)"
// when there are more. Tabs and other control characters show as spaces.
[[nodiscard]] std::string first_line(std::string_view text);

// "1.5 GiB", "512 B".
[[nodiscard]] std::string human_bytes(std::uint64_t bytes);

// `value` indented by 2, then a newline. Strings that are not UTF-8 (names and doc strings are
// bytes on the wire) have their bad bytes replaced by U+FFFD instead of failing the dump.
void print_json(std::ostream& out, const nlohmann::json& value);

// Columns padded to their widest cell, two spaces apart; the last column is not padded.
class Table {
 public:
  Table() = default;
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // Each row starts with `indent` spaces.
  void print(std::ostream& out, std::size_t indent = 0) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace onnxmap::cli
