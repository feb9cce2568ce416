// Fuzz target: any bytes as a bare TensorProto (the .pb files of the onnx backend tests). Opens
// them with root TensorProto, walks the tensor (bytes, decoded data, strings, slices) and prints
// the canonical JSON.

#include <cstddef>
#include <cstdint>
#include <span>

#include "onnxmap/onnxmap.hpp"
#include "walk.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  const onnxmap::OpenOptions options;
  try {
    const onnxmap::Model model =
        onnxmap::Model::from_bytes(bytes, options, onnxmap::schema::MessageKind::TensorProto);
    // A bare TensorProto is exactly one tensor, and only one.
    if (model.tensor_count() != 1) __builtin_trap();
    onnxmap::fuzz::walk_tensor(model.tensor_at(0));
  } catch (const onnxmap::Error&) {
  }
  try {
    (void)onnxmap::dump_json(bytes, onnxmap::schema::MessageKind::TensorProto);
  } catch (const onnxmap::Error&) {
  }
  return 0;
}
