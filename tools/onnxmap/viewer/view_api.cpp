#include "view_api.hpp"

#include <algorithm>
#include <charconv>

#include "assets.hpp"
#include "graph_level.hpp"
#include "graph_scene.hpp"
#include "onnxmap/front_end_scope.hpp"
#include "tensor_detail.hpp"

namespace onnxmap::cli::viewer {

namespace {

constexpr std::uint64_t kMaxRows = 1000;
constexpr std::uint64_t kMaxValues = 1024;
constexpr std::uint64_t kMaxBins = 1024;
constexpr std::uint64_t kMaxHeatmapSide = 512;
constexpr std::size_t kMaxSubgraphs = 16;  // indexes of subgraphs kept
constexpr std::size_t kMaxOpen = 256;
constexpr long kMaxGraphDepth = 64;  // subgraphs nested in a graph path

// The query's `key` as a number in [0, max], `fallback` when absent; ApiError 400 otherwise.
std::uint64_t number_param(const HttpRequest& r, const std::string& key, std::uint64_t fallback,
                           std::uint64_t max) {
  const auto found = r.query.find(key);
  if (found == r.query.end() || found->second.empty()) return fallback;
  const std::string& text = found->second;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) {
    throw ApiError{400, key + ": not a number: " + text};
  }
  if (value > max) throw ApiError{400, key + ": " + text + " is more than " + std::to_string(max)};
  return value;
}

std::string text_param(const HttpRequest& r, const std::string& key) {
  const auto found = r.query.find(key);
  return found == r.query.end() ? "" : found->second;
}

HttpResponse json_response(unsigned status, const nlohmann::json& body) {
  HttpResponse r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

HttpResponse asset_response(std::string_view path) {
  for (const Asset& asset : view_assets()) {
    if (asset.path == path || (path == "/" && asset.path == "/index.html")) {
      HttpResponse r;
      r.content_type = std::string(asset.content_type);
      r.body = std::string(asset.body);
      r.cacheable = path != "/";
      return r;
    }
  }
  HttpResponse r;
  r.status = 404;
  r.content_type = "text/plain; charset=utf-8";
  r.body = "not found\n";
  return r;
}

void require_method(const HttpRequest& r, std::initializer_list<std::string_view> allowed) {
  for (const std::string_view m : allowed) {
    if (r.method == m) return;
  }
  throw ApiError{405, r.method + " is not allowed on " + r.path};
}

}  // namespace

ViewApi::ViewApi(Model model, std::string source, LayoutOptions layout)
    : model_(std::move(model)),
      source_(std::move(source)),
      tensors_(model_),
      layout_(std::move(layout)) {
  warm_up_ = std::thread([this] {
    try {
      // Checked as a request is: a model file cut short meanwhile fails the warm-up, not the
      // process (a cache whose making throws keeps nothing).
      const FrontEndScope checked;
      (void)summary();
      (void)first_drawing();
      for (const char* sort : {"name", "bytes"}) tensors_.sort_ahead(sort);
      (void)warnings();
    } catch (const std::exception&) {
      // The request that needs it fails the same way again, and says why.
    } catch (const ApiError&) {
      // Likewise: an answer's error (a drawing this model cannot make) is a request's to give.
    }
  });
}

ViewApi::~ViewApi() {
  warm_up_.join();
}

const NodeGraph& ViewApi::graph() {
  // A fault (the request's FrontEndScope) throws out of call_once, which then makes it again on
  // the next call; so do the other caches below.
  std::call_once(graph_once_,
                 [this] { graph_ = std::make_unique<NodeGraph>(model_, model_.graph()); });
  return *graph_;
}

// "12.then_branch/3.body": the subgraph in attribute then_branch of node 12 of the main graph,
// then in body of its node 3; "12.branches.1": the second graph of a GRAPHS attribute.
std::shared_ptr<const NodeGraph> ViewApi::subgraph(const std::string& path) {
  {
    const std::lock_guard lock(subgraphs_mutex_);
    if (const auto found = subgraphs_.find(path); found != subgraphs_.end()) return found->second;
  }
  if (std::count(path.begin(), path.end(), '/') >= kMaxGraphDepth) {
    throw ApiError{400, "graph: a path deeper than " + std::to_string(kMaxGraphDepth) + " graphs"};
  }
  const auto slash = path.rfind('/');
  const std::shared_ptr<const NodeGraph> outer =
      slash == std::string::npos ? nullptr : subgraph(path.substr(0, slash));
  const NodeGraph& in = outer ? *outer : graph();
  const std::string step = slash == std::string::npos ? path : path.substr(slash + 1);
  const auto dot = step.find('.');
  std::uint32_t id = 0;
  const auto [end, ec] = std::from_chars(step.data(), step.data() + step.size(), id);
  if (ec != std::errc{} || dot == std::string::npos || end != step.data() + dot) {
    throw ApiError{400, "graph: malformed path '" + path + "' (NODE.ATTRIBUTE[.INDEX]/...)"};
  }
  if (id >= in.size()) throw ApiError{404, "graph: no node " + std::to_string(id) + " in " + path};
  std::string attribute = step.substr(dot + 1);
  std::optional<Graph> found;
  if (const auto a = in.node_at(id).attribute(attribute); a && a->g()) found = a->g();
  const auto last_dot = attribute.rfind('.');
  if (!found && last_dot != std::string::npos) {
    std::size_t k = 0;
    const std::string index = attribute.substr(last_dot + 1);
    const auto [e, err] = std::from_chars(index.data(), index.data() + index.size(), k);
    const auto a = in.node_at(id).attribute(attribute.substr(0, last_dot));
    if (err == std::errc{} && e == index.data() + index.size() && a) {
      for (const Graph g : a->graphs()) {
        if (k-- == 0) found = g;
      }
    }
  }
  if (!found)
    throw ApiError{404, "graph: node " + std::to_string(id) + " has no graph " + attribute};
  auto made = std::make_shared<const NodeGraph>(model_, found, true);
  const std::lock_guard lock(subgraphs_mutex_);
  if (subgraphs_.size() >= kMaxSubgraphs) subgraphs_.clear();
  subgraphs_.emplace(path, made);
  return made;
}

// /api/graph: the graph (or a subgraph) drawn from a level with some boxes unfolded.
nlohmann::json ViewApi::graph_drawing(const HttpRequest& r) {
  SceneRequest request;
  request.graph = text_param(r, "graph");
  if (r.query.contains("level")) request.level = box_id_or_400(text_param(r, "level"));
  request.open_given = r.query.contains("open");
  const std::string open = text_param(r, "open");
  for (std::size_t at = 0; at < open.size();) {
    const std::size_t end = std::min(open.find('\n', at), open.size());
    if (end > at && request.open.size() == kMaxOpen) {
      throw ApiError{400, "open: more than 256 boxes"};
    }
    if (end > at) request.open.push_back(box_id_or_400(open.substr(at, end - at)));
    at = end + 1;
  }
  if (r.query.contains("node")) {
    request.node = static_cast<std::uint32_t>(number_param(r, "node", 0, UINT32_MAX));
  }
  const bool first =
      request.graph.empty() && request.level == BoxId() && !request.open_given && !request.node;
  if (first) return first_drawing();
  const std::shared_ptr<const NodeGraph> sub =
      request.graph.empty() ? nullptr : subgraph(request.graph);
  return graph_scene(sub ? *sub : graph(), request, layout_);
}

nlohmann::json ViewApi::first_drawing() {
  const std::lock_guard lock(first_drawing_mutex_);
  if (!first_drawing_.is_null()) return first_drawing_;
  nlohmann::json drawing = graph_scene(graph(), SceneRequest{}, layout_);
  if (drawing["layout_note"].get_ref<const std::string&>().empty()) {
    first_drawing_ = drawing;
  }
  return drawing;
}

const nlohmann::json& ViewApi::warnings() {
  std::call_once(warnings_once_, [this] { warnings_ = view_warnings(model_); });
  return warnings_;
}

const nlohmann::json& ViewApi::summary() {
  std::call_once(summary_once_, [this] {
    summary_ = view_summary(model_, source_);
    summary_["data_files"] = data_files().summary();
  });
  return summary_;
}

const DataFiles& ViewApi::data_files() {
  std::call_once(data_files_once_, [this] { data_files_ = std::make_unique<DataFiles>(model_); });
  return *data_files_;
}

// Names repeat across graphs (an If's two branches may each make "x"): `index`, a row of
// /api/tensors, says which tensor of that name is meant; without it, the first.
Tensor ViewApi::named_tensor(const HttpRequest& request) const {
  const std::string name = text_param(request, "name");
  if (request.query.contains("index")) {
    const std::uint64_t index = number_param(request, "index", 0, UINT32_MAX);
    if (index < model_.tensor_count()) {
      Tensor t = model_.tensor_at(index);
      if (t.lookup_name() == name) return t;
    }
    throw ApiError{404, "no tensor named " + name + " at index " + std::to_string(index)};
  }
  const auto t = model_.find_tensor(name);
  if (!t) throw ApiError{404, "no tensor named " + name};
  return *t;
}

HttpResponse ViewApi::handle(const HttpRequest& request) {
  if (!request.path.starts_with("/api/")) {
    if (request.method != "GET") {
      return json_response(405, {{"error", request.method + " is not allowed on " + request.path}});
    }
    return asset_response(request.path);
  }
  try {
    // A page reads the model's metadata through the map: a fault there (the file shrank) is an
    // error page, and the server goes on.
    const FrontEndScope checked;
    return json_response(200, api(request));
  } catch (const ApiError& e) {
    return json_response(e.status, {{"error", e.message}});
  } catch (const std::invalid_argument& e) {
    return json_response(400, {{"error", e.what()}});
  } catch (const Error& e) {
    const bool missing = e.kind() == ErrorKind::not_found;
    return json_response(missing ? 404 : 500, {{"error", e.what()}});
  }
}

// POST starts a job, GET asks how it goes, DELETE cancels it.
nlohmann::json ViewApi::stats(const HttpRequest& r) {
  require_method(r, {"GET", "POST", "DELETE"});
  if (r.method == "POST") {
    return jobs_.start(named_tensor(r),
                       static_cast<unsigned>(number_param(r, "bins", 64, kMaxBins)));
  }
  const std::string id = text_param(r, "job");
  if (id.empty()) throw ApiError{400, "job: missing (the id POST /api/stats answered)"};
  return r.method == "DELETE" ? jobs_.cancel(id) : jobs_.status(id);
}

nlohmann::json ViewApi::api(const HttpRequest& r) {
  const std::string& path = r.path;
  if (path == "/api/stats") return stats(r);
  require_method(r, {"GET"});
  if (path == "/api/summary") {
    nlohmann::json out = summary();
    out.update(view_on_disk(model_, opened_at_));
    return out;
  }
  if (path == "/api/warnings") return warnings();
  if (path == "/api/safetensors") {
    return data_files().header(text_param(r, "file"), number_param(r, "offset", 0, UINT64_MAX),
                               number_param(r, "limit", 100, kMaxRows));
  }
  if (path == "/api/tensors") {
    TensorPageQuery q;
    q.sort = r.query.contains("sort") ? text_param(r, "sort") : "index";
    q.descending = text_param(r, "order") == "desc";
    q.filter = text_param(r, "filter");
    q.offset = number_param(r, "offset", 0, UINT64_MAX);
    q.limit = number_param(r, "limit", 100, kMaxRows);
    return tensors_.page(q);
  }
  if (path == "/api/treemap")
    return tensors_.treemap(text_param(r, "prefix"), text_param(r, "filter"));
  if (path == "/api/tensor") return tensor_detail(named_tensor(r), graph());
  if (path == "/api/values")
    return tensor_values(named_tensor(r), number_param(r, "count", 64, kMaxValues));
  if (path == "/api/heatmap") {
    return tensor_heatmap(named_tensor(r), number_param(r, "width", 256, kMaxHeatmapSide),
                          number_param(r, "height", 256, kMaxHeatmapSide));
  }
  if (path == "/api/graph") return graph_drawing(r);
  if (path == "/api/nodes" || path == "/api/node") {
    // `graph`: a subgraph's path, as /api/graph takes it; absent: the main graph.
    const std::string in = text_param(r, "graph");
    const std::shared_ptr<const NodeGraph> sub = in.empty() ? nullptr : subgraph(in);
    const NodeGraph& g = sub ? *sub : graph();
    if (path == "/api/nodes") {
      return g.search(text_param(r, "q"), number_param(r, "offset", 0, UINT64_MAX),
                      number_param(r, "limit", 100, kMaxRows));
    }
    const std::uint64_t id = number_param(r, "id", UINT64_MAX, UINT64_MAX);
    if (id >= g.size()) {
      throw ApiError{404, "no node " + text_param(r, "id") + " in " +
                              (in.empty() ? "the main graph" : "graph " + in)};
    }
    nlohmann::json out = g.node(static_cast<std::uint32_t>(id));
    out["graph"] = in;
    return out;
  }
  throw ApiError{404, "no API " + path};
}

}  // namespace onnxmap::cli::viewer
