#include "onnxmap/sub_byte.hpp"

#include <cstdint>
#include <string>

#include "io/fault_guard.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap {

namespace {

bool is_signed(DataType type) {
  return type == DataType::int4 || type == DataType::int2;
}

// Bits per element of a sub-byte type; an error for any other type.
std::uint32_t sub_byte_bits(DataType type) {
  const auto found = traits(type);
  if (!found || found->bits == 0 || found->bits >= 8) {
    throw Error(ErrorKind::invalid_argument,
                to_string(type) +
                    " is not a sub-byte type (UINT4, INT4, FLOAT4E2M1, UINT2 "
                    "or INT2): it has nothing to unpack");
  }
  return found->bits;
}

}  // namespace

void unpack_sub_byte(DataType type, std::span<const std::byte> packed, std::span<std::byte> out) {
  const std::uint32_t bits = sub_byte_bits(type);
  const std::uint32_t per_byte = 8 / bits;
  const std::uint64_t needed = (std::uint64_t{out.size()} + per_byte - 1) / per_byte;
  if (packed.size() < needed) {
    throw Error(ErrorKind::invalid_argument, std::to_string(out.size()) + " " + to_string(type) +
                                                 " elements need " + std::to_string(needed) +
                                                 " bytes, but " + std::to_string(packed.size()) +
                                                 " were given");
  }
  const std::uint32_t mask = (1U << bits) - 1;
  const std::uint32_t sign = 1U << (bits - 1);
  const bool extend = is_signed(type);
  detail::guard_faults(packed.first(static_cast<std::size_t>(needed)), [&]() noexcept {
    for (std::size_t i = 0; i < out.size(); ++i) {
      const auto byte = static_cast<std::uint32_t>(packed[i / per_byte]);
      std::uint32_t v = (byte >> (bits * (i % per_byte))) & mask;
      if (extend && (v & sign) != 0) v |= ~mask;
      out[i] = static_cast<std::byte>(v & 0xFFU);
    }
  });
}

}  // namespace onnxmap
