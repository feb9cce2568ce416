#include "check/sha1.hpp"

#include <bit>
#include <cstring>

#include "onnxmap/check.hpp"

namespace onnxmap::detail {

namespace {

std::uint32_t load_be32(const std::uint8_t* p) noexcept {
  return (std::uint32_t{p[0]} << 24U) | (std::uint32_t{p[1]} << 16U) | (std::uint32_t{p[2]} << 8U) |
         std::uint32_t{p[3]};
}

}  // namespace

Sha1::Sha1() noexcept : state_{0x67452301U, 0xEFCDAB89U, 0x98BADCFEU, 0x10325476U, 0xC3D2E1F0U} {}

void Sha1::compress(const std::uint8_t* block) noexcept {
  std::array<std::uint32_t, 80> w{};
  for (std::size_t i = 0; i < 16; ++i) w[i] = load_be32(block + 4 * i);
  for (std::size_t i = 16; i < 80; ++i) {
    w[i] = std::rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  }
  std::uint32_t a = state_[0];
  std::uint32_t b = state_[1];
  std::uint32_t c = state_[2];
  std::uint32_t d = state_[3];
  std::uint32_t e = state_[4];
  for (std::size_t i = 0; i < 80; ++i) {
    std::uint32_t f = 0;
    std::uint32_t k = 0;
    if (i < 20) {
      f = (b & c) | (~b & d);
      k = 0x5A827999U;
    } else if (i < 40) {
      f = b ^ c ^ d;
      k = 0x6ED9EBA1U;
    } else if (i < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8F1BBCDCU;
    } else {
      f = b ^ c ^ d;
      k = 0xCA62C1D6U;
    }
    const std::uint32_t next = std::rotl(a, 5) + f + e + k + w[i];
    e = d;
    d = c;
    c = std::rotl(b, 30);
    b = a;
    a = next;
  }
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
  state_[4] += e;
}

void Sha1::update(std::span<const std::byte> bytes) noexcept {
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  std::size_t left = bytes.size();
  total_bytes_ += left;
  if (block_used_ > 0) {
    const std::size_t take = std::min(left, block_.size() - block_used_);
    std::memcpy(block_.data() + block_used_, p, take);
    block_used_ += take;
    p += take;
    left -= take;
    if (block_used_ < block_.size()) return;
    compress(block_.data());
    block_used_ = 0;
  }
  for (; left >= 64; p += 64, left -= 64) compress(p);
  if (left > 0) std::memcpy(block_.data(), p, left);
  block_used_ = left;
}

std::array<std::uint8_t, 20> Sha1::finish() noexcept {
  const std::uint64_t bits = total_bytes_ * 8;
  // Padding: a 1 bit, zeros up to 56 bytes into a block, then the length in bits, big-endian.
  block_[block_used_++] = 0x80;
  if (block_used_ > 56) {
    std::memset(block_.data() + block_used_, 0, block_.size() - block_used_);
    compress(block_.data());
    block_used_ = 0;
  }
  std::memset(block_.data() + block_used_, 0, 56 - block_used_);
  for (std::size_t i = 0; i < 8; ++i)
    block_[56 + i] = static_cast<std::uint8_t>(bits >> (56 - 8 * i));
  compress(block_.data());
  std::array<std::uint8_t, 20> digest{};
  for (std::size_t i = 0; i < 5; ++i) {
    for (std::size_t j = 0; j < 4; ++j) {
      digest[4 * i + j] = static_cast<std::uint8_t>(state_[i] >> (24 - 8 * j));
    }
  }
  return digest;
}

std::string Sha1::finish_hex() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const std::uint8_t byte : finish()) {
    out += kHex[byte >> 4U];
    out += kHex[byte & 0xFU];
  }
  return out;
}

}  // namespace onnxmap::detail

namespace onnxmap {

std::string sha1_hex(std::span<const std::byte> bytes) {
  detail::Sha1 sha;
  sha.update(bytes);
  return sha.finish_hex();
}

}  // namespace onnxmap
