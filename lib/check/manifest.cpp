// Manifests (verify.hpp): onnxmap's JSON both ways (docs/verify.md), the model-signing format's
// signed payload read as per-file SHA-256 digests, and verify_model's comparison.

#include <openssl/evp.h>

#include <map>
#include <nlohmann/json.hpp>

#include "onnxmap/verify.hpp"

namespace onnxmap {

namespace {

using Json = nlohmann::json;

constexpr std::string_view kFormat = "onnxmap-manifest/1";

[[noreturn]] void fail(const std::string& name, const std::string& why) {
  throw Error(ErrorKind::invalid_argument, "not a manifest: " + why, Error::kNoOffset, {}, name);
}

std::string text_of(const Json& object, const char* key, const std::string& name) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) fail(name, std::string("no string \"") + key + "\"");
  return it->get<std::string>();
}

std::uint64_t number_of(const Json& object, const char* key, const std::string& name) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_unsigned()) {
    fail(name, std::string("no non-negative integer \"") + key + "\"");
  }
  return it->get<std::uint64_t>();
}

// A tensor's "slices" (TensorDigest::rows), where it has some: [{"rows": [BEGIN, END],
// "digest"}], BEGIN < END.
std::vector<TensorDigest::Rows> slices_of(const Json& tensor, const std::string& name) {
  std::vector<TensorDigest::Rows> out;
  const auto slices = tensor.find("slices");
  if (slices == tensor.end()) return out;
  if (!slices->is_array()) fail(name, "\"slices\" that is not an array");
  for (const Json& s : *slices) {
    if (!s.is_object()) fail(name, "a slice that is not an object");
    const auto rows = s.find("rows");
    if (rows == s.end() || !rows->is_array() || rows->size() != 2 ||
        !(*rows)[0].is_number_unsigned() || !(*rows)[1].is_number_unsigned() ||
        (*rows)[0].get<std::uint64_t>() >= (*rows)[1].get<std::uint64_t>()) {
      fail(name, "a slice whose \"rows\" are not [BEGIN, END] with BEGIN < END");
    }
    out.push_back({(*rows)[0].get<std::uint64_t>(), (*rows)[1].get<std::uint64_t>(),
                   text_of(s, "digest", name)});
  }
  return out;
}

Manifest from_onnxmap(const Json& json, const std::string& name) {
  Manifest manifest;
  const auto algorithm = parse_digest_algorithm(text_of(json, "algorithm", name));
  if (!algorithm || *algorithm == DigestAlgorithm::sha1) {
    fail(name, "the algorithm is sha256 or xxh3-128");
  }
  manifest.algorithm = *algorithm;
  const auto files = json.find("files"), tensors = json.find("tensors");
  if (files == json.end() || !files->is_array() || tensors == json.end() || !tensors->is_array()) {
    fail(name, "no \"files\" and \"tensors\" arrays");
  }
  for (const Json& f : *files) {
    if (!f.is_object()) fail(name, "a file that is not an object");
    manifest.files.push_back(
        {text_of(f, "file", name), number_of(f, "size", name), text_of(f, "digest", name)});
  }
  for (const Json& t : *tensors) {
    if (!t.is_object()) fail(name, "a tensor that is not an object");
    manifest.tensors.push_back({text_of(t, "name", name), text_of(t, "path", name),
                                text_of(t, "file", name), number_of(t, "offset", name),
                                number_of(t, "length", name), text_of(t, "digest", name),
                                slices_of(t, name)});
  }
  return manifest;
}

// The in-toto statement a model-signing tool signs, given as it is, in a DSSE envelope, or in
// a Sigstore bundle (its dsseEnvelope), the payload base64.
Json signed_statement(const Json& json, const std::string& name) {
  const Json* envelope = json.contains("dsseEnvelope") ? &json["dsseEnvelope"] : &json;
  if (!envelope->is_object() || !envelope->contains("payload")) return json;
  const std::string payload = text_of(*envelope, "payload", name);
  std::string decoded(payload.size() / 4 * 3 + 3, '\0');
  const int length = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                                     reinterpret_cast<const unsigned char*>(payload.data()),
                                     static_cast<int>(payload.size()));
  if (length < 0) fail(name, "the envelope's payload is not base64");
  decoded.resize(static_cast<std::size_t>(length));
  while (!decoded.empty() && decoded.back() == '\0') decoded.pop_back();  // base64's padding
  const Json statement = Json::parse(decoded, nullptr, false);
  if (statement.is_discarded()) fail(name, "the envelope's payload is not JSON");
  return statement;
}

// The model-signing format's resources, one per file ("files" serialization).
Manifest from_signing(const Json& statement, const std::string& name) {
  const auto predicate = statement.find("predicate");
  if (predicate == statement.end() || !predicate->is_object() ||
      !predicate->contains("resources") || !(*predicate)["resources"].is_array()) {
    fail(name, "an in-toto statement without predicate.resources");
  }
  Manifest manifest;
  manifest.signed_files_only = true;
  for (const Json& r : (*predicate)["resources"]) {
    if (!r.is_object()) fail(name, "a resource that is not an object");
    const std::string algorithm = text_of(r, "algorithm", name);
    if (algorithm != "sha256") {
      fail(name, "resource '" + text_of(r, "name", name) + "' is hashed with " + algorithm +
                     "; onnxmap verifies the \"files\" serialization's sha256 (sign with it)");
    }
    manifest.files.push_back({text_of(r, "name", name), 0, text_of(r, "digest", name)});
  }
  return manifest;
}

