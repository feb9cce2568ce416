#include "format.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

namespace onnxmap::cli {

std::string labelled(std::string_view label, std::string_view value, std::size_t column) {
  std::string out(label);
  out += ':';
  out.append(out.size() < column ? column - out.size() : 1, ' ');
  out += value;
  out += '\n';
  return out;
}

std::string first_line(std::string_view text) {
  const std::size_t end = text.find('\n');
  std::string out(text.substr(0, end));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
  }
  if (end != std::string_view::npos) {
    const auto more =
        std::count(text.begin() + static_cast<std::ptrdiff_t>(end) + 1, text.end(), '\n') +
        (text.back() == '\n' ? 0 : 1);
    if (more > 0) out += " (" + std::to_string(more) + (more == 1 ? " more line)" : " more lines)");
  }
  return out;
}

void print_json(std::ostream& out, const nlohmann::json& value) {
  out << value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

std::string human_bytes(std::uint64_t bytes) {
  static constexpr std::array<const char*, 7> kUnits{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < kUnits.size()) {
    value /= 1024;
    ++unit;
  }
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.1f %s", value, kUnits[unit]);
  return text.data();
}

void Table::print(std::ostream& out, std::size_t indent) const {
  std::vector<std::size_t> widths;
  for (const auto& row : rows_) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const auto& row : rows_) {
    out << std::string(indent, ' ');
    for (std::size_t c = 0; c < row.size(); ++c) {
      out << row[c];
      if (c + 1 < row.size()) out << std::string(widths[c] - row[c].size() + 2, ' ');
    }
    out << '\n';
  }
}

}  // namespace onnxmap::cli
