// The graph page's folding rules on names and on small graphs (tools/onnxmap/viewer/
// fold_rules.hpp): scopes and labels, which nodes are drawn inside another (weight preparation,
// an Identity, quantization plumbing), the paths nodes fold by, the drawn nodes' edges.

#include "viewer/fold_rules.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fold_test_graph.hpp"

namespace onnxmap::cli::viewer {
namespace {

std::string_view scope_of(std::string_view name, std::string_view op) {
  return name.substr(0, scope_length(name, op));
}

std::vector<std::uint32_t> guests(const FoldGraph& graph, std::uint32_t id) {
  const auto span = graph.guests(id);
  return {span.begin(), span.end()};
}

TEST(FoldNames, ScopeIsTheNameLessItsLabelAndTheOpTypeBeforeIt) {
  EXPECT_EQ(scope_of("p2o.Conv.12", "Conv"), "p2o.");
  EXPECT_EQ(scope_of("Conv_123", "Conv"), "");
  EXPECT_EQ(scope_of("/stage1/conv_s1/Conv_output_0", "Conv"), "/stage1/conv_s1/");
  EXPECT_EQ(scope_of("model/conv2d/Conv2D__6", "Conv2D"), "model/conv2d/");
  EXPECT_EQ(scope_of("model.layers.0.mlp.MatMul", "MatMul"), "model.layers.0.mlp.");
  EXPECT_EQ(scope_of("", "Relu"), "");
}

TEST(FoldNames, TellingScopesSayWhereInTheModel) {
  EXPECT_TRUE(telling_scope("model.layers.0."));
  EXPECT_TRUE(telling_scope("model/conv2d/"));
  EXPECT_TRUE(telling_scope("/conv_in/"));
  EXPECT_FALSE(telling_scope("p2o."));
  EXPECT_FALSE(telling_scope("conv2d_450."));
  EXPECT_FALSE(telling_scope(""));
}

TEST(FoldNames, CommonScopeEndsAtASegmentOfBoth) {
  EXPECT_EQ(common_scope("a.b.c", "a.b.d"), "a.b.");
  EXPECT_EQ(common_scope("a.bc", "a.bd"), "a.");
  EXPECT_EQ(common_scope("x/y", "z/y"), "");
  EXPECT_EQ(leaf_segment("Relu.3/x"),
            "Relu\x1f"
            "3\x1fx");
}

TEST(FoldNames, SummaryRanksComputationFirstAndPlumbingLast) {
  EXPECT_EQ(summary_rank("", "MatMul"), 0);
  EXPECT_EQ(summary_rank("com.microsoft", "MultiHeadAttention"), 0);
  EXPECT_EQ(summary_rank("", "LSTM"), 0);
  EXPECT_EQ(summary_rank("", "Relu"), 1);
  EXPECT_EQ(summary_rank("", "Shape"), 2);
  EXPECT_EQ(summary_rank("ai.onnx", "Reshape"), 2);
  EXPECT_EQ(summary_rank("custom", "Shape"), 1);  // plumbing is ONNX's own
  EXPECT_TRUE(quantize_op("", "QuantizeLinear"));
  EXPECT_TRUE(quantize_op("com.microsoft", "DequantizeLinear"));
  EXPECT_FALSE(quantize_op("custom", "QuantizeLinear"));
  EXPECT_TRUE(quantized_op("", "QLinearConv"));
  EXPECT_TRUE(quantized_op("", "MatMulInteger"));
  EXPECT_FALSE(quantized_op("", "MatMul"));
}

TEST(FoldPaths, ANamedNodeFoldsByItsNameAndACounterIsALabel) {
  TestGraph t;
  t.input("x").output("y").output("z").output("u");
  t.node({"MatMul", "model.layers.0.mlp.MatMul", {"x", "w"}, {"y"}});
  t.node({"Conv", "Conv_12", {"x"}, {"z"}});
  t.node({"Relu", "p2o.Relu.3", {"x"}, {"u"}});
  const FoldGraph& g = t.finish();
  EXPECT_EQ(g.path(0), "model.layers.0.mlp.MatMul");
  EXPECT_EQ(g.label(0), "MatMul");
  EXPECT_EQ(g.path(1), "Conv_12");
  EXPECT_EQ(g.label(1), "Conv_12");
  EXPECT_EQ(g.path(2),
            "p2o.Relu\x1f"
            "3");  // the label stays one segment
  EXPECT_EQ(g.label(2), "Relu.3");
}

TEST(FoldPaths, UnnamedNodesTakeTheirOutputsScopeThenTheirReaders) {
  TestGraph t;
  t.input("x").output("y").output("v");
  t.node({"Relu", "", {"x"}, {"/enc/a/Relu_output_0"}});  // its output's scope
  t.node({"Neg", "", {"/enc/a/Relu_output_0"}, {"t"}});   // its reader's
  t.node({"Mul", "/enc/b/Mul", {"t", "u"}, {"y"}});
  t.node({"Neg", "", {"x"}, {"u"}});  // reads only the graph's input: starts the graph
  t.node({"Add", "/enc/c/Add", {"u", "x"}, {"v"}});
  const FoldGraph& g = t.finish();
  EXPECT_EQ(g.path(0), "/enc/a/Relu#0");
  EXPECT_EQ(g.path(1), "/enc/b/Neg#1");
  EXPECT_EQ(g.path(3), "Neg#3");
  EXPECT_EQ(g.key(3), "Neg#3");
}

TEST(FoldPaths, AFlatNameFoldsByItsModulePath) {
  TestGraph t;
  t.input("x").output("y").output("z");
  t.node({"MatMul", "node_MatMul_12", {"x", "w"}, {"y"}, "model.layers.0.mlp."});
  t.node({"Relu", "model.norm.Relu", {"x"}, {"z"}, "ignored."});  // its name tells already
  const FoldGraph& g = t.finish();
  EXPECT_EQ(g.path(0), "model.layers.0.mlp.node_MatMul_12");
  EXPECT_EQ(g.label(0), "node_MatMul_12");
  EXPECT_EQ(g.path(1), "model.norm.Relu");
}

TEST(FoldPaths, KeysAndPathsAreUnique) {
  TestGraph t;
  t.input("x").output("a").output("b").output("c");
  t.node({"Relu", "same", {"x"}, {"a"}});
  t.node({"Relu", "same", {"x"}, {"b"}});    // a name taken: its key is made
  t.node({"Relu", "Relu#1", {"x"}, {"c"}});  // spelled as that key would be
  const FoldGraph& g = t.finish();
  EXPECT_EQ(g.key(0), "same");
  EXPECT_EQ(g.key(1), "Relu#1'");
  EXPECT_EQ(g.key(2), "Relu#1");
  EXPECT_NE(g.path(0), g.path(1));
}

// x -> MatMul(x, Transpose(w)) -> Identity -> Relu -> y, and a second MatMul reading the same
// prepared weight.
TEST(FoldHosts, WeightPreparationIsDrawnInsideItsReaders) {
  TestGraph t;
  t.input("x").initializer("w").output("y").output("c");
  t.node({"Transpose", "t", {"w"}, {"wt"}});
  t.node({"MatMul", "mm", {"x", "wt"}, {"a"}});
  t.node({"Identity", "id", {"a"}, {"b"}});
  t.node({"Relu", "relu", {"b"}, {"y"}});
  t.node({"MatMul", "mm2", {"x", "wt"}, {"c"}});
  const FoldGraph& g = t.finish();
  EXPECT_TRUE(g.parameter(0));
  EXPECT_FALSE(g.parameter(1));
  EXPECT_EQ(g.host(0), 1U);  // its first reader
  EXPECT_EQ(g.host(2), 3U);  // an Identity inside its one reader
  EXPECT_TRUE(g.drawn(1) && g.drawn(3) && g.drawn(4));
  EXPECT_EQ(guests(g, 1), std::vector<std::uint32_t>{0});
  EXPECT_EQ(guests(g, 3), std::vector<std::uint32_t>{2});
  EXPECT_EQ(guests(g, 4), std::vector<std::uint32_t>{0});  // shared, hosted by mm
  // A shared weight wires its readers to nothing: mm feeds relu (through the Identity) only.
  const auto next = g.successors(1);
  EXPECT_EQ(std::vector<std::uint32_t>(next.begin(), next.end()), std::vector<std::uint32_t>{3});
  EXPECT_TRUE(g.successors(4).empty());
}

TEST(FoldHosts, AParameterThatIsAGraphOutputIsDrawnAsABox) {
  TestGraph t;
  t.input("x").initializer("w").output("wt");
  t.node({"Transpose", "t", {"w"}, {"wt"}});  // a graph output: drawn as a box
  t.node({"MatMul", "mm", {"x", "wt"}, {"y"}});
  const FoldGraph& g = t.finish();
  EXPECT_FALSE(g.parameter(0));
  EXPECT_TRUE(g.drawn(0));
}

TEST(FoldHosts, QuantizationOfAnActivationIsDrawnInsideItsMaker) {
  TestGraph t;
  t.input("x").initializer("scale").initializer("zero").initializer("w").output("y");
  t.node({"Relu", "relu", {"x"}, {"r"}});
  t.node({"QuantizeLinear", "q", {"r", "scale", "zero"}, {"q"}});
  t.node({"DequantizeLinear", "dq", {"q", "scale", "zero"}, {"d"}});
  t.node({"Conv", "conv", {"d", "w"}, {"y"}});
  const FoldGraph& g = t.finish();
  EXPECT_EQ(g.host(1), 0U);
  EXPECT_EQ(g.host(2), 0U);  // through its QuantizeLinear
  EXPECT_EQ(guests(g, 0), (std::vector<std::uint32_t>{1, 2}));
  const auto next = g.successors(0);
  EXPECT_EQ(std::vector<std::uint32_t>(next.begin(), next.end()), std::vector<std::uint32_t>{3});
}

TEST(FoldGraphs, ASubgraphsOuterValuesAreItsInputs) {
  TestGraph t;
  t.output("y");
  t.node({"Add", "add", {"outer_a", "outer_b"}, {"y"}});
  const FoldGraph& g = t.finish(true);
  EXPECT_EQ(g.graph_inputs(), (std::vector<std::string_view>{"outer_a", "outer_b"}));
  EXPECT_TRUE(g.outer(g.find_value("outer_a")));
  EXPECT_EQ(g.graph_input_reads(0), 2U);
}

TEST(FoldGraphs, AnOrderOfTheGraphsOwnIsKeptAndAnotherOneSorted) {
  TestGraph t;
  t.input("x").output("y");
  t.node({"Relu", "second", {"a"}, {"y"}});  // reads what the next node makes
  t.node({"Neg", "first", {"x"}, {"a"}});
  const FoldGraph& g = t.finish();
  EXPECT_EQ(g.position(1), 0U);
  EXPECT_EQ(g.position(0), 1U);
}

}  // namespace
}  // namespace onnxmap::cli::viewer
