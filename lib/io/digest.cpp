#include "io/digest.hpp"

#include <openssl/evp.h>
#include <xxhash.h>

#include <array>

#include "io/fault_guard.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::detail {

namespace {

[[noreturn]] void fail(DigestAlgorithm algorithm, const char* what) {
  throw Error(ErrorKind::io, std::string(to_string(algorithm)) + " digest: " + what + " failed");
}

std::string hex(std::span<const unsigned char> digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const unsigned char byte : digest) {
    out += kHex[byte >> 4U];
    out += kHex[byte & 0xFU];
  }
  return out;
}

}  // namespace

struct Digest::State {
  DigestAlgorithm algorithm;
  EVP_MD_CTX* evp = nullptr;     // SHA-1, SHA-256
  XXH3_state_t* xxh3 = nullptr;  // XXH3-128

  explicit State(DigestAlgorithm a) : algorithm(a) {
    if (a == DigestAlgorithm::xxh3_128) {
      xxh3 = XXH3_createState();
      if (xxh3 == nullptr || XXH3_128bits_reset(xxh3) != XXH_OK) fail(a, "XXH3_128bits_reset");
      return;
    }
    evp = EVP_MD_CTX_new();
    if (evp == nullptr) fail(a, "EVP_MD_CTX_new");
    const EVP_MD* md = a == DigestAlgorithm::sha1 ? EVP_sha1() : EVP_sha256();
    if (EVP_DigestInit_ex(evp, md, nullptr) != 1) fail(a, "EVP_DigestInit_ex");
  }
  ~State() {
    EVP_MD_CTX_free(evp);
    XXH3_freeState(xxh3);
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
};

Digest::Digest(DigestAlgorithm algorithm) : state_(std::make_unique<State>(algorithm)) {}
Digest::Digest(Digest&&) noexcept = default;
Digest& Digest::operator=(Digest&&) noexcept = default;
Digest::~Digest() = default;

void Digest::update(std::span<const std::byte> bytes) {
  bool ok = false;
  State& s = *state_;
  // The bytes may be a mapped file's: a fault (the file shrank) is an error, not a signal.
  guard_faults(bytes, [&]() noexcept {
    ok = s.xxh3 != nullptr ? XXH3_128bits_update(s.xxh3, bytes.data(), bytes.size()) == XXH_OK
                           : EVP_DigestUpdate(s.evp, bytes.data(), bytes.size()) == 1;
  });
  if (!ok) fail(s.algorithm, "update");
}

std::string Digest::finish_hex() {
  State& s = *state_;
  if (s.xxh3 != nullptr) {
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(s.xxh3));
    return hex(std::span(canonical.digest));
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(s.evp, digest.data(), &length) != 1) fail(s.algorithm, "final");
  return hex(std::span(digest).first(length));
}

std::string digest_hex(DigestAlgorithm algorithm, std::span<const std::byte> bytes) {
  Digest digest(algorithm);
  digest.update(bytes);
  return digest.finish_hex();
}

}  // namespace onnxmap::detail
