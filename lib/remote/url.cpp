#include "remote/url.hpp"

#include <algorithm>
#include <cctype>
#include <memory>

#include "common/location.hpp"
#include "onnxmap/error.hpp"
#include "onnxmap/options.hpp"
#include "remote/curl_api.hpp"

namespace onnxmap {

bool is_url(std::string_view path) noexcept {
  const auto starts = [path](std::string_view prefix) {
    return path.size() > prefix.size() &&
           std::equal(prefix.begin(), prefix.end(), path.begin(), [](char a, char b) {
             return a == static_cast<char>(std::tolower(static_cast<unsigned char>(b)));
           });
  };
  return starts("http://") || starts("https://") || starts("s3://") || starts("hf://");
}

std::string shown_url(std::string_view path) {
  const std::size_t scheme_end = path.find("://");
  const bool scheme =
      scheme_end != std::string_view::npos && scheme_end > 0 &&
      std::isalpha(static_cast<unsigned char>(path[0])) != 0 &&
      std::all_of(path.begin(), path.begin() + static_cast<std::ptrdiff_t>(scheme_end), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '-' || c == '.';
      });
  if (!scheme) return std::string(path);
  std::string_view url = path.substr(0, std::min(path.find('?'), path.find('#')));
  const std::size_t authority = scheme_end + 3;
  const std::size_t authority_end = std::min(url.find('/', authority), url.size());
  const std::size_t at = url.substr(0, authority_end).rfind('@');
  if (at == std::string_view::npos || at < authority) return std::string(url);
  return std::string(url.substr(0, authority)) + std::string(url.substr(at + 1));
}
}  // namespace onnxmap

namespace onnxmap::remote {

namespace {

// The URL up to and including the last '/' of its path (no query, no fragment).
std::string_view folder_of(std::string_view url) {
  url = url.substr(0, std::min(url.find('?'), url.find('#')));
  const std::size_t host = url.find("://") + 3;
  const std::size_t slash = url.rfind('/');
  if (slash == std::string_view::npos || slash < host) return url;  // "http://host"
  return url.substr(0, slash + 1);
}

}  // namespace

std::string escape_segment(std::string_view segment) {
  if (segment.empty()) return {};  // a length of 0 would make libcurl measure it with strlen
  const std::unique_ptr<char, decltype(&::curl_free)> out(
      curl().easy_escape(nullptr, segment.data(), static_cast<int>(segment.size())), curl().free);
  if (!out) throw Error(ErrorKind::invalid_argument, "cannot encode a URL segment");
  return out.get();
}

std::string escape_path(std::string_view path) {
  std::string out;
  std::size_t at = 0;
  while (true) {
    const std::size_t end = std::min(path.find('/', at), path.size());
    out += escape_segment(path.substr(at, end - at));
    if (end == path.size()) return out;
    out += '/';
    at = end + 1;
  }
}

std::string resolve_location(std::string_view model_url, std::string_view location) {
  if (const char* why = detail::location_text_problem(location)) {
    throw detail::unsafe_location(location, why);
  }
  if (std::any_of(location.begin(), location.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    throw detail::unsafe_location(location, "holds control characters");
  }
  std::string url(folder_of(model_url));
  if (url.back() != '/') url += '/';
  bool first = true;
  std::size_t at = 0;
  while (at <= location.size()) {
    const std::size_t end = std::min(location.find('/', at), location.size());
    const std::string_view segment = location.substr(at, end - at);
    at = end + 1;
    if (segment.empty() || segment == ".") continue;
    if (!first) url += '/';
    url += escape_segment(segment);
    first = false;
  }
  if (first) throw detail::unsafe_location(location, "names no file");
  return url;
}

std::string file_name(std::string_view model_url) {
  const std::string_view folder = folder_of(model_url);
  std::string_view rest = model_url.substr(folder.size());
  rest = rest.substr(0, std::min(rest.find('?'), rest.find('#')));
  int length = 0;
  const std::unique_ptr<char, decltype(&::curl_free)> decoded(
      curl().easy_unescape(nullptr, rest.data(), static_cast<int>(rest.size()), &length),
      curl().free);
  std::string name = decoded ? std::string(decoded.get(), static_cast<std::size_t>(length)) : "";
  const bool plain = !name.empty() && name != "." && name != ".." &&
                     name.find_first_of(std::string_view("/\0", 2)) == std::string::npos;
  return plain ? name : "model.onnx";
}

}  // namespace onnxmap::remote
