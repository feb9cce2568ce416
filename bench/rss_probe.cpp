// One operation in a fresh process, reporting wall time and peak RSS, so memory and the first
// open of a process can be compared fairly:
//   rss_probe onnxmap-open|onnxmap-peek|protobuf-parse MODEL  ->  "ms peak_rss_kib [index_kib]"
// `ms` times the operation alone, with its result still alive, as bench/reader_bench.cpp times
// its loops: the freeing afterwards is not in it. Unlike those loops, every allocation here is
// the process's first, so memory comes fresh from the kernel for onnxmap's tables and for
// libprotobuf's messages alike, as in a serving process that opens its model once. onnxmap-open
// adds the index's own heap bytes.

#include <onnx/onnx_pb.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "io/mapped_file.hpp"
#include "onnxmap/onnxmap.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The open's time; `index_bytes` gets the index's heap bytes.
double open_model(const char* path, std::uint64_t& index_bytes) {
  const onnxmap::OpenOptions options;
  const auto start = Clock::now();
  const onnxmap::Model model = onnxmap::Model::open(path, options);
  const double ms = ms_since(start);
  index_bytes = model.index_bytes();
  return ms;
}

double peek_model(const char* path) {
  const auto start = Clock::now();
  (void)onnxmap::peek(path).ir_version();
  return ms_since(start);
}

// The parse's time, the file mapped beforehand as reader_bench maps it; nullopt when
// libprotobuf cannot parse the file, with the reason printed in the time's place.
std::optional<double> parse_model(const char* path) {
  const auto file = onnxmap::MappedFile::open(path);
  if (file.size() > static_cast<std::uint64_t>(INT32_MAX)) {
    std::puts("cannot-open -");
    return std::nullopt;
  }
  onnx::ModelProto proto;
  const auto start = Clock::now();
  if (!proto.ParseFromArray(file.bytes().data(), static_cast<int>(file.size()))) {
    std::puts("parse-failed -");
    return std::nullopt;
  }
  return ms_since(start);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: rss_probe onnxmap-open|onnxmap-peek|protobuf-parse MODEL\n");
    return 2;
  }
  std::uint64_t index_bytes = 0;
  double ms = 0;
  try {
    if (std::strcmp(argv[1], "onnxmap-open") == 0) {
      ms = open_model(argv[2], index_bytes);
    } else if (std::strcmp(argv[1], "onnxmap-peek") == 0) {
      ms = peek_model(argv[2]);
    } else if (std::strcmp(argv[1], "protobuf-parse") == 0) {
      const std::optional<double> parsed = parse_model(argv[2]);
      if (!parsed) return 0;
      ms = *parsed;
    } else {
      return 2;
    }
  } catch (const onnxmap::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("%.3f %ld", ms, usage.ru_maxrss);
  if (index_bytes > 0) std::printf(" %llu", static_cast<unsigned long long>(index_bytes / 1024));
  std::printf("\n");
  return 0;
}
