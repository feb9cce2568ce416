// The graph page's layout by Graphviz's dot program (graph_layout.hpp).

#include "graph_layout.hpp"

#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "graph_geometry.hpp"
#include "layout_process.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::cli::viewer {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxOrthogonal = 200;  // boxes routed orthogonally at most

std::string inches(double pixels) {
  return std::to_string(pixels / 72.0);
}

// Each cluster's boxes, and the clusters inside each (at index clusters.size(): those at the top
// level); in `flat`, none.
struct ClusterTree {
  std::vector<std::vector<std::size_t>> boxes, clusters;
};

ClusterTree cluster_tree(const LayoutInput& in, bool flat) {
  const std::size_t top = in.clusters.size();
  ClusterTree tree{std::vector<std::vector<std::size_t>>(top),
                   std::vector<std::vector<std::size_t>>(top + 1)};
  for (std::size_t c = 0; c < top && !flat; ++c) {
    const int parent = in.clusters[c].parent;
    tree.clusters[parent < 0 ? top : static_cast<std::size_t>(parent)].push_back(c);
  }
  for (std::size_t b = 0; b < in.boxes.size() && !flat; ++b) {
    const int cluster = in.boxes[b].cluster;
    if (cluster >= 0) tree.boxes[static_cast<std::size_t>(cluster)].push_back(b);
  }
  return tree;
}

// The clusters inside `at` (an index into tree), each with the names of its boxes.
void write_clusters(std::string& dot, const ClusterTree& tree, std::size_t at) {
  for (const std::size_t c : tree.clusters[at]) {
    // No label: the page draws it in the margin (and no model text reaches Graphviz).
    dot += "subgraph cluster_" + std::to_string(c) + " {\nmargin=22;\n";
    for (const std::size_t b : tree.boxes[c]) dot += "b" + std::to_string(b) + ";\n";
    write_clusters(dot, tree, c);
    dot += "}\n";
  }
}

// The DOT text of `in`, edges drawn `way` ("spline", "polyline", "ortho"), boxes in their
// clusters; or "flat": boxes all at the top level, splines, no clusters. Names: box b is `bB`,
// cluster c `cluster_C`, edge e has id `eE`.
std::string dot_text(const LayoutInput& in, std::string_view way) {
  const bool flat = way == "flat";
  std::string dot =
      "digraph scene {\nrankdir=TB;\nnodesep=0.25;\nranksep=0.4;\nnewrank=true;\nfontsize=12;\n";
  if (!flat) dot += "splines=" + std::string(way) + ";\n";
  if (in.edges.size() > 3 * in.boxes.size()) {
    // Densely wired: bound the ranking's and ordering's iterations (a level where each box reads
    // every earlier one takes dot minutes otherwise; these bring 45 such boxes from 18 s to 2).
    dot += "nslimit=1;\nnslimit1=1;\nmclimit=0.2;\n";
  }
  dot += "node [shape=box, fixedsize=true, label=\"\"];\nedge [arrowhead=none];\n";
  // The boxes made in index order (dot's first order within a rank follows it), then put in
  // their clusters.
  for (std::size_t b = 0; b < in.boxes.size(); ++b) {
    dot += "b" + std::to_string(b) + " [width=" + inches(in.boxes[b].width) +
           ", height=" + inches(in.boxes[b].height) + "];\n";
  }
  write_clusters(dot, cluster_tree(in, flat), in.clusters.size());
  for (std::size_t e = 0; e < in.edges.size(); ++e) {
    dot += "b" + std::to_string(in.edges[e].from) + " -> b" + std::to_string(in.edges[e].to) +
           " [id=e" + std::to_string(e) + "];\n";
  }
  dot += "}\n";
  return dot;
}

// dot's output is not what -Tjson0 writes: caught by run_dot, said in the note.
[[noreturn]] void unreadable(const std::string& what) {
  throw std::runtime_error("dot's output: " + what);
}

