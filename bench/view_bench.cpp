// The viewer's server time per request (tools/onnxmap/viewer/view_api.hpp, no HTTP): each page's
// requests on a model, the first (which builds the sort orders, the node index or the summary)
// and the median of the next ones. tools/view_bench.sh runs it on the bench models.
//
//   view_bench MODEL...   prints one markdown row per model and request

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "onnxmap/onnxmap.hpp"
#include "viewer/view_api.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace viewer = onnxmap::cli::viewer;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Times `target` (a path with its query) once, then `repeats` times; the median of the repeats.
// A tensor table page is asked further down each time (a scroll, at offsets below `rows`); other
// requests are asked again as they are.
std::pair<double, double> time_request(viewer::ViewApi& api, const std::string& target, int repeats,
                                       std::uint64_t rows) {
  auto start = Clock::now();
  const auto first = api.handle(viewer::parse_target("GET", target));
  const double first_ms = ms_since(start);
  if (first.status != 200) {
    std::fprintf(stderr, "%s: %u %s\n", target.c_str(), first.status, first.body.c_str());
  }
  const bool scroll = target.starts_with("/api/tensors");
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const std::uint64_t offset =
        (1000 + static_cast<std::uint64_t>(i) * 9973) % std::max<std::uint64_t>(rows, 1);
    const auto later =
        viewer::parse_target("GET", scroll ? target + "&offset=" + std::to_string(offset) : target);
    start = Clock::now();
    (void)api.handle(later);
    times.push_back(ms_since(start));
  }
  std::nth_element(times.begin(), times.begin() + repeats / 2, times.end());
  return {first_ms, times[repeats / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  std::printf(
      "| model | request | first (ms) | median of the next 21 (ms) |\n|---|---|---:|---:|\n");
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path path = argv[i];
    auto start = Clock::now();
    viewer::ViewApi api(onnxmap::Model::open(path), path.filename().string());
    const double open_ms = ms_since(start);
    std::printf("| %s | open the model | %.1f | |\n", path.stem().c_str(), open_ms);
    const std::uint64_t rows = onnxmap::Model::open(path).tensor_count();
    for (const std::string target :
         {"/api/summary?", "/api/tensors?limit=200", "/api/tensors?limit=200&sort=name",
          "/api/tensors?limit=200&sort=bytes&order=desc", "/api/tensors?limit=200&filter=*.mlp.*",
          "/api/treemap?prefix=", "/api/graph?", "/api/graph?level=g:model.layers.0.",
          "/api/graph?node=1000", "/api/nodes?limit=100&q=mlp", "/api/node?id=1000"}) {
      const auto [first, median] = time_request(api, target, 21, rows);
      std::printf("| %s | `%s` | %.2f | %.3f |\n", path.stem().c_str(), target.c_str(), first,
                  median);
    }
  }
  return 0;
}