// The manifest's entry for file `file` of the model: the one of its name, or for a signing
// payload one whose name ends with "/" and it; null when there is none.
const FileDigest* listed(const Manifest& manifest, const std::string& file) {
  for (const FileDigest& f : manifest.files) {
    if (f.file == file) return &f;
  }
  if (!manifest.signed_files_only) return nullptr;
  for (const FileDigest& f : manifest.files) {
    if (f.file.size() > file.size() && f.file.ends_with("/" + file)) return &f;
  }
  return nullptr;
}

template <class Add>
void compare_files(const Manifest& found, const Manifest& manifest, VerifyReport& report,
                   const Add& add) {
  std::map<std::string, bool> read;  // the manifest's files the model reads
  for (const FileDigest& got : found.files) {
    const FileDigest* want = listed(manifest, got.file);
    if (want == nullptr) {
      add("file", got.file, got.file, "", got.digest, "is not in the manifest");
      continue;
    }
    read[want->file] = true;
    ++report.files;
    report.bytes += got.size;
    if (!manifest.signed_files_only && want->size != got.size) {
      add("file", got.file, got.file, std::to_string(want->size), std::to_string(got.size),
          "is " + std::to_string(got.size) + " bytes, the manifest's " +
              std::to_string(want->size));
    } else if (want->digest != got.digest) {
      add("file", got.file, got.file, want->digest, got.digest,
          "digest " + got.digest + ", the manifest's " + want->digest);
    }
  }
  for (const FileDigest& want : manifest.files) {
    if (!manifest.signed_files_only && !read.contains(want.file)) {
      add("file", want.file, want.file, want.digest, "", "the model does not read this file");
    }
  }
}

}  // namespace

std::string_view to_string(DigestAlgorithm algorithm) noexcept {
  switch (algorithm) {
    case DigestAlgorithm::sha256: return "sha256";
    case DigestAlgorithm::xxh3_128: return "xxh3-128";
    case DigestAlgorithm::sha1: return "sha1";
  }
  return "sha256";
}

std::optional<DigestAlgorithm> parse_digest_algorithm(std::string_view name) noexcept {
  for (const auto a : {DigestAlgorithm::sha256, DigestAlgorithm::xxh3_128, DigestAlgorithm::sha1}) {
    if (to_string(a) == name) return a;
  }
  return std::nullopt;
}

std::string to_json(const Manifest& manifest) {
  using Ordered = nlohmann::ordered_json;  // keys in the order docs/verify.md gives them
  Ordered files = Ordered::array(), tensors = Ordered::array();
  for (const FileDigest& f : manifest.files) {
    files.push_back({{"file", f.file}, {"size", f.size}, {"digest", f.digest}});
  }
  for (const TensorDigest& t : manifest.tensors) {
    Ordered entry = {{"name", t.name},     {"path", t.path},     {"file", t.file},
                     {"offset", t.offset}, {"length", t.length}, {"digest", t.digest}};
    if (!t.rows.empty()) {
      Ordered slices = Ordered::array();
      for (const TensorDigest::Rows& s : t.rows) {
        slices.push_back({{"rows", {s.row_begin, s.row_end}}, {"digest", s.digest}});
      }
      entry["slices"] = slices;
    }
    tensors.push_back(entry);
  }
  const Ordered out = {{"format", kFormat},
                       {"algorithm", to_string(manifest.algorithm)},
                       {"files", files},
                       {"tensors", tensors}};
  return out.dump(1) + "\n";
}

Manifest parse_manifest(std::string_view text, const std::string& name) {
  const Json json = Json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object()) fail(name, "not a JSON object");
  if (json.contains("format")) {
    if (json["format"] != kFormat) fail(name, "format is not " + std::string(kFormat));
    return from_onnxmap(json, name);
  }
  return from_signing(signed_statement(json, name), name);
}

VerifyReport verify_model(const Model& model, const Manifest& manifest,
                          const HashOptions& options) {
  HashOptions with = options;
  with.algorithm = manifest.algorithm;
  const Manifest found = hash_model(model, with);
  VerifyReport report;
  const auto add = [&](std::string what, std::string name, std::string file, std::string expected,
                       std::string actual, std::string detail) {
    report.mismatches.push_back({std::move(what), std::move(name), std::move(file),
                                 std::move(expected), std::move(actual), std::move(detail)});
  };
  compare_files(found, manifest, report, add);
  std::map<std::string, const TensorDigest*> tensors;  // by path
  for (const TensorDigest& t : found.tensors) tensors[t.path] = &t;
  for (const TensorDigest& want : manifest.tensors) {
    const auto it = tensors.find(want.path);
    if (it == tensors.end()) {
      add("tensor", want.name, want.file, want.digest, "",
          "the model has no stored tensor at " + want.path);
      continue;
    }
    const TensorDigest& got = *it->second;
    tensors.erase(it);
    ++report.tensors;
    const auto place = [](const TensorDigest& t) {
      return t.file + " at " + std::to_string(t.offset) + " (" + std::to_string(t.length) +
             " bytes)";
    };
    if (got.file != want.file || got.offset != want.offset || got.length != want.length) {
      add("tensor", want.name, got.file, place(want), place(got),
          "lies in " + place(got) + ", the manifest's in " + place(want));
    } else if (got.digest != want.digest) {
      add("tensor", want.name, got.file, want.digest, got.digest,
          "digest " + got.digest + ", the manifest's " + want.digest);
    }
  }
  for (const auto& [path, got] : tensors) {
    if (manifest.signed_files_only) break;  // its files' digests cover the tensors
    add("tensor", got->name, got->file, "", got->digest, "is not in the manifest");
  }
  return report;
}

}  // namespace onnxmap