// The numbers of a dot attribute ("x,y", "llx,lly,urx,ury", an edge's "x,y x,y ..."), up to the
// first ';' (an edge's further splines); an edge's "e,x,y" and "s,x,y" (arrow ends) skipped.
std::vector<double> numbers(std::string_view text) {
  text = text.substr(0, text.find(';'));
  std::vector<double> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find(' ', at), text.size());
    std::string_view token = text.substr(at, end - at);
    at = end + 1;
    if (token.starts_with("e,") || token.starts_with("s,")) continue;
    while (!token.empty()) {
      double value = 0;
      const auto [stop, error] = std::from_chars(token.data(), token.data() + token.size(), value);
      if (error != std::errc{}) unreadable("not a number in \"" + std::string(text) + "\"");
      out.push_back(value);
      token.remove_prefix(static_cast<std::size_t>(stop - token.data()));
      if (!token.empty() && token.front() == ',') token.remove_prefix(1);
    }
  }
  return out;
}

// The index in a name such as "b12" after its `prefix`, checked against `count`.
std::optional<std::size_t> index_in(const std::string& name, std::string_view prefix,
                                    std::size_t count) {
  if (!name.starts_with(prefix)) return std::nullopt;
  std::size_t index = 0;
  const char* end = name.data() + name.size();
  const auto [stop, error] = std::from_chars(name.data() + prefix.size(), end, index);
  if (error != std::errc{} || stop != end || index >= count) unreadable("no such item " + name);
  return index;
}

// The drawing in dot's `-Tjson0` output (points, y up) as the page's (pixels, y down).
LayoutResult parse_layout(const std::string& text, const LayoutInput& in) {
  const nlohmann::json doc = nlohmann::json::parse(text);
  const std::vector<double> bb = numbers(doc.at("bb").get<std::string>());
  if (bb.size() != 4) unreadable("a bounding box of " + std::to_string(bb.size()) + " numbers");
  const auto flip = [&](double x, double y) { return Point{x - bb[0], bb[3] - y}; };
  LayoutResult out;
  out.width = bb[2] - bb[0];
  out.height = bb[3] - bb[1];
  out.boxes.resize(in.boxes.size());
  out.clusters.resize(in.clusters.size());
  out.edges.resize(in.edges.size());
  std::size_t boxes_seen = 0, edges_seen = 0;
  for (const nlohmann::json& object : doc.value("objects", nlohmann::json::array())) {
    const std::string name = object.at("name").get<std::string>();
    if (const auto c = index_in(name, "cluster_", in.clusters.size())) {
      const std::vector<double> r = numbers(object.at("bb").get<std::string>());
      if (r.size() != 4) unreadable("a cluster's bounding box");
      const Point corner = flip(r[0], r[3]);
      out.clusters[*c] = {corner.x, corner.y, r[2] - r[0], r[3] - r[1]};
    } else if (const auto b = index_in(name, "b", in.boxes.size())) {
      const std::vector<double> p = numbers(object.at("pos").get<std::string>());
      if (p.size() != 2) unreadable("a box's position");
      const Point centre = flip(p[0], p[1]);
      const LayoutBox& box = in.boxes[*b];
      out.boxes[*b] = {centre.x - box.width / 2, centre.y - box.height / 2, box.width, box.height};
      ++boxes_seen;
    }
  }
  for (const nlohmann::json& edge : doc.value("edges", nlohmann::json::array())) {
    const auto e = index_in(edge.at("id").get<std::string>(), "e", in.edges.size());
    if (!e) unreadable("an edge without its id");
    const std::vector<double> p = numbers(edge.value("pos", ""));
    for (std::size_t k = 0; k + 1 < p.size(); k += 2) out.edges[*e].push_back(flip(p[k], p[k + 1]));
    ++edges_seen;
  }
  if (boxes_seen != in.boxes.size() || edges_seen != in.edges.size()) {
    unreadable("not every box and edge laid out");
  }
  return out;
}

