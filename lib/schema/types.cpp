#include <array>

#include "onnxmap/schema.hpp"
#include "schema/descriptors.hpp"

namespace onnxmap {

namespace {

// Indexed by DataType value. Bits and storage rules from onnx.proto; NumPy codes are what
// `numpy.load` understands (bit patterns for types NumPy lacks, one byte per sub-byte element).
constexpr std::array<DataTypeTraits, kMaxDataType + 1> kDataTypes{{
    {"UNDEFINED", 0, "", false},
    {"FLOAT", 32, "<f4", true},
    {"UINT8", 8, "|u1", true},
    {"INT8", 8, "|i1", true},
    {"UINT16", 16, "<u2", true},
    {"INT16", 16, "<i2", true},
    {"INT32", 32, "<i4", true},
    {"INT64", 64, "<i8", true},
    {"STRING", 0, "", false},
    {"BOOL", 8, "|b1", true},
    {"FLOAT16", 16, "<f2", true},
    {"DOUBLE", 64, "<f8", true},
    {"UINT32", 32, "<u4", true},
    {"UINT64", 64, "<u8", true},
    {"COMPLEX64", 64, "<c8", true},
    {"COMPLEX128", 128, "<c16", true},
    {"BFLOAT16", 16, "<u2", false},
    {"FLOAT8E4M3FN", 8, "|u1", false},
    {"FLOAT8E4M3FNUZ", 8, "|u1", false},
    {"FLOAT8E5M2", 8, "|u1", false},
    {"FLOAT8E5M2FNUZ", 8, "|u1", false},
    {"UINT4", 4, "|u1", false},
    {"INT4", 4, "|i1", false},
    {"FLOAT4E2M1", 4, "|u1", false},
    {"FLOAT8E8M0", 8, "|u1", false},
    {"UINT2", 2, "|u1", false},
    {"INT2", 2, "|i1", false},
}};

constexpr std::array<std::string_view, kMaxAttributeType + 1> kAttributeTypes{
    "UNDEFINED",      "FLOAT",      "INT",        "STRING",  "TENSOR", "GRAPH",
    "FLOATS",         "INTS",       "STRINGS",    "TENSORS", "GRAPHS", "SPARSE_TENSOR",
    "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};

struct IrRelease {
  std::int64_t ir_version;
  std::string_view first_release;
};

// The first ONNX release writing each IR version (the onnx package's version table).
constexpr std::array<IrRelease, 12> kIrReleases{{
    {3, "1.0"},
    {4, "1.4.1"},
    {5, "1.5.0"},
    {6, "1.6.0"},
    {7, "1.7.0"},
    {8, "1.10.0"},
    {9, "1.14.0"},
    {10, "1.16.0"},
    {11, "1.18.0"},
    {12, "1.19.0"},
    {13, "1.20.0"},
    {14, "unreleased (main branch)"},
}};

}  // namespace

std::optional<DataTypeTraits> traits(DataType type) noexcept {
  const auto value = static_cast<std::int32_t>(type);
  if (value <= 0 || value > kMaxDataType) return std::nullopt;
  return kDataTypes[static_cast<std::size_t>(value)];
}

std::uint32_t element_bits(DataType type) noexcept {
  const auto value = static_cast<std::int32_t>(type);
  if (value <= 0 || value > kMaxDataType) return 0;
  return kDataTypes[static_cast<std::size_t>(value)].bits;
}

// Overflow is tested by the multiplications themselves: the index pass asks for every tensor,
// and a division per dimension would cost more than the rest of its check.
std::optional<std::uint64_t> element_count(std::span<const std::int64_t> dims) noexcept {
  std::uint64_t count = 1;
  for (const std::int64_t d : dims) {
    if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(d), &count)) return std::nullopt;
  }
  return count;
}

std::optional<std::uint64_t> packed_byte_size(DataType type, std::uint64_t count) noexcept {
  const std::uint64_t bits = element_bits(type);
  std::uint64_t total_bits = 0;
  if (bits == 0 || __builtin_mul_overflow(count, bits, &total_bits) ||
      total_bits > UINT64_MAX - 7) {
    return std::nullopt;
  }
  return (total_bits + 7) / 8;
}

std::string to_string(DataType data_type) {
  const auto type = static_cast<std::int32_t>(data_type);
  if (type < 0 || type > kMaxDataType) return "<unknown " + std::to_string(type) + ">";
  return std::string(kDataTypes[static_cast<std::size_t>(type)].name);
}

std::string_view to_string(AttributeType type) noexcept {
  const auto value = static_cast<std::int32_t>(type);
  if (value < 0 || value > kMaxAttributeType) return "<unknown>";
  return kAttributeTypes[static_cast<std::size_t>(value)];
}

std::string_view to_string(DataLocation location) noexcept {
  return location == DataLocation::external ? "EXTERNAL" : "DEFAULT";
}

std::string_view to_string(TensorStorage storage) noexcept {
  switch (storage) {
    case TensorStorage::none: return "none";
    case TensorStorage::raw: return "raw";
    case TensorStorage::external: return "external";
    case TensorStorage::typed: return "typed";
    case TensorStorage::invalid: return "invalid";
  }
  return "invalid";
}

std::optional<std::string_view> onnx_release_for_ir(std::int64_t ir_version) noexcept {
  for (const IrRelease& release : kIrReleases) {
    if (release.ir_version == ir_version) return release.first_release;
  }
  return std::nullopt;
}

std::string ModelVersion::to_string() const {
  if (!is_semver()) return std::to_string(raw);
  return std::to_string(major()) + "." + std::to_string(minor()) + "." + std::to_string(patch());
}

}  // namespace onnxmap
