#pragma once
// The one table of onnxmap's mapped files, which names a fault's file: MappedFile registers
// each map when it is made and unregisters it before unmapping it. Only normal code reads it
// (after a guard's jump, never in the signal handler), under a lock; it grows with the maps.

#include <cstddef>
#include <filesystem>
#include <span>

#include "onnxmap/error.hpp"

namespace onnxmap::detail {

// `fd` is the open file behind `map`, which must stay open while the map is registered (fstat
// gives its size after a fault).
void register_mapping(std::span<const std::byte> map, const std::filesystem::path& path, int fd);
void unregister_mapping(const std::byte* begin) noexcept;

// The error for a fault at `address`: names the mapped file holding it, the byte, and the
// file's size now (an fstat after the fault), or says that no mapped file of onnxmap holds it.
[[nodiscard]] Error mapped_fault_error(const void* address);

}  // namespace onnxmap::detail
