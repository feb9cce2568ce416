#include "remote/credentials.hpp"

#include <boost/property_tree/ini_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

#include "onnxmap/error.hpp"

namespace onnxmap::remote {

namespace {

namespace pt = boost::property_tree;

// The variable's value; empty when it is unset.
std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::filesystem::path home() {
  const std::string value = env("HOME");
  return value.empty() ? std::filesystem::path() : std::filesystem::path(value);
}

// The file's text; nullopt when it does not exist. Throws onnxmap::Error (io) when it exists
// but cannot be read.
std::optional<std::string> read_text(const std::filesystem::path& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) {
    throw Error(ErrorKind::io, "cannot read the file", Error::kNoOffset, {}, path.string());
  }
  return text.str();
}

std::optional<IniFile> read_ini(const std::filesystem::path& path) {
  const auto text = read_text(path);
  if (!text) return std::nullopt;
  return parse_ini(*text, path);
}

const std::map<std::string, std::string>* section(const std::optional<IniFile>& file,
                                                  const std::string& name) {
  if (!file) return nullptr;
  const auto found = file->find(name);
  return found == file->end() ? nullptr : &found->second;
}

std::string value(const std::map<std::string, std::string>* keys, const std::string& key) {
  if (keys == nullptr) return "";
  const auto found = keys->find(key);
  return found == keys->end() ? "" : found->second;
}

// Fills the credentials from `keys` (a profile's section) when it names an access key.
bool take_keys(AwsSettings& out, const std::map<std::string, std::string>* keys,
               const std::filesystem::path& file, const std::string& profile) {
  out.access_key_id = value(keys, "aws_access_key_id");
  if (out.access_key_id.empty()) return false;
  out.secret_access_key = value(keys, "aws_secret_access_key");
  out.session_token = value(keys, "aws_session_token");
  if (out.secret_access_key.empty()) {
    throw Error(ErrorKind::invalid_argument,
                "profile '" + profile + "' has aws_access_key_id but no aws_secret_access_key",
                Error::kNoOffset, {}, file.string());
  }
  return true;
}

}  // namespace

IniFile parse_ini(const std::string& text, const std::filesystem::path& path) {
  std::istringstream in(text);
  pt::ptree tree;
  try {
    pt::ini_parser::read_ini(in, tree);
  } catch (const pt::ini_parser_error& e) {
    // message() is Boost's description of the problem; the line's text is never shown.
    throw Error(ErrorKind::invalid_argument,
                "line " + std::to_string(e.line()) + ": " + e.message() +
                    " (an INI file: [section] and key = value lines)",
                Error::kNoOffset, {}, path.string());
  }
  IniFile out;
  for (const auto& [name, child] : tree) {
    if (child.empty()) continue;  // a key outside any section: unused
    auto& keys = out[name];
    for (const auto& [key, leaf] : child) keys[key] = leaf.data();
  }
  return out;
}

AwsSettings aws_settings() {
  AwsSettings out;
  const std::string profile_env = env("AWS_PROFILE");
  const std::string profile = profile_env.empty() ? "default" : profile_env;
  const std::string credentials_env = env("AWS_SHARED_CREDENTIALS_FILE");
  const std::string config_env = env("AWS_CONFIG_FILE");
  const std::filesystem::path credentials_path = !credentials_env.empty()
                                                     ? std::filesystem::path(credentials_env)
                                                 : home().empty() ? std::filesystem::path()
                                                                  : home() / ".aws" / "credentials";
  const std::filesystem::path config_path = !config_env.empty() ? std::filesystem::path(config_env)
                                            : home().empty()    ? std::filesystem::path()
                                                                : home() / ".aws" / "config";
  const auto credentials = read_ini(credentials_path);
  const auto config = read_ini(config_path);
  const auto* in_credentials = section(credentials, profile);
  const auto* in_config = section(config, profile == "default" ? profile : "profile " + profile);
  if (!profile_env.empty() && in_credentials == nullptr && in_config == nullptr) {
    throw Error(ErrorKind::invalid_argument, "AWS_PROFILE names profile '" + profile +
                                                 "', which neither " + credentials_path.string() +
                                                 " nor " + config_path.string() + " holds");
  }
  out.access_key_id = env("AWS_ACCESS_KEY_ID");
  out.secret_access_key = env("AWS_SECRET_ACCESS_KEY");
  out.session_token = env("AWS_SESSION_TOKEN");
  if (!out.access_key_id.empty() && out.secret_access_key.empty()) {
    throw Error(ErrorKind::invalid_argument,
                "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
  }
  if (out.access_key_id.empty() && !take_keys(out, in_credentials, credentials_path, profile)) {
    (void)take_keys(out, in_config, config_path, profile);
  }
  for (const std::string& region :
       {env("AWS_REGION"), env("AWS_DEFAULT_REGION"), value(in_config, "region")}) {
    if (out.region.empty()) out.region = region;
  }
  if (out.region.empty()) out.region = "us-east-1";
  for (const std::string& endpoint :
       {env("AWS_ENDPOINT_URL_S3"), env("AWS_ENDPOINT_URL"), value(in_config, "endpoint_url")}) {
    if (out.endpoint_url.empty()) out.endpoint_url = endpoint;
  }
  out.addressing_style = env("ONNXMAP_S3_ADDRESSING_STYLE");
  if (out.addressing_style.empty()) out.addressing_style = value(in_config, "addressing_style");
  return out;
}

std::string hub_token() {
  for (const char* name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}) {
    if (std::string token = env(name); !token.empty()) return token;
  }
  std::filesystem::path path = env("HF_TOKEN_PATH");
  if (path.empty() && !env("HF_HOME").empty())
    path = std::filesystem::path(env("HF_HOME")) / "token";
  if (path.empty() && !env("XDG_CACHE_HOME").empty()) {
    path = std::filesystem::path(env("XDG_CACHE_HOME")) / "huggingface" / "token";
  }
  if (path.empty() && !home().empty()) path = home() / ".cache" / "huggingface" / "token";
  std::string token = read_text(path).value_or("");
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!token.empty() && space(token.back())) token.pop_back();
  std::size_t first = 0;
  while (first < token.size() && space(token[first])) ++first;
  return token.substr(first);
}

}  // namespace onnxmap::remote
