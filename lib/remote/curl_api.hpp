#pragma once
// libcurl's functions, loaded with dlopen when the first URL is opened. Linking libcurl would load
// it and its two dozen dependencies into every program at start (about 11 ms for `onnxmap info`
// of a local file), whether it opens a URL or not. The header gives the types and constants only.

#include <curl/curl.h>

namespace onnxmap::remote {

struct CurlApi {
  decltype(&::curl_easy_init) easy_init;
  decltype(&::curl_easy_cleanup) easy_cleanup;
  decltype(&::curl_easy_reset) easy_reset;
  decltype(&::curl_easy_setopt) easy_setopt;
  decltype(&::curl_easy_getinfo) easy_getinfo;
  decltype(&::curl_easy_strerror) easy_strerror;
  decltype(&::curl_easy_escape) easy_escape;
  decltype(&::curl_easy_unescape) easy_unescape;
  decltype(&::curl_free) free;
  decltype(&::curl_multi_init) multi_init;
  decltype(&::curl_multi_cleanup) multi_cleanup;
  decltype(&::curl_multi_add_handle) multi_add_handle;
  decltype(&::curl_multi_remove_handle) multi_remove_handle;
  decltype(&::curl_multi_perform) multi_perform;
  decltype(&::curl_multi_poll) multi_poll;
  decltype(&::curl_multi_info_read) multi_info_read;
  decltype(&::curl_share_init) share_init;
  decltype(&::curl_share_cleanup) share_cleanup;
  decltype(&::curl_share_setopt) share_setopt;
  decltype(&::curl_slist_append) slist_append;
  decltype(&::curl_slist_free_all) slist_free_all;
  decltype(&::curl_getdate) getdate;
};

// libcurl, loaded and globally initialized on the first call (thread-safe) and kept for the
// process's life. Throws onnxmap::Error (http) when libcurl.so.4 cannot be loaded or lacks a
// function; the next call tries again.
[[nodiscard]] const CurlApi& curl();

}  // namespace onnxmap::remote
