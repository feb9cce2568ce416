// check on hand-built graphs: scopes, SSA, topological order, opsets, functions, IR rules.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "check/checks.hpp"
#include "check_builder.hpp"

namespace onnxmap {
namespace {

using test::AP;
using test::check_bytes;
using test::findings;
using test::GP;
using test::graph;
using test::graph_attribute;
using test::model;
using test::node;
using test::NP;
using test::sub;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(CheckGraph, CleanModelPasses) {
  const auto report = check_bytes(
      model(graph({"x"}, {node({"x", "w"}, {"y"}, "Add"), node({"y", ""}, {"z", ""}, "Dropout")},
                  {"z"}, {"w"})));
  EXPECT_THAT(findings(report), IsEmpty());
  EXPECT_TRUE(report.opened);
  EXPECT_EQ(report.nodes, 2U);
  EXPECT_EQ(report.tensors, 1U);
}

TEST(CheckGraph, UndefinedInput) {
  const auto report =
      check_bytes(model(graph({"x"}, {node({"x", "nowhere"}, {"y"}, "Add")}, {"y"})));
  EXPECT_THAT(findings(report), ElementsAre("undefined_input graph.node[0].input[1]"));
  EXPECT_NE(report.problems[0].detail.find("'nowhere'"), std::string::npos);
  EXPECT_NE(report.problems[0].offset, Error::kNoOffset);
}

TEST(CheckGraph, OutOfOrderIsNotUndefined) {
  const auto report = check_bytes(
      model(graph({"x"}, {node({"a"}, {"b"}), node({"x"}, {"a"}), node({"c"}, {"c"})}, {"b"})));
  EXPECT_THAT(findings(report), ElementsAre("out_of_order graph.node[0].input[0]",
                                            "out_of_order graph.node[2].input[0]"));
  EXPECT_NE(report.problems[0].detail.find("node[1]"), std::string::npos);
  EXPECT_NE(report.problems[1].detail.find("this same node"), std::string::npos);
}

TEST(CheckGraph, DuplicateInitializerAndInput) {
  const auto report =
      check_bytes(model(graph({"x", "x"}, {node({"x", "w"}, {"y"}, "Add")}, {"y"}, {"w", "w"})));
  EXPECT_THAT(findings(report),
              ElementsAre("duplicate_name graph.input[1]", "duplicate_name graph.initializer[1]"));
}

TEST(CheckGraph, InitializerMayGiveAnInputItsDefault) {
  EXPECT_TRUE(check_bytes(model(graph({"x"}, {node({"x"}, {"y"})}, {"y"}, {"x"}))).ok());
}

TEST(CheckGraph, SsaViolations) {
  // Twice by nodes, over a graph input, over an initializer.
  const auto report = check_bytes(model(
      graph({"x"}, {node({"x"}, {"y"}), node({"x"}, {"y"}), node({"y"}, {"x"}), node({"y"}, {"w"})},
            {"y"}, {"w"})));
  EXPECT_THAT(findings(report),
              ElementsAre("ssa graph.node[1].output[0]", "ssa graph.node[2].output[0]",
                          "ssa graph.node[3].output[0]"));
}

TEST(CheckGraph, SubgraphsSeeOuterNamesDefinedBeforeTheirNode) {
  // Both branches define "t" (sibling scopes may), read outer "x" and the earlier "e".
  const auto branch = graph({}, {node({"x", "e"}, {"t"}, "Add")}, {"t"});
  const auto report =
      check_bytes(model(graph({"x", "c"},
                              {node({"x"}, {"e"}), node({"c"}, {"y"}, "If", "",
                                                        [&](wire::Writer& n) {
                                                          graph_attribute("then_branch", branch)(n);
                                                          graph_attribute("else_branch", branch)(n);
                                                        })},
                              {"y"})));
  EXPECT_THAT(findings(report), IsEmpty());
}

TEST(CheckGraph, SubgraphProblems) {
  // Reads the outer "late" (made after the If), "y" (the If's own output) and "nothing";
  // reassigns the outer "x"; its output "gone" is defined nowhere.
  const auto branch = graph({}, {node({"late", "y", "nothing"}, {"x"}, "Sum")}, {"gone"});
  const auto report = check_bytes(model(graph(
      {"x", "c"},
      {node({"c"}, {"y"}, "If", "", graph_attribute("then_branch", branch)), node({"x"}, {"late"})},
      {"y"})));
  const std::string at = "graph.node[0].attribute[0].g.";
  EXPECT_THAT(findings(report), ElementsAre("out_of_order " + at + "node[0].input[0]",
                                            "out_of_order " + at + "node[0].input[1]",
                                            "undefined_input " + at + "node[0].input[2]",
                                            "ssa " + at + "node[0].output[0]",
                                            "undefined_output " + at + "output[0]"));
  EXPECT_NE(report.problems[0].detail.find("outer graph"), std::string::npos);
}

TEST(CheckGraph, SubgraphInputsMayShadowOuterNames) {
  const auto body =
      graph({"i", "cond", "x"}, {node({"x"}, {"x2"}), node({"cond"}, {"cond2"})}, {"cond2", "x2"});
  EXPECT_TRUE(check_bytes(model(graph({"x", "m", "c"},
                                      {node({"m", "c", "x"}, {"y"}, "Loop", "",
                                            graph_attribute("body", body))},
                                      {"y"})))
                  .ok());
}

TEST(CheckGraph, ModelWithoutGraph) {
  const auto bytes = test::message([](wire::Writer& m) {
    m.field_int64(schema::ModelProto::kIrVersion, 8);
    sub(m, schema::ModelProto::kOpsetImport, test::opset("", 17));
  });
  EXPECT_THAT(findings(check_bytes(bytes)), ElementsAre("structure graph"));
}

TEST(CheckGraph, UndefinedGraphOutput) {
  EXPECT_THAT(findings(check_bytes(model(graph({"x"}, {node({"x"}, {"y"})}, {"y", "q"})))),
              ElementsAre("undefined_output graph.output[1]"));
}

TEST(CheckGraph, Opsets) {
  const auto g =
      graph({"x"},
            {node({"x"}, {"a"}, "Foo", "com.example"), node({"a"}, {"b"}, "Foo", "com.example"),
             node({"b"}, {"c"}, "Relu", "ai.onnx")},
            {"c"});
  // "ai.onnx" and "" are the same operator set; com.example is missing, reported once.
  const auto report = check_bytes(model(g, 8, {{"", 17}}));
  EXPECT_THAT(findings(report), ElementsAre("missing_opset graph.node[0].domain"));
  EXPECT_NE(report.problems[0].detail.find("2 nodes"), std::string::npos);
  EXPECT_TRUE(check_bytes(model(g, 8, {{"ai.onnx", 17}, {"com.example", 1}})).ok());
  EXPECT_THAT(findings(check_bytes(model(graph({"x"}, {}, {"x"}), 8, {}))),
              ElementsAre("missing_opset opset_import"));
}

// Both spellings of the default operator set are one domain: without its import, nodes of ""
// and of "ai.onnx" are one problem, named as the default domain.
TEST(CheckGraph, DefaultDomainIsOneDomain) {
  const auto g =
      graph({"x"}, {node({"x"}, {"a"}, "Relu", ""), node({"a"}, {"b"}, "Relu", "ai.onnx")}, {"b"});
  const auto report = check_bytes(model(g, 8, {{"com.example", 1}}));
  EXPECT_THAT(findings(report), ElementsAre("missing_opset graph.node[0].domain"));
  EXPECT_NE(report.problems[0].detail.find("the default domain (ai.onnx)"), std::string::npos)
      << report.problems[0].detail;
  EXPECT_NE(report.problems[0].detail.find("2 nodes"), std::string::npos)
      << report.problems[0].detail;
  static_assert(is_default_domain("") && is_default_domain("ai.onnx"));
  static_assert(!is_default_domain("ai.onnx.ml") && !is_default_domain("com.microsoft"));
  static_assert(domain_name("") == "ai.onnx" && domain_name("com.microsoft") == "com.microsoft");
}

// value_producers: the first node making each value; an omitted optional output is no value.
TEST(CheckGraph, ValueProducers) {
  const auto bytes = model(graph({"x"},
                                 {node({"x"}, {"a", ""}, "Split"), node({"a"}, {"b"}),
                                  node({"x"}, {"a"}), node({"b"}, {"", "c"}, "Split")},
                                 {"c"}));
  const Model m = Model::from_bytes(bytes);
  const auto producers = detail::value_producers(m.graph()->nodes());
  EXPECT_EQ(producers.size(), 3U);
  EXPECT_EQ(producers.at("a"), 0U);
  EXPECT_EQ(producers.at("b"), 1U);
  EXPECT_EQ(producers.at("c"), 3U);
  EXPECT_FALSE(producers.contains(""));
}

TEST(CheckGraph, Functions) {
  using FP = schema::FunctionProto;
  const auto function = [](std::string name, std::vector<test::Body> nodes, bool imports) {
    return [=](wire::Writer& m) {
      sub(m, schema::ModelProto::kFunctions, [&](wire::Writer& f) {
        f.field_string(FP::kName, name);
        f.field_string(FP::kDomain, "local");
        f.field_string(FP::kInput, "a");
        f.field_string(FP::kOutput, "b");
        for (const auto& n : nodes) sub(f, FP::kNode, n);
        if (imports) sub(f, FP::kOpsetImport, test::opset("", 17));
      });
    };
  };
  const auto g = graph({"x"}, {node({"x"}, {"y"}, "F", "local")}, {"y"});
  const test::Opsets opsets{{"", 17}, {"local", 1}};
  EXPECT_TRUE(check_bytes(model(g, 8, opsets, function("F", {node({"a"}, {"b"})}, true))).ok());
  const auto report = check_bytes(model(g, 8, opsets, [&](wire::Writer& m) {
    function("F", {node({"q"}, {"b"})}, true)(m);
    function("F", {node({"a"}, {"b"})}, false)(m);
  }));
  EXPECT_THAT(findings(report), ElementsAre("undefined_input functions[0].node[0].input[0]",
                                            "duplicate_function functions[1]",
                                            "missing_opset functions[1].node[0].domain"));
}

TEST(CheckGraph, FieldsAndTypesNewerThanTheIrVersion) {
  const auto float8 = [](std::string name) {
    return [=](wire::Writer& g) {
      sub(g, GP::kInitializer,
          test::raw_tensor(name, DataType::float8e4m3fn, {1}, {std::byte{0x38}}));
    };
  };
  const auto g = graph({"x"},
                       {node({"x"}, {"y"}, "Identity", "",
                             [](wire::Writer& n) {
                               n.field_string(NP::kOverload, "fast");
                               sub(n, NP::kMetadataProps, [](wire::Writer& e) {
                                 e.field_string(schema::StringStringEntryProto::kKey, "k");
                               });
                             })},
                       {"y"}, {}, [&](wire::Writer& gw) {
                         float8("f1")(gw);
                         float8("f2")(gw);
                       });
  const auto report = check_bytes(model(g, 8));
  EXPECT_THAT(findings(report), ElementsAre("ir_version graph.node[0].overload",
                                            "ir_version graph.node[0].metadata_props",
                                            "ir_version graph.initializer[0].data_type"));
  EXPECT_NE(report.problems[2].detail.find("FLOAT8E4M3FN needs IR version 9"), std::string::npos);
  EXPECT_NE(report.problems[2].detail.find("2 places"), std::string::npos);
  EXPECT_TRUE(check_bytes(model(g, 10)).ok());
  // INT4 is IR 10, FLOAT4E2M1 IR 11.
  const auto typed = [](DataType type) {
    return graph({}, {}, {"t"}, {}, [=](wire::Writer& gw) {
      sub(gw, GP::kInitializer, test::raw_tensor("t", type, {2}, {std::byte{0x21}}));
    });
  };
  EXPECT_TRUE(check_bytes(model(typed(DataType::int4), 10)).ok());
  EXPECT_THAT(findings(check_bytes(model(typed(DataType::float4e2m1), 10))),
              ElementsAre("ir_version graph.initializer[0].data_type"));
}

TEST(CheckGraph, IrVersionRulesOfEarlyVersions) {
  // IR 1-3: initializers must be graph inputs too.
  const auto g = graph({"x", "w"}, {node({"x", "w", "v"}, {"y"}, "Sum")}, {"y"}, {"w", "v"});
  EXPECT_THAT(findings(check_bytes(model(g, 3))), ElementsAre("ir_version graph.initializer[1]"));
  EXPECT_TRUE(check_bytes(model(g, 4)).ok());
  // No ir_version at all: one problem, not one per field.
  EXPECT_THAT(findings(check_bytes(model(g, 0))), ElementsAre("ir_version ir_version"));
  // IR 2 on: every attribute says its type.
  const auto untyped = graph({"x"},
                             {node({"x"}, {"y"}, "Foo", "",
                                   [](wire::Writer& n) {
                                     sub(n, NP::kAttribute, [](wire::Writer& a) {
                                       a.field_string(AP::kName, "alpha");
                                       a.field_float(AP::kF, 0.5F);
                                     });
                                   })},
                             {"y"});
  EXPECT_THAT(findings(check_bytes(model(untyped, 8))),
              ElementsAre("ir_version graph.node[0].attribute[0].type"));
}

}  // namespace
}  // namespace onnxmap
