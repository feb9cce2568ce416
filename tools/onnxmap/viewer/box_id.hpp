#pragma once
// The id of a box of the graph page, in the API and the page's URL (api.md, "Box ids"): one type,
// one spelling (to_string), one parse. A parsed id is well formed; whether it names a box of a
// graph is for the folding to say (fold_levels.hpp: resolve).
//
//   g:PREFIX                           a group (g: the whole graph)
//   n:ID                               a node
//   r:BEGIN:PERIOD:COUNT:SHOWN:PREFIX  COUNT blocks of PERIOD units of PREFIX from unit BEGIN,
//                                      unfolded to block SHOWN
//   k:BEGIN:END:PREFIX                 the units [BEGIN, END) of PREFIX

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace onnxmap::cli::viewer {

enum class BoxKind : char { group = 'g', node = 'n', repeat = 'r', range = 'k' };

struct BoxId {
  BoxKind kind = BoxKind::group;
  std::string prefix;  // group: its own prefix; repeat and range: their level's
  std::uint32_t node = 0;
  std::size_t begin = 0;   // repeat, range: the first unit
  std::size_t end = 0;     // range: one past its last unit
  std::size_t period = 0;  // repeat: units per block
  std::size_t count = 0;   // repeat: blocks
  std::size_t shown = 0;   // repeat: the block shown when unfolded

  [[nodiscard]] static BoxId group(std::string prefix) {
    return {BoxKind::group, std::move(prefix), 0, 0, 0, 0, 0, 0};
  }
  [[nodiscard]] static BoxId of_node(std::uint32_t id) {
    return {BoxKind::node, {}, id, 0, 0, 0, 0, 0};
  }
  [[nodiscard]] static BoxId repeat(std::string prefix, std::size_t begin, std::size_t period,
                                    std::size_t count, std::size_t shown = 0) {
    return {BoxKind::repeat, std::move(prefix), 0, begin, 0, period, count, shown};
  }
  [[nodiscard]] static BoxId range(std::string prefix, std::size_t begin, std::size_t end) {
    return {BoxKind::range, std::move(prefix), 0, begin, end, 0, 0, 0};
  }

  // The parsed id of `text`, or nullopt where it is not spelled as a box id (what is wrong:
  // parse_error).
  [[nodiscard]] static std::optional<BoxId> parse(std::string_view text);
  [[nodiscard]] static std::string parse_error(std::string_view text);
  [[nodiscard]] std::string to_string() const;

  // Whether it unfolds into a level (every box but a node).
  [[nodiscard]] bool unfolds() const { return kind != BoxKind::node; }
  // The same run with its first block shown: a run unfolded shows whichever block is asked.
  [[nodiscard]] BoxId run() const;

  bool operator==(const BoxId&) const = default;
};

struct BoxIdHash {
  std::size_t operator()(const BoxId& id) const { return std::hash<std::string>{}(id.to_string()); }
};

}  // namespace onnxmap::cli::viewer
