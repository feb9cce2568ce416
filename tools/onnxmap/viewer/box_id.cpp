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

BoxId BoxId::group(std::string prefix) {
  BoxId id;
  id.prefix = std::move(prefix);
  return id;
}

BoxId BoxId::of_node(std::uint32_t node) {
  BoxId id;
  id.kind = BoxKind::node;
  id.node = node;
  return id;
}

BoxId BoxId::repeat(std::string prefix, std::size_t begin, std::size_t period, std::size_t count,
                    std::size_t shown) {
  BoxId id = group(std::move(prefix));
  id.kind = BoxKind::repeat;
  id.begin = begin;
  id.period = period;
  id.count = count;
  id.shown = shown;
  return id;
}

BoxId BoxId::range(std::string prefix, std::size_t begin, std::size_t end) {
  BoxId id = group(std::move(prefix));
  id.kind = BoxKind::range;
  id.begin = begin;
  id.end = end;
  return id;
}

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
  const bool known = text.size() >= 2 && text[1] == ':' &&
                     std::string_view("gnrk").find(text[0]) != std::string_view::npos;
  return known ? "malformed box id '" + std::string(text) + "'"
               : "box id '" + std::string(text) + "': expected g:, n:, r: or k:";
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

std::size_t BoxIdHash::operator()(const BoxId& id) const noexcept {
  std::size_t h = std::hash<std::string>{}(id.prefix);
  for (const std::size_t v : {std::size_t(id.kind), std::size_t(id.node), id.begin, id.end,
                              id.period, id.count, id.shown}) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  }
  return h;
}

}  // namespace onnxmap::cli::viewer
