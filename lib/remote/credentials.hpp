#pragma once
// Where s3:// and hf:// URLs find their credentials: the environment and the files the AWS and
// Hugging Face tools write (docs/remote.md). Secrets read here go to libcurl only; no message
// shows them.

#include <filesystem>
#include <map>
#include <string>

namespace onnxmap::remote {

// An INI file as the AWS shared files write it: section -> key -> value. Lines may be indented
// (a nested block such as "s3 =" then "  addressing_style = path" adds its keys to the
// section); '#' and ';' start a comment line.
using IniFile = std::map<std::string, std::map<std::string, std::string>>;

// Parses `text` (read from `path`, which names it in errors). Throws onnxmap::Error
// (invalid_argument, with the file and the line's number, never its text) for a line that is
// neither a section, a key = value, nor a comment, and for a key given twice in a section.
[[nodiscard]] IniFile parse_ini(const std::string& text, const std::filesystem::path& path);

// What an s3:// URL is read with: the standard AWS settings, resolved in the standard order.
struct AwsSettings {
  // Empty access_key_id: no credentials were found, requests go unsigned (public buckets).
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  // AWS_REGION, AWS_DEFAULT_REGION, the profile's region; "us-east-1" when none is set.
  std::string region;
  // AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's endpoint_url; empty: AWS's own.
  std::string endpoint_url;
  // ONNXMAP_S3_ADDRESSING_STYLE, the profile's s3 addressing_style: "path", "virtual" or "auto".
  std::string addressing_style;
};

// Credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN; else from the
// profile (AWS_PROFILE, or "default") of the credentials file (AWS_SHARED_CREDENTIALS_FILE, or
// ~/.aws/credentials), then of the config file (AWS_CONFIG_FILE, or ~/.aws/config, where a
// profile's section is "[profile NAME]"). Throws onnxmap::Error (invalid_argument) for a
// malformed file, a key without its secret, or an AWS_PROFILE that no file names.
[[nodiscard]] AwsSettings aws_settings();

// The Hugging Face token: HF_TOKEN (or the older HUGGING_FACE_HUB_TOKEN); else the file the Hub's
// own tools write (HF_TOKEN_PATH, or HF_HOME/token, or ~/.cache/huggingface/token), trimmed.
// Empty when there is none.
[[nodiscard]] std::string hub_token();

}  // namespace onnxmap::remote
