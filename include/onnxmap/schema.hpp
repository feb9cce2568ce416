#pragma once
// Facts of onnx.proto that callers need: data types and their traits, attribute types, the
// versioning rules. The message kinds are in message_kind.hpp (generated from the schema).
//
// Threads: constants and functions of their arguments only: safe from any thread.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "onnxmap/export.hpp"
#include "onnxmap/message_kind.hpp"

namespace onnxmap {

// TensorProto.DataType: every element type up to IR version 14.
enum class DataType : std::int32_t {
  undefined = 0,
  float32 = 1,
  uint8 = 2,
  int8 = 3,
  uint16 = 4,
  int16 = 5,
  int32 = 6,
  int64 = 7,
  string = 8,
  boolean = 9,
  float16 = 10,
  float64 = 11,
  uint32 = 12,
  uint64 = 13,
  complex64 = 14,
  complex128 = 15,
  bfloat16 = 16,
  float8e4m3fn = 17,
  float8e4m3fnuz = 18,
  float8e5m2 = 19,
  float8e5m2fnuz = 20,
  uint4 = 21,
  int4 = 22,
  float4e2m1 = 23,
  float8e8m0 = 24,
  uint2 = 25,
  int2 = 26,
};
inline constexpr std::int32_t kMaxDataType = 26;

// Where the elements of a data type come from and how they are stored.
struct DataTypeTraits {
  std::string_view name;         // as onnx.proto spells it: "FLOAT16"
  std::uint32_t bits;            // bits per element in raw_data; 0 for STRING (variable)
  std::string_view numpy_descr;  // NumPy dtype string for .npy, empty for STRING
  bool numpy_native;             // false: stored as bit patterns or unpacked sub-byte values
};

// Traits of `type`, or nullopt for a value outside 1..26 (files may carry any int32).
[[nodiscard]] ONNXMAP_API std::optional<DataTypeTraits> traits(DataType type) noexcept;
// Bits per element of `type` in raw_data: 0 for STRING and for values no type has.
[[nodiscard]] ONNXMAP_API std::uint32_t element_bits(DataType type) noexcept;
// Elements of a tensor of `dims` (1 for a scalar), or nullopt when the product overflows 64 bits.
// Dims are taken as unsigned: callers refuse negative ones first.
[[nodiscard]] ONNXMAP_API std::optional<std::uint64_t> element_count(
    std::span<const std::int64_t> dims) noexcept;
// Bytes that `count` elements of `type` take in raw_data (sub-byte types packed, the last byte
// padded), or nullopt on overflow or for a type with no fixed width (STRING, unknown values).
[[nodiscard]] ONNXMAP_API std::optional<std::uint64_t> packed_byte_size(
    DataType type, std::uint64_t count) noexcept;
// The names of the enums, for people: to_string(DataType::float16) is "FLOAT16" as onnx.proto
// spells it, or "<unknown 99>" for a value no enumerator names (files may carry any int32);
// AttributeType "FLOATS"; DataLocation "DEFAULT", "EXTERNAL"; TensorStorage "none", "raw",
// "external", "typed", "invalid".
[[nodiscard]] ONNXMAP_API std::string to_string(DataType type);

// AttributeProto.AttributeType.
enum class AttributeType : std::int32_t {
  undefined = 0,
  float32 = 1,
  int64 = 2,
  string = 3,
  tensor = 4,
  graph = 5,
  floats = 6,
  ints = 7,
  strings = 8,
  tensors = 9,
  graphs = 10,
  sparse_tensor = 11,
  sparse_tensors = 12,
  type_proto = 13,
  type_protos = 14,
};
inline constexpr std::int32_t kMaxAttributeType = 14;
[[nodiscard]] ONNXMAP_API std::string_view to_string(AttributeType type) noexcept;

// TensorProto.DataLocation.
enum class DataLocation : std::int32_t { internal = 0, external = 1 };
[[nodiscard]] ONNXMAP_API std::string_view to_string(DataLocation location) noexcept;

// Where a tensor's elements are stored (Tensor::storage()).
enum class TensorStorage : std::uint8_t {
  none,      // no payload field: an empty tensor or one with no data
  raw,       // raw_data in the model file
  external,  // a range of an external data file
  typed,     // float_data, int32_data, int64_data, double_data, uint64_data or string_data
  invalid,   // only with OpenOptions::collect_payload_errors: see Tensor::payload_error()
};

[[nodiscard]] ONNXMAP_API std::string_view to_string(TensorStorage storage) noexcept;

// The newest IR version this build knows; newer files still open.
inline constexpr std::int64_t kLatestIrVersion = 14;

// The first ONNX release that writes `ir_version` ("1.16.0"), or nullopt for an unknown one.
[[nodiscard]] ONNXMAP_API std::optional<std::string_view> onnx_release_for_ir(
    std::int64_t ir_version) noexcept;

// ModelProto.model_version as the ONNX versioning rules read it: when the top 32 bits are
// non-zero it packs a SemVer MAJOR (16 bits), MINOR (16 bits) and PATCH (32 bits); otherwise it
// is a plain number.
struct ONNXMAP_API ModelVersion {
  std::int64_t raw = 0;

  [[nodiscard]] constexpr bool is_semver() const noexcept {
    return (static_cast<std::uint64_t>(raw) >> 32U) != 0;
  }
  [[nodiscard]] constexpr std::uint16_t major() const noexcept {
    return static_cast<std::uint16_t>(static_cast<std::uint64_t>(raw) >> 48U);
  }
  [[nodiscard]] constexpr std::uint16_t minor() const noexcept {
    return static_cast<std::uint16_t>(static_cast<std::uint64_t>(raw) >> 32U);
  }
  [[nodiscard]] constexpr std::uint32_t patch() const noexcept {
    return static_cast<std::uint32_t>(static_cast<std::uint64_t>(raw));
  }
  // "1.2.345" for SemVer, else the plain number.
  [[nodiscard]] std::string to_string() const;

  [[nodiscard]] static constexpr ModelVersion semver(std::uint16_t major, std::uint16_t minor,
                                                     std::uint32_t patch) noexcept {
    return {static_cast<std::int64_t>((static_cast<std::uint64_t>(major) << 48U) |
                                      (static_cast<std::uint64_t>(minor) << 32U) | patch)};
  }
};

}  // namespace onnxmap
