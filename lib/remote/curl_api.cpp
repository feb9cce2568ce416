#include "remote/curl_api.hpp"

#include <dlfcn.h>

#include <string>
#include <type_traits>

#include "onnxmap/error.hpp"

namespace onnxmap::remote {

namespace {

constexpr const char* kLibrary = "libcurl.so.4";

Error load_error(const std::string& what) {
  const char* why = ::dlerror();
  return {ErrorKind::http, what + (why != nullptr ? std::string(": ") + why : std::string()) +
                               " (URLs need libcurl, Debian package libcurl4)"};
}

CurlApi load() {
  void* library = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) throw load_error(std::string("cannot load ") + kLibrary);
  CurlApi api{};
  const auto bind = [library](auto& function, const char* name) {
    void* symbol = ::dlsym(library, name);
    if (symbol == nullptr) throw load_error(std::string(kLibrary) + " has no " + name);
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(symbol);
  };
  bind(api.easy_init, "curl_easy_init");
  bind(api.easy_cleanup, "curl_easy_cleanup");
  bind(api.easy_reset, "curl_easy_reset");
  bind(api.easy_setopt, "curl_easy_setopt");
  bind(api.easy_getinfo, "curl_easy_getinfo");
  bind(api.easy_strerror, "curl_easy_strerror");
  bind(api.easy_escape, "curl_easy_escape");
  bind(api.easy_unescape, "curl_easy_unescape");
  bind(api.free, "curl_free");
  bind(api.multi_init, "curl_multi_init");
  bind(api.multi_cleanup, "curl_multi_cleanup");
  bind(api.multi_add_handle, "curl_multi_add_handle");
  bind(api.multi_remove_handle, "curl_multi_remove_handle");
  bind(api.multi_perform, "curl_multi_perform");
  bind(api.multi_poll, "curl_multi_poll");
  bind(api.multi_info_read, "curl_multi_info_read");
  bind(api.share_init, "curl_share_init");
  bind(api.share_cleanup, "curl_share_cleanup");
  bind(api.share_setopt, "curl_share_setopt");
  bind(api.slist_append, "curl_slist_append");
  bind(api.slist_free_all, "curl_slist_free_all");
  bind(api.getdate, "curl_getdate");
  decltype(&::curl_global_init) global_init = nullptr;
  bind(global_init, "curl_global_init");
  if (global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    throw Error(ErrorKind::http, "libcurl failed to initialize");
  }
  return api;  // the library stays loaded: handles and connections may outlive any caller
}

}  // namespace

const CurlApi& curl() {
  static const CurlApi api = load();
  return api;
}

}  // namespace onnxmap::remote
