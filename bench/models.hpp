#pragma once
// The benchmark models, made with onnxmap's own generator into ONNXMAP_BENCH_DIR by
// tools/bench.sh, and the names of the files each benchmark reads.

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace onnxmap::bench {

struct BenchModel {
  std::string name;    // "llm-320g"
  std::string file;    // relative to the bench folder
  std::string tensor;  // one tensor to look up and fetch
};

inline const std::vector<BenchModel>& bench_models() {
  static const std::vector<BenchModel> models{
      {"llm-320g", "llm-320g.onnx", "model.layers.40.mlp.up_proj.weight"},
      {"llm-7b-ext", "llm-7b-ext.onnx", "model.layers.16.mlp.up_proj.weight"},
      {"llm-2g", "llm-2g.onnx", "model.layers.8.mlp.up_proj.weight"},
      {"graph-heavy", "graph-heavy.onnx", "model.layers.10000.mlp.up_proj.weight"},
  };
  return models;
}

// The folder tools/bench.sh filled; benchmarks whose file is missing are skipped.
inline std::filesystem::path bench_dir() {
  const char* dir = std::getenv("ONNXMAP_BENCH_DIR");
  return dir != nullptr ? dir : "bench-models";
}

}  // namespace onnxmap::bench
