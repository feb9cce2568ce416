// The graph page's layout (tools/onnxmap/viewer/graph_layout.hpp): Graphviz's dot as a process
// with a deadline, the column drawing where dot gives none, and the process runner under them.

#include <gtest/gtest.h>

#include <csignal>
#include <string>
#include <vector>

#include "onnxmap/error.hpp"
#include "viewer/graph_geometry.hpp"
#include "viewer/graph_layout.hpp"
#include "viewer/layout_process.hpp"

namespace viewer = onnxmap::cli::viewer;

namespace {

using Clock = std::chrono::steady_clock;

// in -> a -> b -> out and in -> out, with a and b in cluster 1 inside cluster 0.
viewer::LayoutInput clustered() {
  viewer::LayoutInput in;
  in.clusters = {{-1}, {0}};
  in.boxes = {{60, 30, -1}, {120, 40, 1}, {80, 40, 1}, {60, 30, -1}};
  in.edges = {{0, 1}, {1, 2}, {2, 3}, {0, 3}};
  return in;
}

// A `dot` that runs `script` in the shell instead (dot's "-Tjson0" its $1).
viewer::LayoutOptions fake_dot(const std::string& script, int milliseconds = 5000) {
  viewer::LayoutOptions options;
  options.dot = {"sh", "-c", script, "sh"};
  options.time_limit = std::chrono::milliseconds(milliseconds);
  return options;
}

bool inside(const viewer::Rect& a, const viewer::Rect& b) {
  return b.x <= a.x && b.y <= a.y && a.x + a.width <= b.x + b.width &&
         a.y + a.height <= b.y + b.height;
}

bool apart(const viewer::Rect& a, const viewer::Rect& b) {
  return a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y ||
         b.y + b.height <= a.y;
}

// Boxes of their sizes, apart, inside their clusters; each edge a spline through no other box.
void expect_sound(const viewer::LayoutInput& in, const viewer::LayoutResult& out) {
  ASSERT_EQ(out.boxes.size(), in.boxes.size());
  ASSERT_EQ(out.clusters.size(), in.clusters.size());
  ASSERT_EQ(out.edges.size(), in.edges.size());
  for (std::size_t b = 0; b < in.boxes.size(); ++b) {
    EXPECT_EQ(out.boxes[b].width, in.boxes[b].width);
    for (std::size_t o = b + 1; o < in.boxes.size(); ++o) {
      EXPECT_TRUE(apart(out.boxes[b], out.boxes[o])) << b << " " << o;
    }
    for (int c = in.boxes[b].cluster; c >= 0; c = in.clusters[c].parent) {
      EXPECT_TRUE(inside(out.boxes[b], out.clusters[c])) << b << " in " << c;
    }
  }
  for (const auto& curve : out.edges) EXPECT_EQ(curve.size() % 3, 1U);
  EXPECT_FALSE(viewer::first_edge_through_box(in, out).has_value());
}

TEST(Layout, DotLaysOutClustersTopToBottom) {
  const viewer::LayoutInput in = clustered();
  const viewer::LayoutResult out = viewer::layout_graph(in, {});
  EXPECT_EQ(out.note, "");
  EXPECT_NE(out.way, "column");
  expect_sound(in, out);
  EXPECT_LT(out.boxes[0].y, out.boxes[1].y);  // the edges point down
  EXPECT_LT(out.boxes[1].y, out.boxes[2].y);
  EXPECT_TRUE(inside(out.clusters[1], out.clusters[0]));
}

TEST(Layout, ColumnPutsSourcesFirstAndClustersTogether) {
  viewer::LayoutInput in = clustered();
  // Box 4, a source listed last, and box 5 of cluster 1 listed after a box outside it.
  in.boxes.push_back({50, 20, -1});
  in.boxes.push_back({50, 20, 1});
  in.edges.push_back({4, 1});
  in.edges.push_back({2, 5});
  const viewer::LayoutResult out = viewer::column_layout(in);
  EXPECT_EQ(out.way, "column");
  expect_sound(in, out);
  EXPECT_LT(out.boxes[0].y, out.boxes[4].y);  // both sources: by index
  EXPECT_LT(out.boxes[4].y, out.boxes[1].y);
  EXPECT_LT(out.boxes[5].y, out.boxes[3].y);  // cluster 1's rows before box 3's
  for (const viewer::Rect& box : out.boxes) EXPECT_LE(box.x + box.width, out.width);
}

TEST(Layout, DotPastTheDeadlineGivesTheColumn) {
  const viewer::LayoutInput in = clustered();
  const viewer::LayoutResult out = viewer::layout_graph(in, fake_dot("exec sleep 60", 100));
  EXPECT_EQ(out.way, "column");
  EXPECT_EQ(out.note,
            "Graphviz took longer than 100 ms to lay out these 4 boxes: drawn as a column");
  expect_sound(in, out);
}

TEST(Layout, DotFailingGivesTheColumnAndSaysWhy) {
  const viewer::LayoutInput in = clustered();
  const struct {
    const char* script;
    const char* note;
  } cases[] = {
      {"cat >/dev/null; echo 'Error: syntax' >&2; exit 1",
       "Graphviz's dot failed (exit status 1): Error: syntax: drawn as a column"},
      {"cat >/dev/null; kill -KILL $$",
       "Graphviz's dot ended by signal 9 (Killed): drawn as a column"},
      {"cat >/dev/null; echo '{\"bb\": \"0,0,10,10\", \"objects\": []}'",
       "Graphviz's dot answered what the viewer cannot read (dot's output: not every box and edge "
       "laid out): drawn as a column"},
  };
  for (const auto& c : cases) {
    const viewer::LayoutResult out = viewer::layout_graph(in, fake_dot(c.script));
    EXPECT_EQ(out.way, "column") << c.script;
    EXPECT_EQ(out.note, c.note);
  }
  viewer::LayoutOptions missing;
  missing.dot = {"no-such-dot-program"};
  const viewer::LayoutResult out = viewer::layout_graph(in, missing);
  EXPECT_EQ(out.note.rfind("Graphviz's dot could not be run (no-such-dot-program did not start", 0),
            0U)
      << out.note;
}

TEST(Layout, IndexOutOfRangeIsRefused) {
  viewer::LayoutInput in = clustered();
  in.edges.push_back({0, 9});
  EXPECT_THROW((void)viewer::layout_graph(in, {}), onnxmap::Error);
  in = clustered();
  in.clusters[0].parent = 1;
  EXPECT_THROW((void)viewer::column_layout(in), onnxmap::Error);
}

TEST(Process, InputAndOutputLargerThanAPipe) {
  const std::string input(3 << 20, 'x');
  const viewer::ProcessRun run =
      viewer::run_process({"cat"}, input, Clock::now() + std::chrono::seconds(60));
  EXPECT_EQ(run.end, viewer::ProcessRun::End::exited);
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.output, input);
}

TEST(Process, ExitStatusSignalAndError) {
  const auto later = Clock::now() + std::chrono::seconds(60);
  viewer::ProcessRun run = viewer::run_process({"sh", "-c", "echo oops >&2; exit 7"}, "", later);
  EXPECT_EQ(run.end, viewer::ProcessRun::End::exited);
  EXPECT_EQ(run.status, 7);
  EXPECT_EQ(run.error, "oops\n");
  run = viewer::run_process({"sh", "-c", "kill -TERM $$"}, "", later);
  EXPECT_EQ(run.end, viewer::ProcessRun::End::signalled);
  EXPECT_EQ(run.status, SIGTERM);
  // A child that exits without reading its input: no SIGPIPE here.
  run = viewer::run_process({"true"}, std::string(1 << 20, 'x'), later);
  EXPECT_EQ(run.end, viewer::ProcessRun::End::exited);
}

}  // namespace
