// Cuts in a large graph are guessed (lib/index/run_guess.hpp) and checked by the scan of the run
// before each cut. A guess finds the next node where the bytes are what they seem, can be fooled
// by strings that look like a run of nodes, and a fooled guess leaves the index and its errors
// exactly what one thread builds.

#include <gtest/gtest.h>

#include <string>

#include "fuzz/index_compare.hpp"
#include "index/field_roles.hpp"
#include "index/run_guess.hpp"
#include "model_builder.hpp"

namespace onnxmap::test {
namespace {

using GP = schema::GraphProto;
using MP = schema::ModelProto;
using NP = schema::NodeProto;
using AP = schema::AttributeProto;

// Eight empty nodes, as a graph's bytes: what a guess takes for a run of the graph's fields.
std::string fake_run() {
  std::string run;
  for (int i = 0; i < 8; ++i) run += std::string("\x0A\x00", 2);
  return run;
}

// A graph of `nodes` nodes, all of one size; with `deceptive`, each node's name is a fake run of
// nodes.
// `malformed_at` (if below `nodes`) gets an attribute whose length runs past its end.
std::vector<std::byte> graph_model(std::size_t nodes, bool deceptive,
                                   std::size_t malformed_at = SIZE_MAX) {
  return message([&](wire::Writer& m) {
    m.field_int64(MP::kIrVersion, 8);
    sub(m, MP::kGraph, [&](wire::Writer& g) {
      for (std::size_t i = 0; i < nodes; ++i) {
        const std::string id = std::to_string(100000 + i);  // six digits
        sub(g, GP::kNode, [&](wire::Writer& n) {
          n.field_string(NP::kInput, "x" + id);
          n.field_string(NP::kOutput, "y" + id);
          n.field_string(NP::kName, deceptive ? fake_run() : "n" + id);
          n.field_string(NP::kOpType, "Relu");
          if (i == malformed_at) {
            n.field_len_header(NP::kAttribute, 3);
            n.field_varint(AP::kI, 1);
          }
        });
      }
    });
  });
}

// The graph's payload in `model` (its one field of ModelProto after ir_version).
struct GraphBytes {
  const std::byte* begin;
  const std::byte* end;
};
GraphBytes graph_of(const std::vector<std::byte>& model) {
  const std::byte* pos = model.data() + 2;  // ir_version: tag and a one-byte value
  EXPECT_EQ(static_cast<unsigned>(pos[0]), (MP::kGraph << 3U) | 2U);
  std::size_t at = 1;
  const std::uint64_t length = wire::read_varint(
      wire::Bytes(pos, static_cast<std::size_t>(model.data() + model.size() - pos)), at, 0);
  return {pos + at, pos + at + length};
}

std::uint64_t graph_message_fields() {
  return detail::FieldActions::get().message_fields(schema::MessageKind::GraphProto, false);
}

TEST(RunGuess, FindsTheNextNodeInAPlainGraph) {
  const std::vector<std::byte> model = graph_model(100, false);
  const GraphBytes graph = graph_of(model);
  // Node 10 starts where ten nodes of the same layout end; any byte inside node 9 guesses it.
  const std::size_t node_size = static_cast<std::size_t>(graph.end - graph.begin) / 100;
  for (std::size_t inside = 1; inside < node_size; ++inside) {
    const std::byte* guess = detail::guess_field_start(graph.begin + 9 * node_size + inside,
                                                       graph.end, graph_message_fields());
    ASSERT_NE(guess, nullptr) << inside;
    // A start the walk from node 0 reaches: a whole number of nodes in.
    EXPECT_EQ(static_cast<std::size_t>(guess - graph.begin) % node_size, 0U) << inside;
  }
}

TEST(RunGuess, NothingInPayloadBytes) {
  std::vector<std::byte> noise(100000);
  std::uint32_t state = 1;
  for (std::byte& b : noise) {
    state = state * 1664525U + 1013904223U;
    b = std::byte(state >> 24U);
  }
  for (std::size_t from = 0; from + detail::kRunGuessWindow < noise.size();
       from += detail::kRunGuessWindow) {
    EXPECT_EQ(detail::guess_field_start(noise.data() + from, noise.data() + noise.size(),
                                        graph_message_fields()),
              nullptr)
        << from;
  }
}

// However the bytes are made, a guess steps over at most kRunGuessSteps fields: here eight
// nodes of 10 000 fields each, a true run, are left to the exact stepping.
TEST(RunGuess, StepsOverBoundedFields) {
  const std::vector<std::byte> run = message([](wire::Writer& g) {
    for (int node = 0; node < 8; ++node) {
      sub(g, GP::kNode, [](wire::Writer& n) {
        for (int i = 0; i < 10000; ++i) n.field_varint(AP::kI, 0);  // two bytes each
      });
    }
  });
  EXPECT_EQ(detail::guess_field_start(run.data(), run.data() + run.size(), graph_message_fields()),
            nullptr);
}

TEST(RunGuess, IsFooledByNamesThatLookLikeNodes) {
  const std::vector<std::byte> model = graph_model(100, true);
  const GraphBytes graph = graph_of(model);
  const std::string run = fake_run();
  const auto* name = reinterpret_cast<const std::byte*>(run.data());
  // From node 0's first byte on, the first position that looks like a run is inside its name.
  const std::byte* guess =
      detail::guess_field_start(graph.begin + 1, graph.end, graph_message_fields());
  ASSERT_NE(guess, nullptr);
  EXPECT_TRUE(std::equal(name, name + run.size(), guess));
}

TEST(RunGuess, FooledGuessesLeaveTheIndexAndErrorsAsOneThreadBuildsThem) {
  const std::vector<std::byte> deceptive = graph_model(20000, true);
  const std::vector<std::byte> malformed = graph_model(20000, true, 12345);
  for (const unsigned threads : {2U, 3U, 8U}) {
    EXPECT_EQ(fuzz::compare_thread_counts(deceptive, {}, schema::MessageKind::ModelProto, threads),
              "");
    EXPECT_EQ(fuzz::compare_thread_counts(malformed, {}, schema::MessageKind::ModelProto, threads),
              "");
  }
}

}  // namespace
}  // namespace onnxmap::test