std::string seconds(std::chrono::milliseconds ms) {
  if (ms.count() < 1000) return std::to_string(ms.count()) + " ms";
  const auto tenths = (ms.count() + 50) / 100;
  return std::to_string(tenths / 10) + (tenths % 10 != 0 ? "." + std::to_string(tenths % 10) : "") +
         " s";
}

// Why `run` gave no drawing, for the page.
std::string why_not(const ProcessRun& run, const LayoutInput& in, const LayoutOptions& options) {
  const std::string first_line = run.error.substr(0, run.error.find('\n'));
  switch (run.end) {
    case ProcessRun::End::not_started:
      return "Graphviz's dot could not be run (" + run.error + "; Debian: apt install graphviz)";
    case ProcessRun::End::late:
      return "Graphviz took longer than " + seconds(options.time_limit) + " to lay out these " +
             std::to_string(in.boxes.size()) + " boxes";
    case ProcessRun::End::signalled:
      return "Graphviz's dot ended by signal " + std::to_string(run.status) + " (" +
             ::strsignal(run.status) + ")";
    case ProcessRun::End::exited: break;
  }
  return "Graphviz's dot failed (exit status " + std::to_string(run.status) + ")" +
         (first_line.empty() ? "" : ": " + first_line);
}

// One dot run over `in`, edges drawn `way`; nullopt with `why` set where it gave no drawing.
std::optional<LayoutResult> run_dot(const LayoutInput& in, const char* way,
                                    const LayoutOptions& options, Clock::time_point deadline,
                                    std::string& why) {
  std::vector<std::string> command = options.dot;
  command.emplace_back("-Tjson0");
  const ProcessRun run = run_process(command, dot_text(in, way), deadline);
  if (run.end != ProcessRun::End::exited || run.status != 0) {
    why = why_not(run, in, options);
    return std::nullopt;
  }
  try {
    LayoutResult out = parse_layout(run.output, in);
    out.way = way;
    return out;
  } catch (const std::exception& e) {
    why = std::string("Graphviz's dot answered what the viewer cannot read (") + e.what() + ")";
    return std::nullopt;
  }
}

}  // namespace

void check_layout_input(const LayoutInput& in) {
  for (std::size_t c = 0; c < in.clusters.size(); ++c) {
    const int parent = in.clusters[c].parent;
    if (parent >= static_cast<int>(c)) {
      throw Error(ErrorKind::invalid_argument, "layout: a cluster's parent comes after it");
    }
  }
  for (const LayoutBox& box : in.boxes) {
    if (box.cluster >= static_cast<int>(in.clusters.size())) {
      throw Error(ErrorKind::invalid_argument, "layout: a box in no such cluster");
    }
  }
  for (const LayoutEdge& edge : in.edges) {
    if (edge.from >= in.boxes.size() || edge.to >= in.boxes.size()) {
      throw Error(ErrorKind::invalid_argument, "layout: an edge to no such box");
    }
  }
}

LayoutResult layout_graph(const LayoutInput& in, const LayoutOptions& options) {
  check_layout_input(in);
  if (in.boxes.empty()) return {};
  const Clock::time_point deadline = Clock::now() + options.time_limit;
  std::optional<LayoutResult> last;
  std::string why;
  for (const char* way : {"spline", "polyline", "ortho", "flat"}) {
    if (std::string_view(way) == "ortho" && in.boxes.size() > kMaxOrthogonal) continue;
    std::optional<LayoutResult> out = run_dot(in, way, options, deadline, why);
    if (!out) break;
    if (std::string_view(way) == "flat") clusters_around_boxes(in, *out);
    last = std::move(out);
    if (in.clusters.empty() || !first_edge_through_box(in, *last)) break;
  }
  if (last) return *last;  // dot's, though a later run (with edges through no box) failed
  LayoutResult column = column_layout(in);
  column.note = why + ": drawn as a column";
  return column;
}

}  // namespace onnxmap::cli::viewer
