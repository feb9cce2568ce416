// Fuzz target: any bytes as what a user or a file hands the remote reader's parsers: an AWS
// shared credentials/config file (INI), a URL to show, and the tail of an s3:// and an hf:// URL.
// Beyond "no crash, only onnxmap::Error": a URL as shown never holds a query, a fragment, or user
// information before its host; a resolved URL is http(s) and holds no control character.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "onnxmap/error.hpp"
#include "onnxmap/options.hpp"
#include "remote/credentials.hpp"
#include "remote/endpoint.hpp"

namespace {

void check_shown(std::string_view text) {
  const std::string shown = onnxmap::shown_url(text);
  const std::size_t scheme = shown.find("://");
  if (scheme == std::string::npos || !onnxmap::is_url(text)) return;
  const std::size_t host_end = std::min(shown.find('/', scheme + 3), shown.size());
  if (shown.find_first_of("?#") != std::string::npos ||
      shown.substr(0, host_end).find('@') != std::string::npos) {
    __builtin_trap();
  }
}

void check_resolved(const std::string& url) {
  try {
    const onnxmap::remote::Endpoint endpoint = onnxmap::remote::resolve_endpoint(url, {});
    const std::string& out = endpoint.url;
    if (!out.starts_with("https://") && !out.starts_with("http://")) __builtin_trap();
    if (std::any_of(out.begin(), out.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
      __builtin_trap();
    }
  } catch (const onnxmap::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)onnxmap::remote::parse_ini(text, "fuzz");
  } catch (const onnxmap::Error&) {
  }
  check_shown(text);
  if (text.find('\0') == std::string::npos) {  // a C string to libcurl's escaping
    check_resolved("s3://" + text);
    check_resolved("hf://" + text);
  }
  return 0;
}
