#pragma once
// Tensors of the sub-byte types (UINT4, INT4, FLOAT4E2M1, UINT2, INT2) pack two or four elements
// per byte. NumPy, .npy files and most runtimes want one element per byte: this is the one
// conversion, used by `onnxmap get` and the Python package alike.
//
// Threads: unpack_sub_byte reads only its arguments: safe from any thread; `out` must not be
// shared with another writer.

#include <cstddef>
#include <span>

#include "onnxmap/export.hpp"
#include "onnxmap/schema.hpp"

namespace onnxmap {

// Unpacks the first out.size() elements of `type` from `packed` into one byte each.
//
// `packed` is in the raw_data layout: element i sits in byte i / k (k = 2 for 4-bit types, 4 for
// 2-bit types) at bits [b * (i % k), b * (i % k) + b), b = 8 / k: the first element in the low
// bits. Each byte of `out` gets:
//   - INT4 and INT2: the value sign-extended to int8 (two's complement), "|i1" in NumPy;
//   - UINT4, UINT2 and FLOAT4E2M1: the bit pattern in the low bits, the high bits zero, "|u1".
// These are the bit patterns `onnxmap get` writes to .npy (traits(type)->numpy_descr).
//
// Throws onnxmap::Error (invalid_argument) when `type` is not one of the five sub-byte types, or
// `packed` is shorter than the out.size() elements need, before writing anything.
ONNXMAP_API void unpack_sub_byte(DataType type, std::span<const std::byte> packed,
                                 std::span<std::byte> out);

}  // namespace onnxmap
