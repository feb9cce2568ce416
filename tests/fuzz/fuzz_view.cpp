// Fuzz target: any bytes as a model shown by `onnxmap view`. Opens them (payload errors
// collected, as the viewer does) and asks the viewer's API for every page a person could open:
// the summary and warnings, tensor pages in each order, the treemap, the graph drawn with its
// boxes unfolded a few levels (each level alone, and all unfolded in place), each tensor's page,
// values and heat map, each node's page, statistics of one tensor; and the input's last 64 bytes as
// one more request target. Every answer must be JSON with a status the API defines: a malformed
// model is a 4xx/5xx answer naming it, never a crash.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <thread>

#include "onnxmap/onnxmap.hpp"
#include "viewer/view_api.hpp"

namespace {

namespace viewer = onnxmap::cli::viewer;

nlohmann::json ask(viewer::ViewApi& api, const std::string& target, const char* method = "GET") {
  viewer::HttpRequest request;
  try {
    request = viewer::parse_target(method, target);
  } catch (const std::invalid_argument&) {
    return nullptr;
  }
  const viewer::HttpResponse r = api.handle(request);
  if (r.status != 200 && r.status != 400 && r.status != 404 && r.status != 429 && r.status != 500) {
    __builtin_trap();
  }
  if (!request.path.starts_with("/api/")) return nullptr;
  return nlohmann::json::parse(r.body);  // throws (and so fails the run) when it is not JSON
}

std::string encoded(std::string_view text) {
  std::string out;
  for (const unsigned char c : text) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    out += '%';
    out += kHex[c >> 4U];
    out += kHex[c & 15U];
  }
  return out;
}

// Draws the level of `id`, then each of its boxes' levels, `depth` deep; gathers the ids
// unfolded so that the last request draws them all in place, with a node located in it.
void unfold(viewer::ViewApi& api, const std::string& id, int depth, std::string& all_open) {
  const nlohmann::json drawing = ask(api, "/api/graph?level=" + encoded(id));
  if (depth == 0 || !drawing.contains("boxes")) return;
  for (const auto& box : drawing["boxes"]) {
    const std::string kind = box["kind"].get<std::string>();
    if (kind != "group" && kind != "repeat" && kind != "range") continue;
    const std::string child = box["id"].get<std::string>();
    all_open += (all_open.empty() ? "" : "\n") + child;
    unfold(api, child, depth - 1, all_open);
  }
}

void ask_tensor_pages(viewer::ViewApi& api, const onnxmap::Model& model) {
  for (std::size_t i = 0; i < model.tensor_count() && i < 8; ++i) {
    const std::string name = encoded(model.tensor_at(i).lookup_name());
    (void)ask(api, "/api/tensor?name=" + name);
    (void)ask(api, "/api/values?name=" + name + "&count=1024");
    (void)ask(api, "/api/heatmap?name=" + name + "&width=7&height=5");
  }
  if (model.tensor_count() == 0) return;
  const nlohmann::json job =
      ask(api, "/api/stats?name=" + encoded(model.tensor_at(0).lookup_name()), "POST");
  if (!job.contains("job")) return;
  while (ask(api, "/api/stats?job=" + job["job"].get<std::string>())["state"] == "running") {
    std::this_thread::yield();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  onnxmap::OpenOptions options;
  options.collect_payload_errors = true;
  std::optional<onnxmap::Model> model;
  try {
    model.emplace(onnxmap::Model::from_bytes(bytes, options));
  } catch (const onnxmap::Error&) {
    return 0;
  }
  viewer::ViewApi api(*model, "fuzz.onnx");
  for (const char* target :
       {"/api/summary", "/api/warnings", "/api/tensors?limit=1000",
        "/api/tensors?sort=name&order=desc", "/api/tensors?sort=offset",
        "/api/tensors?sort=dtype&filter=*a*", "/api/treemap", "/api/nodes?q=a", "/", "/app.js"}) {
    (void)ask(api, target);
  }
  std::string all_open;
  unfold(api, "g:", 3, all_open);
  (void)ask(api, "/api/graph?node=3&open=" + encoded(all_open));
  ask_tensor_pages(api, *model);
  for (int id = 0; id < 16; ++id) (void)ask(api, "/api/node?id=" + std::to_string(id));
  const std::size_t tail = std::min<std::size_t>(size, 64);
  (void)ask(api, "/" + std::string(reinterpret_cast<const char*>(data + size - tail), tail));
  return 0;
}
