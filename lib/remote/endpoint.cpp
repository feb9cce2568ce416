#include "remote/endpoint.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <vector>

#include "onnxmap/error.hpp"
#include "remote/credentials.hpp"
#include "remote/url.hpp"

namespace onnxmap::remote {

namespace {

constexpr std::string_view kHub = "https://huggingface.co";

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), text.begin(), [](char a, char b) {
           return a == static_cast<char>(std::tolower(static_cast<unsigned char>(b)));
         });
}

Error malformed(std::string_view given, const std::string& what) {
  return {ErrorKind::invalid_argument, what, Error::kNoOffset, {}, shown_url(given)};
}

// A base URL from the environment (an endpoint): http(s)://HOST[:PORT][/PREFIX], returned without
// a trailing '/'. `name` names its variable in errors.
std::string base_url(std::string url, std::string_view name, std::string_view given) {
  const bool web = starts_with_nocase(url, "http://") || starts_with_nocase(url, "https://");
  const std::size_t host = url.find("://") + 3;
  const std::size_t host_end = std::min(url.find('/', host), url.size());
  if (!web || host >= host_end || url.find_first_of("?#") != std::string::npos ||
      url.substr(0, host_end).find('@') != std::string::npos) {
    throw malformed(given, std::string(name) + " must be http(s)://HOST[:PORT][/PATH], without " +
                               "user information or query ('" + shown_url(url) + "')");
  }
  while (url.back() == '/') url.pop_back();
  return url;
}

// Buckets that can be a host name label under TLS: lower case, digits and '-', no '.'.
bool dns_label(std::string_view bucket) {
  return bucket.size() >= 3 && bucket.size() <= 63 && bucket.front() != '-' &&
         bucket.back() != '-' && std::all_of(bucket.begin(), bucket.end(), [](char c) {
           return std::islower(static_cast<unsigned char>(c)) != 0 ||
                  std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '-';
         });
}

Endpoint s3_endpoint(std::string_view given) {
  const std::string_view rest = given.substr(5);  // after "s3://"
  const std::size_t slash = rest.find('/');
  const std::string_view bucket = rest.substr(0, slash);
  const std::string_view key = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
  const bool bucket_ok =
      !bucket.empty() && bucket.size() <= 255 &&
      std::all_of(bucket.begin(), bucket.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == '_';
      });
  if (!bucket_ok) {
    throw malformed(given,
                    "an s3:// URL is s3://BUCKET/KEY; the bucket is 1-255 of A-Z a-z 0-9 . - _");
  }
  if (key.empty()) throw malformed(given, "an s3:// URL is s3://BUCKET/KEY; the key is missing");
  AwsSettings aws;
  try {
    aws = aws_settings();
  } catch (const Error& e) {  // one naming a credential file keeps it; the others name the URL
    if (!e.file().empty()) throw;
    throw e.in_context(shown_url(given), "");
  }
  const std::string& style = aws.addressing_style;
  if (!style.empty() && style != "auto" && style != "path" && style != "virtual") {
    throw malformed(given,
                    "the S3 addressing style is '" + style + "'; it must be path, virtual or auto");
  }
  Endpoint out;
  const std::string object = escape_path(key);
  if (aws.endpoint_url.empty()) {
    const std::string host = "s3." + aws.region + ".amazonaws.com";
    out.url = style != "path" && dns_label(bucket)
                  ? "https://" + std::string(bucket) + "." + host + "/" + object
                  : "https://" + host + "/" + std::string(bucket) + "/" + object;
  } else {
    const std::string base = base_url(aws.endpoint_url, "the S3 endpoint URL", given);
    if (style == "virtual") {
      const std::size_t host = base.find("://") + 3;
      out.url = base.substr(0, host) + std::string(bucket) + "." + base.substr(host) + "/" + object;
    } else {  // S3-compatible services are mostly reached path-style
      out.url = base + "/" + std::string(bucket) + "/" + object;
    }
  }
  if (!aws.access_key_id.empty()) {
    out.access = {{},
                  "aws:amz:" + aws.region + ":s3",
                  aws.access_key_id,
                  aws.secret_access_key,
                  aws.session_token};
  }
  return out;
}

std::vector<std::string_view> split(std::string_view text) {
  std::vector<std::string_view> parts;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find('/', at), text.size());
    parts.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return parts;
}

Endpoint hub_endpoint(std::string_view given) {
  std::string_view rest = given.substr(5);  // after "hf://"
  std::string kind;
  for (const std::string_view prefix : {"datasets/", "spaces/"}) {
    if (rest.starts_with(prefix)) {
      kind = prefix;
      rest.remove_prefix(prefix.size());
    }
  }
  const std::size_t org_end = rest.find('/');
  const std::size_t repo_end =
      org_end == std::string_view::npos ? org_end : rest.find('/', org_end + 1);
  const std::string_view usage = "an hf:// URL is hf://ORG/REPO/PATH[@REVISION]";
  if (org_end == 0 || repo_end == std::string_view::npos || repo_end == org_end + 1 ||
      repo_end + 1 >= rest.size()) {
    throw malformed(given, std::string(usage) + " (ORG, REPO and PATH all given)");
  }
  const std::string_view org = rest.substr(0, org_end);
  std::string_view repo = rest.substr(org_end + 1, repo_end - org_end - 1);
  std::string_view path = rest.substr(repo_end + 1);
  std::string_view revision = "main";
  if (const std::size_t at = repo.find('@'); at != std::string_view::npos) {
    revision = repo.substr(at + 1);
    repo = repo.substr(0, at);
  } else if (const std::size_t last = path.rfind('@'); last != std::string_view::npos) {
    revision = path.substr(last + 1);
    path = path.substr(0, last);
  }
  const auto bad_segment = [](std::string_view s) { return s.empty() || s == "." || s == ".."; };
  if (revision.empty() || repo.empty() || path.empty() ||
      std::ranges::any_of(split(path), bad_segment)) {
    throw malformed(given,
                    std::string(usage) + " (no empty, '.' or '..' segment, no empty revision)");
  }
  const char* endpoint = std::getenv("HF_ENDPOINT");
  const std::string base = endpoint != nullptr && *endpoint != '\0'
                               ? base_url(endpoint, "HF_ENDPOINT", given)
                               : std::string(kHub);
  Endpoint out;
  out.url = base + "/" + kind + escape_segment(org) + "/" + escape_segment(repo) + "/resolve/" +
            escape_segment(revision) + "/" + escape_path(path);
  out.access.bearer = hub_token();
  return out;
}

}  // namespace

Endpoint resolve_endpoint(std::string_view given, const RemoteOptions& options) {
  Endpoint out;
  if (starts_with_nocase(given, "s3://")) {
    out = s3_endpoint(given);
  } else if (starts_with_nocase(given, "hf://")) {
    out = hub_endpoint(given);
  }
  out.shown = shown_url(given);
  if (!out.url.empty()) return out;
  out.url = given;
  if (!options.token_variable.empty()) {
    const char* token = std::getenv(options.token_variable.c_str());
    if (token != nullptr) out.access.bearer = token;
  }
  return out;
}

}  // namespace onnxmap::remote
