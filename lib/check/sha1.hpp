#pragma once
// SHA-1, incremental: what external_data `checksum` keys hold. Not for security; it verifies
// that data files are the ones the model was written with. OpenSSL's libcrypto computes it,
// with the CPU's SHA instructions where there are some.

#include <cstddef>
#include <memory>
#include <span>
#include <string>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX, kept out of this header

namespace onnxmap::detail {

class Sha1 {
 public:
  // Throws onnxmap::Error (io) when libcrypto cannot provide SHA-1 (a FIPS-only configuration).
  Sha1();
  void update(std::span<const std::byte> bytes);
  // The digest of everything given so far as 40 lowercase hex digits; the object must not be
  // updated afterwards.
  [[nodiscard]] std::string finish_hex();

 private:
  struct Free {
    void operator()(evp_md_ctx_st* context) const noexcept;
  };
  std::unique_ptr<evp_md_ctx_st, Free> context_;
};

// The SHA-1 of `bytes` as 40 lowercase hex digits.
[[nodiscard]] std::string sha1_hex(std::span<const std::byte> bytes);

}  // namespace onnxmap::detail
