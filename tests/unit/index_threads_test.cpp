// The indexing pass builds the same index on any number of threads (lib/index/build.cpp): the
// same tables byte for byte, or the same error (kind, message, path, offset), with the limits
// holding exactly. Checked for 1, 2, 3 and 8 threads on synthetic models, hand-built models
// with problems placed at every depth, the fixtures and the onnx backend corpus.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "fuzz/index_compare.hpp"
#include "index/model_index.hpp"
#include "model_builder.hpp"
#include "io/mapped_file.hpp"
#include "onnxmap/onnxmap.hpp"
#include "write/synth.hpp"
#include "test_support.hpp"

namespace onnxmap::test {
namespace {

using GP = schema::GraphProto;
using MP = schema::ModelProto;
using NP = schema::NodeProto;
using AP = schema::AttributeProto;
using TP = schema::TensorProto;

constexpr unsigned kThreadCounts[] = {2, 3, 8};

void expect_same(std::span<const std::byte> bytes, const OpenOptions& options = {},
                 const std::string& what = "") {
  for (const unsigned threads : kThreadCounts) {
    EXPECT_EQ(fuzz::compare_thread_counts(bytes, options, schema::MessageKind::ModelProto, threads),
              "")
        << what;
  }
}

void expect_same_file(const std::filesystem::path& path, const OpenOptions& options = {}) {
  for (const unsigned threads : kThreadCounts) {
    EXPECT_EQ(fuzz::compare_thread_counts(path, options, threads), "") << path;
  }
}

// A graph of `nodes` nodes (each with an attribute every third node, a Constant with a tensor
// every seventh), `nodes / 2` initializers and value infos; `edit` may add to or replace node i.
using NodeEdit = std::function<bool(std::size_t i, wire::Writer& graph)>;
std::vector<std::byte> big_model(std::size_t nodes, const NodeEdit& edit = {}) {
  return message([&](wire::Writer& m) {
    m.field_int64(MP::kIrVersion, 8);
    sub(m, MP::kGraph, [&](wire::Writer& g) {
      g.field_string(GP::kName, "big");
      for (std::size_t i = 0; i < nodes; ++i) {
        if (edit && edit(i, g)) continue;
        sub(g, GP::kNode, [&](wire::Writer& n) {
          const std::string id = std::to_string(i);
          n.field_string(NP::kInput, "x" + id);
          n.field_string(NP::kOutput, "y" + id);
          n.field_string(NP::kOpType, i % 7 == 0 ? "Constant" : "Relu");
          if (i % 3 == 0) {
            sub(n, NP::kAttribute, [&](wire::Writer& a) {
              a.field_string(AP::kName, "alpha");
              a.field_float(AP::kF, 0.5F);
              a.field_int32(AP::kType, 1);
            });
          }
          if (i % 7 == 0) {
            sub(n, NP::kAttribute, [&](wire::Writer& a) {
              a.field_string(AP::kName, "value");
              sub(a, AP::kT, raw_tensor("", DataType::float32, {1}, float_bytes({1.0F})));
            });
          }
        });
      }
      for (std::size_t i = 0; i < nodes / 2; ++i) {
        sub(g, GP::kInitializer,
            raw_tensor("w" + std::to_string(i), DataType::float32, {2}, float_bytes({1, 2})));
      }
      for (std::size_t i = 0; i < nodes / 2; ++i) {
        sub(g, GP::kValueInfo,
            tensor_value_info("v" + std::to_string(i), DataType::float32, {-1, 4}));
      }
    });
  });
}

TEST(IndexThreads, SameIndexOnBigGraphs) {
  expect_same(big_model(3000));
  OpenOptions collect;
  collect.collect_payload_errors = true;
  expect_same(big_model(3000), collect);
  OpenOptions metadata_limits;
  metadata_limits.max_depth = 3;  // attributes' tensors are at depth 5: a depth error
  expect_same(big_model(3000), metadata_limits);
}

// Tensors of one name written by different threads: the name table chains them in id order
// whatever the number of threads (the scan hands it their name hashes by tensor id).
TEST(IndexThreads, RepeatedNamesChainInOrder) {
  constexpr std::size_t kEvery = 100;
  const std::vector<std::byte> bytes = big_model(3000, [](std::size_t i, wire::Writer& g) {
    if (i % kEvery == 0) {
      sub(g, GP::kInitializer, raw_tensor("shared", DataType::uint8, {1}, {std::byte{1}}));
    }
    return false;
  });
  expect_same(bytes);
  const auto index = detail::build_index(MappedFile::from_bytes(bytes), "big.onnx", {},
                                         schema::MessageKind::ModelProto, {});
  std::size_t chained = 0;
  std::uint32_t last = 0;
  for (std::uint32_t id = index->find_tensor("shared"); id != detail::kNone;
       id = index->tensors[id].next_same_name) {
    EXPECT_EQ(index->tensors[id].name, "shared");
    if (chained > 0) {
      EXPECT_GT(id, last);
    }
    last = id;
    ++chained;
  }
  EXPECT_EQ(chained, 3000 / kEvery);
}

TEST(IndexThreads, SameErrorsWhereverTheProblemIs) {
  for (const std::size_t at : {0UL, 1UL, 999UL, 1500UL, 2999UL}) {
    // A malformed attribute (a length past its end) in node `at`.
    expect_same(big_model(3000,
                          [at](std::size_t i, wire::Writer& g) {
                            if (i != at) return false;
                            sub(g, GP::kNode, [](wire::Writer& n) {
                              n.field_string(NP::kOpType, "Relu");
                              n.field_len_header(NP::kAttribute, 3);
                              n.field_varint(AP::kI, 1);
                            });
                            return true;
                          }),
                {}, "malformed attribute at " + std::to_string(at));
    // A negative dimension in an initializer placed among the nodes, and a tensor whose raw_data
    // does not fit its dims; with collect_payload_errors both are listed instead.
    const auto bad_tensors = [at](std::size_t i, wire::Writer& g) {
      if (i == at) sub(g, GP::kInitializer, [](wire::Writer& t) { t.field_int64(TP::kDims, -2); });
      if (i == at + 7) {
        sub(g, GP::kInitializer, raw_tensor("short", DataType::float32, {4}, float_bytes({1})));
      }
      return false;
    };
    expect_same(big_model(3000, bad_tensors), {}, "bad tensor at " + std::to_string(at));
    OpenOptions collect;
    collect.collect_payload_errors = true;
    expect_same(big_model(3000, bad_tensors), collect, "collected at " + std::to_string(at));
  }
}

TEST(IndexThreads, LimitsHoldExactly) {
  const std::vector<std::byte> bytes = big_model(2000);
  const auto index = detail::build_index(MappedFile::from_bytes(bytes), "big.onnx", {},
                                         schema::MessageKind::ModelProto, {});
  // Every node, attribute, tensor, value info, the graph and the model.
  const std::uint64_t records = index->messages.size();
  for (const std::uint64_t limit : {records - 1, records, records + 1, records / 2}) {
    OpenOptions options;
    options.max_messages = limit;
    expect_same(bytes, options, "max_messages " + std::to_string(limit));
  }
  const std::uint64_t tensors = index->tensors.size();
  for (const std::uint64_t limit : {tensors - 1, tensors, tensors + 1, tensors / 3}) {
    OpenOptions options;
    options.max_tensors = limit;
    expect_same(bytes, options, "max_tensors " + std::to_string(limit));
  }
  for (const int depth : {1, 2, 3, 4, 5}) {
    OpenOptions options;
    options.max_depth = depth;
    expect_same(bytes, options, "max_depth " + std::to_string(depth));
  }
}

TEST(IndexThreads, FieldsOutOfOrderAndMergedMessages) {
  // Nodes and initializers interleaved: a split graph's children are sorted after the merge.
  expect_same(big_model(2000, [](std::size_t i, wire::Writer& g) {
    if (i % 5 == 0) {
      sub(g, GP::kInitializer,
          raw_tensor("early" + std::to_string(i), DataType::uint8, {1}, {std::byte{1}}));
    }
    return false;
  }));
  // One initializer among the nodes: out of order inside one run, whose ends are in order.
  for (const std::size_t at : {700UL, 1000UL, 1300UL}) {
    expect_same(big_model(2000, [at](std::size_t i, wire::Writer& g) {
      if (i == at) {
        sub(g, GP::kInitializer, raw_tensor("mid", DataType::uint8, {1}, {std::byte{1}}));
      }
      return false;
    }));
  }
  // The model's graph given twice (merged, as protobuf does), around other fields.
  const std::vector<std::byte> one = big_model(500);
  std::vector<std::byte> twice = one;
  twice.insert(twice.end(), one.begin(), one.end());
  expect_same(twice);
}

class IndexThreadsFiles : public TempFolder {};

TEST_F(IndexThreadsFiles, SyntheticModels) {
  SynthOptions heavy;  // graph-heavy's shape, smaller: 5.7 MB, 36 000 nodes
  heavy.layers = 2000;
  heavy.hidden = 4;
  heavy.vocab = 16;
  (void)synth(at("heavy.onnx"), heavy);
  expect_same_file(at("heavy.onnx"));
  SynthOptions external;  // external tensors: only the serial scan opens data files
  external.layers = 40;
  external.hidden = 32;
  external.external_data = true;
  (void)synth(at("external.onnx"), external);
  expect_same_file(at("external.onnx"));
  OpenOptions collect;
  collect.collect_payload_errors = true;
  expect_same_file(at("external.onnx"), collect);
  // Default options pick the thread count (every core for a file this size): the same index.
  EXPECT_EQ(OpenOptions{}.threads, 0U);
  EXPECT_EQ(fuzz::compare_thread_counts(at("heavy.onnx"), {}, 0), "");
}

// The pass says how it ran: a level the threads scanned counts as such, and a level they could
// not finish (here: external data files, which only the one-thread scan opens) is counted as
// scanned again, and leaves every level below it to one thread.
TEST_F(IndexThreadsFiles, PassCountsLevelsOnThreadsAndScannedAgain) {
  SynthOptions heavy;  // a 5.7 MB graph of 36 000 nodes: worth the threads at its two big levels
  heavy.layers = 2000;
  heavy.hidden = 4;
  heavy.vocab = 16;
  (void)synth(at("heavy.onnx"), heavy);
  OpenOptions two;
  two.threads = 2;
  const IndexPassStats on_threads = Model::open(at("heavy.onnx"), two).index_pass();
  EXPECT_EQ(on_threads.threads, 2U);
  EXPECT_GE(on_threads.pool_levels, 1U);
  EXPECT_EQ(on_threads.serial_rescans, 0U);
  const IndexPassStats one = Model::open(at("heavy.onnx"), OpenOptions{.threads = 1}).index_pass();
  EXPECT_EQ(one.threads, 1U);
  EXPECT_EQ(one.pool_levels, 0U);

  SynthOptions external;
  external.layers = 40;
  external.hidden = 32;
  external.external_data = true;
  (void)synth(at("external.onnx"), external);
  const fuzz::PoolEverywhere pool;  // this small file's levels go to the threads too
  const IndexPassStats rescanned = Model::open(at("external.onnx"), two).index_pass();
  EXPECT_EQ(rescanned.threads, 2U);
  EXPECT_EQ(rescanned.serial_rescans, 1U);
}

// Every .onnx file under `folder`.
std::vector<std::filesystem::path> models_under(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(folder)) {
    if (entry.is_regular_file() && entry.path().extension() == ".onnx") out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(IndexThreads, Corpus) {
  const char* corpus = std::getenv("ONNXMAP_CORPUS");
  if (corpus == nullptr || !std::filesystem::is_directory(corpus)) {
    GTEST_SKIP() << "no onnx backend corpus (ONNXMAP_CORPUS)";
  }
  const std::vector<std::filesystem::path> models = models_under(corpus);
  EXPECT_GT(models.size(), 100U);
  for (const auto& path : models) expect_same_file(path);
}

TEST_F(IndexThreadsFiles, Fixtures) {
  const char* script = std::getenv("ONNXMAP_FIXTURES_SCRIPT");
  if (script == nullptr) GTEST_SKIP() << "no fixture script (ONNXMAP_FIXTURES_SCRIPT)";
  const std::string command = "/usr/bin/python3 '" + std::string(script) + "' '" +
                              at("fixtures").string() + "' > /dev/null";
  std::filesystem::create_directories(at("fixtures"));
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const std::vector<std::filesystem::path> models = models_under(at("fixtures"));
  EXPECT_GE(models.size(), 4U);
  for (const auto& path : models) expect_same_file(path);
  // The bare TensorProto files.
  std::size_t tensors = 0;
  for (const auto& entry : std::filesystem::directory_iterator(at("fixtures"))) {
    if (entry.path().extension() != ".pb") continue;
    ++tensors;
    const std::vector<std::byte> bytes = read(entry.path());
    for (const unsigned threads : kThreadCounts) {
      EXPECT_EQ(fuzz::compare_thread_counts(bytes, {}, schema::MessageKind::TensorProto, threads),
                "")
          << entry.path();
    }
  }
  EXPECT_GE(tensors, 6U);
}

}  // namespace
}  // namespace onnxmap::test
