// What s3:// and hf:// URLs are requested as, the credentials they take, and shown_url: no
// server needed (tests/remote/cloud_test.py runs them against servers on loopback).

#include <gtest/gtest.h>
#include <stdlib.h>  // setenv, unsetenv

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "onnxmap/error.hpp"
#include "onnxmap/options.hpp"
#include "remote/credentials.hpp"
#include "remote/endpoint.hpp"

namespace onnxmap::remote {
namespace {

// Sets the variables for one test; the variables the resolution reads are all unset first and
// restored after (HOME points at an empty folder, so no user's ~/.aws or token is read).
class Environment : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kNames) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name,
                          value != nullptr ? std::optional<std::string>(value) : std::nullopt);
      ::unsetenv(name);
    }
    folder_ =
        std::filesystem::temp_directory_path() / ("onnxmap-endpoint-" + std::to_string(::getpid()));
    std::filesystem::create_directories(folder_);
    ::setenv("HOME", folder_.c_str(), 1);
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value)
        ::setenv(name, value->c_str(), 1);
      else
        ::unsetenv(name);
    }
    std::filesystem::remove_all(folder_);
  }
  std::filesystem::path write(const std::string& name, const std::string& text) {
    const std::filesystem::path path = folder_ / name;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path;
  }

  static constexpr const char* kNames[] = {"HOME",
                                           "AWS_ACCESS_KEY_ID",
                                           "AWS_SECRET_ACCESS_KEY",
                                           "AWS_SESSION_TOKEN",
                                           "AWS_PROFILE",
                                           "AWS_REGION",
                                           "AWS_DEFAULT_REGION",
                                           "AWS_ENDPOINT_URL",
                                           "AWS_ENDPOINT_URL_S3",
                                           "AWS_SHARED_CREDENTIALS_FILE",
                                           "AWS_CONFIG_FILE",
                                           "ONNXMAP_S3_ADDRESSING_STYLE",
                                           "HF_TOKEN",
                                           "HUGGING_FACE_HUB_TOKEN",
                                           "HF_TOKEN_PATH",
                                           "HF_HOME",
                                           "HF_ENDPOINT",
                                           "XDG_CACHE_HOME",
                                           "ONNXMAP_HTTP_TOKEN"};
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
  std::filesystem::path folder_;
};

std::string url_of(std::string_view given) {
  return resolve_endpoint(given, {}).url;
}

TEST(ShownUrl, DropsUserInformationAndQuery) {
  EXPECT_EQ(shown_url("https://user:pw@host:8/a/b.onnx?X-Amz-Signature=s#f"),
            "https://host:8/a/b.onnx");
  EXPECT_EQ(shown_url("http://host/a@b.onnx"), "http://host/a@b.onnx");
  EXPECT_EQ(shown_url("s3://bucket/k.onnx"), "s3://bucket/k.onnx");
  EXPECT_EQ(shown_url("hf://org/repo/m.onnx@main"), "hf://org/repo/m.onnx@main");
  EXPECT_EQ(shown_url("ftp://u:p@h/x"), "ftp://h/x");
  EXPECT_EQ(shown_url("models/a?b.onnx"), "models/a?b.onnx");  // a file name, untouched
  EXPECT_EQ(shown_url("http://u:p@@h/x"), "http://h/x");
  EXPECT_TRUE(is_url("s3://b/k") && is_url("HF://o/r/p") && !is_url("s3://") && !is_url("hf:/x"));
}

TEST_F(Environment, S3OnAwsIsVirtualHostedWhereTheBucketIsAHostLabel) {
  EXPECT_EQ(url_of("s3://my-bucket/a b/m.onnx"),
            "https://my-bucket.s3.us-east-1.amazonaws.com/a%20b/m.onnx");
  ::setenv("AWS_REGION", "eu-west-3", 1);
  EXPECT_EQ(url_of("s3://my.bucket/m.onnx"), "https://s3.eu-west-3.amazonaws.com/my.bucket/m.onnx");
  ::setenv("ONNXMAP_S3_ADDRESSING_STYLE", "path", 1);
  EXPECT_EQ(url_of("s3://bucket/m.onnx"), "https://s3.eu-west-3.amazonaws.com/bucket/m.onnx");
  ::setenv("ONNXMAP_S3_ADDRESSING_STYLE", "sideways", 1);
  EXPECT_THROW((void)url_of("s3://bucket/m.onnx"), Error);
}

TEST_F(Environment, S3EndpointIsPathStyleUnlessVirtualIsAsked) {
  ::setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000/", 1);
  EXPECT_EQ(url_of("s3://b/k/m.onnx"), "http://127.0.0.1:9000/b/k/m.onnx");
  ::setenv("AWS_ENDPOINT_URL_S3", "https://minio.example:9000/prefix", 1);
  EXPECT_EQ(url_of("s3://b/m.onnx"), "https://minio.example:9000/prefix/b/m.onnx");
  ::setenv("ONNXMAP_S3_ADDRESSING_STYLE", "virtual", 1);
  EXPECT_EQ(url_of("s3://b/m.onnx"), "https://b.minio.example:9000/prefix/m.onnx");
  ::setenv("AWS_ENDPOINT_URL_S3", "https://k:secret@minio.example", 1);
  try {
    (void)url_of("s3://b/m.onnx");
    FAIL() << "an endpoint with user information is refused";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos) << e.what();
  }
}

