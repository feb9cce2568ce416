#include "check/sha1.hpp"

#include <openssl/evp.h>

#include <array>

#include "io/fault_guard.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::detail {

namespace {

[[noreturn]] void fail(const char* what) {
  throw Error(ErrorKind::io, std::string("libcrypto SHA-1: ") + what + " failed");
}

}  // namespace

void Sha1::Free::operator()(evp_md_ctx_st* context) const noexcept {
  EVP_MD_CTX_free(context);
}

Sha1::Sha1() : context_(EVP_MD_CTX_new()) {
  if (!context_) fail("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(context_.get(), EVP_sha1(), nullptr) != 1) fail("EVP_DigestInit_ex");
}

void Sha1::update(std::span<const std::byte> bytes) {
  int ok = 0;
  // The bytes may be a mapped file's: a fault (the file shrank) is an error, not a signal.
  guard_faults(
      bytes, [&]() noexcept { ok = EVP_DigestUpdate(context_.get(), bytes.data(), bytes.size()); });
  if (ok != 1) fail("EVP_DigestUpdate");
}

std::string Sha1::finish_hex() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(context_.get(), digest.data(), &length) != 1) fail("EVP_DigestFinal_ex");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4U];
    out += kHex[digest[i] & 0xFU];
  }
  return out;
}

std::string sha1_hex(std::span<const std::byte> bytes) {
  Sha1 sha;
  sha.update(bytes);
  return sha.finish_hex();
}

}  // namespace onnxmap::detail
