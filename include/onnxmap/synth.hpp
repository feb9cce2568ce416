#pragma once
// LLM-shaped test models of any size, for testing and benchmarking loaders (ours and others'):
// an embedding, decoder layers of attention and MLP weights with their nodes, a final norm and
// an lm_head, written in one streaming pass. The graph is one that onnx's full check accepts and
// ONNX Runtime runs: token ids [sequence] in, logits [sequence, vocab] out (in the model's
// floating-point type; FLOAT for other types, whose weights are read through Cast), weights
// stored [out, in] as checkpoints hold them and applied by Gemm with transB.
//
// Payload bytes follow synth_pattern_byte(), so a reader can verify any byte it fetched; such
// bytes read as floats include NaNs and infinities (in float16 most of them are), so `finite`
// fixes the sign-and-exponent byte of each floating-point element for values a run keeps finite.
// With `sparse` the payloads are left as file holes instead (they read as zeros and take no
// disk), so a 300 GB model costs a few MB.
//
// Threads: synth writes only its own files: syntheses to different paths may run at once.

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "onnxmap/export.hpp"
#include "onnxmap/schema.hpp"

namespace onnxmap {

struct SynthOptions {
  std::int64_t layers = 2;
  std::int64_t hidden = 64;
  std::int64_t ffn = 0;  // 0: 4 * hidden
  std::int64_t vocab = 1000;
  // Key/value projection width, a divisor of hidden; 0: hidden / 8 when hidden >= 1024
  // (grouped-query attention as in Llama 2/3 70B), else hidden.
  std::int64_t kv_dim = 0;
  DataType dtype = DataType::float16;
  bool external_data = false;  // payloads in OUT.data, each at a multiple of 4096
  bool sparse = false;         // payloads are holes, not the pattern
  // Floating-point payloads are the pattern with each element's sign-and-exponent byte set so
  // that every value is finite and small (float32: 2^-5 <= |x| < 2^-3; float16: 2^-4 <= |x| <
  // 2^-3): byte i of an element of B bytes, i = B-1, is (pattern & keep) | set
  // (lib/write/synth.cpp).
  bool finite = false;
  // The model's IR version and opset imports (domain, version; "" is ai.onnx). 0 and none: IR 8
  // and ai.onnx 17, or the first that have the dtype (int4: IR 10 and ai.onnx 21).
  std::int64_t ir_version = 0;
  std::vector<std::pair<std::string, std::int64_t>> opsets;
};

struct SynthResult {
  std::uint64_t model_bytes = 0;  // size of the .onnx
  std::uint64_t data_bytes = 0;   // size of OUT.data (0 when inline)
  std::uint64_t tensors = 0;
  std::uint64_t nodes = 0;
  std::uint64_t parameters = 0;
};

// Writes the model to `out` (and `out` + ".data" with external_data). Throws onnxmap::Error (io)
// when a file cannot be written; files are written under temporary names and renamed when done.
ONNXMAP_API SynthResult synth(const std::filesystem::path& out, const SynthOptions& options);

// Byte `i` of the payload of the `k`-th tensor in file order (the pattern, when not sparse).
[[nodiscard]] constexpr std::uint8_t synth_pattern_byte(std::uint64_t k, std::uint64_t i) noexcept {
  return static_cast<std::uint8_t>((i * 131U + k * 17U + (i >> 12U)) & 0xFFU);
}

}  // namespace onnxmap