TEST_F(Environment, S3CredentialsInTheStandardOrder) {
  write(".aws/credentials",
        "[default]\naws_access_key_id = FROMFILE\naws_secret_access_key = s1\n"
        "[other]\naws_access_key_id = OTHER\naws_secret_access_key = s2\n"
        "aws_session_token = t2\n");
  write(".aws/config",
        "[default]\nregion = ap-east-1\n[profile other]\nregion = sa-east-1\n"
        "s3 =\n  addressing_style = virtual\n");
  AwsSettings aws = aws_settings();
  EXPECT_EQ(aws.access_key_id, "FROMFILE");
  EXPECT_EQ(aws.region, "ap-east-1");
  ::setenv("AWS_PROFILE", "other", 1);
  aws = aws_settings();
  EXPECT_EQ(aws.access_key_id, "OTHER");
  EXPECT_EQ(aws.session_token, "t2");
  EXPECT_EQ(aws.region, "sa-east-1");
  EXPECT_EQ(aws.addressing_style, "virtual");
  ::setenv("AWS_ACCESS_KEY_ID", "FROMENV", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "s3", 1);
  ::setenv("AWS_DEFAULT_REGION", "us-west-2", 1);
  aws = aws_settings();
  EXPECT_EQ(aws.access_key_id, "FROMENV");
  EXPECT_EQ(aws.session_token, "");
  EXPECT_EQ(aws.region, "us-west-2");
  const Endpoint signed_endpoint = resolve_endpoint("s3://bucket/m.onnx", {});
  EXPECT_EQ(signed_endpoint.access.sigv4, "aws:amz:us-west-2:s3");
  EXPECT_EQ(signed_endpoint.access.secret_access_key, "s3");
  ::setenv("AWS_PROFILE", "nobody", 1);
  EXPECT_THROW((void)aws_settings(), Error);
}

TEST_F(Environment, S3WithoutCredentialsIsAnonymous) {
  const Endpoint endpoint = resolve_endpoint("s3://bucket/m.onnx", {});
  EXPECT_TRUE(endpoint.access.sigv4.empty() && endpoint.access.bearer.empty());
  ::setenv("AWS_ACCESS_KEY_ID", "ONLYKEY", 1);
  EXPECT_THROW((void)resolve_endpoint("s3://bucket/m.onnx", {}), Error);
}

TEST_F(Environment, HubUrls) {
  EXPECT_EQ(url_of("hf://org/repo/dir/m.onnx"),
            "https://huggingface.co/org/repo/resolve/main/dir/m.onnx");
  EXPECT_EQ(url_of("hf://org/repo/m.onnx@v1.0"),
            "https://huggingface.co/org/repo/resolve/v1.0/m.onnx");
  EXPECT_EQ(url_of("hf://org/repo@refs/pr/1/m.onnx"),
            "https://huggingface.co/org/repo/resolve/refs/pr/1/m.onnx");
  EXPECT_EQ(url_of("hf://datasets/org/data/x.onnx"),
            "https://huggingface.co/datasets/org/data/resolve/main/x.onnx");
  ::setenv("HF_ENDPOINT", "http://127.0.0.1:8080/mirror/", 1);
  EXPECT_EQ(url_of("hf://org/repo/m.onnx"),
            "http://127.0.0.1:8080/mirror/org/repo/resolve/main/m.onnx");
  for (const char* bad :
       {"hf://org", "hf://org/repo", "hf://org/repo/", "hf:///repo/m.onnx", "hf://org//m.onnx",
        "hf://org/repo/m.onnx@", "hf://org/repo/a/../m.onnx"}) {
    EXPECT_THROW((void)url_of(bad), Error) << bad;
  }
}

TEST_F(Environment, HubTokenFromTheVariableOrTheTokenFile) {
  EXPECT_EQ(hub_token(), "");
  write(".cache/huggingface/token", "  hf_fromhome\n");
  EXPECT_EQ(hub_token(), "hf_fromhome");
  ::setenv("HF_HOME", (folder_ / "hfhome").c_str(), 1);
  EXPECT_EQ(hub_token(), "");
  write("hfhome/token", "hf_fromhfhome\n");
  EXPECT_EQ(hub_token(), "hf_fromhfhome");
  ::setenv("HF_TOKEN_PATH", write("elsewhere", "hf_frompath").c_str(), 1);
  EXPECT_EQ(hub_token(), "hf_frompath");
  ::setenv("HF_TOKEN", "hf_fromenv", 1);
  EXPECT_EQ(resolve_endpoint("hf://o/r/m.onnx", {}).access.bearer, "hf_fromenv");
  EXPECT_EQ(resolve_endpoint("http://h/m.onnx", {}).access.bearer, "");  // not to other hosts
}

TEST(ParseIni, SectionsKeysAndErrorsWithoutTheLine) {
  const IniFile ini =
      parse_ini("# comment\n; another\n[default]\nkey = v=1\n\n[profile x]\na=b\n", "f");
  EXPECT_EQ(ini.at("default").at("key"), "v=1");
  EXPECT_EQ(ini.at("profile x").at("a"), "b");
  try {
    (void)parse_ini("[s]\nsecret-text-without-equals\n", "creds");
    FAIL() << "a line without '=' is an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), "creds");
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("secret-text"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)parse_ini("[s]\na=1\na=2\n", "f"), Error);
  EXPECT_THROW((void)parse_ini("[s\n", "f"), Error);
}

}  // namespace
}  // namespace onnxmap::remote
