// One operation in a fresh process, reporting wall time and peak RSS, so memory can be compared
// fairly: rss_probe onnxmap-open|onnxmap-peek|protobuf-parse MODEL  ->  "ms peak_rss_kib", and
// for onnxmap-open a third column, the index's own heap bytes in KiB. ONNXMAP_INDEX_THREADS sets
// Options::index_threads (for instruction counts of the pass on a given number of threads).

#include <onnx/onnx_pb.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "onnxmap/mapped_file.hpp"
#include "onnxmap/onnxmap.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: rss_probe onnxmap-open|onnxmap-peek|protobuf-parse MODEL\n");
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t index_bytes = 0;
  try {
    if (std::strcmp(argv[1], "onnxmap-open") == 0) {
      onnxmap::Options options;
      if (const char* threads = std::getenv("ONNXMAP_INDEX_THREADS")) {
        options.index_threads = static_cast<unsigned>(std::strtoul(threads, nullptr, 10));
      }
      index_bytes = onnxmap::Model::open(argv[2], options).index_bytes();
    } else if (std::strcmp(argv[1], "onnxmap-peek") == 0) {
      (void)onnxmap::peek(argv[2]).ir_version();
    } else if (std::strcmp(argv[1], "protobuf-parse") == 0) {
      const auto file = onnxmap::MappedFile::open(argv[2]);
      if (file.size() > static_cast<std::uint64_t>(INT32_MAX)) {
        std::puts("cannot-open -");
        return 0;
      }
      onnx::ModelProto proto;
      if (!proto.ParseFromArray(file.bytes().data(), static_cast<int>(file.size()))) {
        std::puts("parse-failed -");
        return 0;
      }
    } else {
      return 2;
    }
  } catch (const onnxmap::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("%.3f %ld", ms, usage.ru_maxrss);
  if (index_bytes > 0) std::printf(" %llu", static_cast<unsigned long long>(index_bytes / 1024));
  std::printf("\n");
  return 0;
}
