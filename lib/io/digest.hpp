#pragma once
// Digests of bytes, incremental: SHA-1 (what external data `checksum` keys hold), SHA-256 (what
// model-signing tools list) and XXH3-128 (a non-cryptographic hash at memory speed), for check,
// hash and verify. OpenSSL's libcrypto computes the SHA ones with the CPU's SHA instructions
// where there are some; libxxhash computes XXH3. Bytes of a mapped file are read under the fault
// guard: a file that shrank is an onnxmap::Error, not a signal.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "onnxmap/verify.hpp"

namespace onnxmap::detail {

class Digest {
 public:
  // Throws onnxmap::Error (io) when libcrypto cannot provide the algorithm (SHA-1 in a
  // FIPS-only configuration).
  explicit Digest(DigestAlgorithm algorithm);
  Digest(Digest&&) noexcept;
  Digest& operator=(Digest&&) noexcept;
  ~Digest();

  void update(std::span<const std::byte> bytes);
  // The digest of everything given so far as lowercase hex digits; the object must not be
  // updated afterwards.
  [[nodiscard]] std::string finish_hex();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The digest of `bytes` as lowercase hex digits.
[[nodiscard]] std::string digest_hex(DigestAlgorithm algorithm, std::span<const std::byte> bytes);

}  // namespace onnxmap::detail
