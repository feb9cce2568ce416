#pragma once
// What `onnxmap view` serves: the page's own files (built into the binary) and the JSON API of
// api.md over one opened model. Nothing a request says reaches the file system: paths name
// the built-in files only, and the model is the one given on the command line.

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "data_files.hpp"
#include "graph_layout.hpp"
#include "http_server.hpp"
#include "node_graph.hpp"
#include "onnxmap/onnxmap.hpp"
#include "stats_jobs.hpp"
#include "tensor_list.hpp"

namespace onnxmap::cli::viewer {

class ViewApi {
 public:
  // `source` is what the page calls the model: its file name or URL. Starts a thread that
  // computes the summary, the node index, the graph page's first drawing, two sort orders and
  // the warnings ahead of the first requests for them (on a graph of 360,000 nodes each takes a
  // second or so); a request that needs one first waits for it.
  // `layout` says how the graph page's drawings are laid out (graph_layout.hpp).
  ViewApi(Model model, std::string source, LayoutOptions layout = {});
  ~ViewApi();
  ViewApi(const ViewApi&) = delete;
  ViewApi& operator=(const ViewApi&) = delete;

  // Answers any request; safe from several threads at once.
  [[nodiscard]] HttpResponse handle(const HttpRequest& request);

 private:
  [[nodiscard]] nlohmann::json api(const HttpRequest& request);
  [[nodiscard]] nlohmann::json stats(const HttpRequest& request);
  [[nodiscard]] const NodeGraph& graph();
  [[nodiscard]] std::shared_ptr<const NodeGraph> subgraph(const std::string& path);
  [[nodiscard]] nlohmann::json graph_drawing(const HttpRequest& request);
  // The graph page's first drawing (the main graph's top level, nothing asked unfolded), laid
  // out once and kept: the warm-up and the first requests share one layout rather than each
  // running their own. A drawing the layout gave up on (a layout_note) is not kept, so the next
  // request tries Graphviz again.
  [[nodiscard]] nlohmann::json first_drawing();
  [[nodiscard]] const nlohmann::json& summary();
  [[nodiscard]] const DataFiles& data_files();
  [[nodiscard]] const nlohmann::json& warnings();
  [[nodiscard]] Tensor named_tensor(const HttpRequest& request) const;

  Model model_;
  std::string source_;
  std::chrono::system_clock::time_point opened_at_ = std::chrono::system_clock::now();
  TensorList tensors_;
  std::once_flag graph_once_;
  std::unique_ptr<NodeGraph> graph_;
  std::mutex subgraphs_mutex_;
  std::map<std::string, std::shared_ptr<const NodeGraph>> subgraphs_;  // by path
  std::once_flag summary_once_;
  nlohmann::json summary_;
  std::once_flag data_files_once_;
  std::unique_ptr<DataFiles> data_files_;
  std::mutex first_drawing_mutex_;
  nlohmann::json first_drawing_;  // null until a drawing without a layout_note is kept
  std::once_flag warnings_once_;
  nlohmann::json warnings_;
  StatsJobs jobs_;
  LayoutOptions layout_;
  std::thread warm_up_;
};

// /api/summary: summary_json and stats_json of `model`, with sizes by storage, the nodes of the
// main graph, of its subgraphs and of the functions counted apart, and the functions.
[[nodiscard]] nlohmann::json view_summary(const Model& model, const std::string& source);
// The part of /api/summary asked anew at each request: whether the files behind `model` are
// still the versions it opened (api.md), `opened_at` being when the viewer opened it.
[[nodiscard]] nlohmann::json view_on_disk(const Model& model,
                                          std::chrono::system_clock::time_point opened_at);
// /api/warnings: {"warnings": [each finding of check, "path: detail"]}.
[[nodiscard]] nlohmann::json view_warnings(const Model& model);

}  // namespace onnxmap::cli::viewer
