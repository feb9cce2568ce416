#pragma once
// What a model's URL as given (http://, https://, s3://, hf://) is requested as: an http(s) URL
// and how requests to it authenticate (docs/remote.md says what is sent to which host).

#include <string>
#include <string_view>

#include "onnxmap/options.hpp"

namespace onnxmap::remote {

// How requests to one remote file authenticate. Secrets: never shown, never written.
struct Access {
  // "Authorization: Bearer ..." to the URL's host only (never to a host a redirect leads to).
  std::string bearer;
  // Non-empty: requests signed with AWS Signature Version 4 by libcurl, this being its
  // CURLOPT_AWS_SIGV4 parameter ("aws:amz:REGION:s3").
  std::string sigv4;
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // sent (and signed) as x-amz-security-token
};

struct Endpoint {
  std::string url;    // the http(s) URL requested (an http(s) URL as given may hold secrets)
  std::string shown;  // what errors name the file: shown_url of the URL as given
  Access access;
};

// Resolves `given`, a URL is_url accepts:
//   http(s)://...     itself, with the bearer token of options.token_variable;
//   s3://BUCKET/KEY   the object's URL at the endpoint (AWS's own, or AWS_ENDPOINT_URL[_S3]),
//                     path-style or virtual-hosted, signed when credentials are found
//                     (credentials.hpp), unsigned (anonymous) otherwise;
//   hf://[datasets/|spaces/]ORG/REPO/PATH[@REVISION] (or ORG/REPO@REVISION/PATH)
//                     HF_ENDPOINT (or https://huggingface.co)/ORG/REPO/resolve/REVISION/PATH,
//                     REVISION "main" when none is given, with the Hub's token as bearer.
// Key and path segments are percent-encoded. Throws onnxmap::Error (invalid_argument, naming
// the URL as shown_url shows it) for a malformed URL or credential file.
[[nodiscard]] Endpoint resolve_endpoint(std::string_view given, const RemoteOptions& options);

}  // namespace onnxmap::remote
