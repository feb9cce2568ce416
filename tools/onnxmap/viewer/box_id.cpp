// Box ids (box_id.hpp).

#include "box_id.hpp"

#include <charconv>

namespace onnxmap::cli::viewer {

namespace {

// Reads a decimal number ended by ':' off the front of `rest`; false where there is none.
template <typename T>
bool take_field(std::string_view& rest, T& value) {
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
  if (error != std::errc() || end == rest.data() + rest.size() || *end != ':') return false;
  rest.remove_prefix(static_cast<std::size_t>(end - rest.data()) + 1);
  return true;
}

}  // namespace

std::optional<BoxId> BoxId::parse(std::string_view text) {
  if (text.size() < 2 || text[1] != ':') return std::nullopt;
  std::string_view rest = text.substr(2);
  BoxId id;
  switch (text[0]) {
    case 'g': return group(std::string(rest));
    case 'n': {
      const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), id.node);
      if (rest.empty() || error != std::errc() || end != rest.data() + rest.size()) break;
      id.kind = BoxKind::node;
      return id;
    }
    case 'r':
      if (!take_field(rest, id.begin) || !take_field(rest, id.period) ||
          !take_field(rest, id.count) || !take_field(rest, id.shown)) {
        break;
      }
      id.kind = BoxKind::repeat;
      id.prefix = rest;
      return id;
    case 'k':
      if (!take_field(rest, id.begin) || !take_field(rest, id.end)) break;
      id.kind = BoxKind::range;
      id.prefix = rest;
      return id;
    default: break;
  }
  return std::nullopt;
}

std::string BoxId::parse_error(std::string_view text) {
  return "malformed box id '" + std::string(text) +
         "' (g:PREFIX, n:ID, r:BEGIN:PERIOD:COUNT:SHOWN:PREFIX or k:BEGIN:END:PREFIX)";
}

std::string BoxId::to_string() const {
  const auto n = [](std::size_t v) { return std::to_string(v) + ":"; };
  switch (kind) {
    case BoxKind::group: return "g:" + prefix;
    case BoxKind::node: return "n:" + std::to_string(node);
    case BoxKind::repeat: return "r:" + n(begin) + n(period) + n(count) + n(shown) + prefix;
    case BoxKind::range: return "k:" + n(begin) + n(end) + prefix;
  }
  return {};
}

BoxId BoxId::run() const {
  BoxId first = *this;
  first.shown = 0;
  return first;
}

}  // namespace onnxmap::cli::viewer
