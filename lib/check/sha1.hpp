#pragma once
// SHA-1 (FIPS 180-4), incremental: what external_data `checksum` keys hold. Not for security;
// it verifies that data files are the ones the model was written with.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace onnxmap::detail {

class Sha1 {
 public:
  Sha1() noexcept;
  void update(std::span<const std::byte> bytes) noexcept;
  // The digest of everything given so far; the object must not be updated afterwards.
  [[nodiscard]] std::array<std::uint8_t, 20> finish() noexcept;
  // finish() as 40 lowercase hex digits.
  [[nodiscard]] std::string finish_hex();

 private:
  void compress(const std::uint8_t* block) noexcept;

  std::array<std::uint32_t, 5> state_;
  std::array<std::uint8_t, 64> block_{};
  std::size_t block_used_ = 0;
  std::uint64_t total_bytes_ = 0;
};

}  // namespace onnxmap::detail
