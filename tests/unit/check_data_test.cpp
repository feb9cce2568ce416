// check on payloads: sizes, counts, external files and ranges, and what read_data reads (BOOL
// values, SHA-1 checksums). Also SHA-1 itself against the FIPS 180 test vectors.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "check_builder.hpp"
#include "io/digest.hpp"
#include "schema/fields.hpp"
#include "test_support.hpp"

namespace onnxmap {
namespace {

std::string sha1_hex(std::span<const std::byte> bytes) {
  return detail::digest_hex(DigestAlgorithm::sha1, bytes);
}
using test::check_bytes;
using test::findings;
using test::GP;
using test::graph;
using test::model;
using test::node;
using test::sub;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using TP = schema::TensorProto;

std::span<const std::byte> as_bytes(std::string_view text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

TEST(Sha1, KnownVectors) {
  EXPECT_EQ(sha1_hex({}), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(sha1_hex(as_bytes("abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(sha1_hex(as_bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  const std::string million(1'000'000, 'a');
  EXPECT_EQ(sha1_hex(as_bytes(million)), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  // Any split into updates gives the same digest (block boundaries, padding across blocks).
  for (const std::size_t split : {1UL, 55UL, 56UL, 63UL, 64UL, 65UL, 1000UL}) {
    detail::Digest sha(DigestAlgorithm::sha1);
    const auto all = as_bytes(million);
    for (std::size_t at = 0; at < all.size(); at += split) {
      sha.update(all.subspan(at, std::min(split, all.size() - at)));
    }
    EXPECT_EQ(sha.finish_hex(), "34aa973cd4c4daa4f61eeb2bdbad27316534016f") << split;
  }
  // The manifests' algorithms (FIPS 180-4's vectors; XXH3-128 as the xxhash package gives it).
  const auto sha256 = [](std::span<const std::byte> b) {
    return detail::digest_hex(DigestAlgorithm::sha256, b);
  };
  EXPECT_EQ(sha256({}), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256(as_bytes("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const auto xxh3 = [](std::span<const std::byte> b) {
    return detail::digest_hex(DigestAlgorithm::xxh3_128, b);
  };
  EXPECT_EQ(xxh3({}), "99aa06d3014798d86001c324468d497f");
  EXPECT_EQ(xxh3(as_bytes("abc")), "06b05ab6733a618578af5f94892f3950");
  detail::Digest pieces(DigestAlgorithm::xxh3_128);
  for (std::size_t at = 0; at < million.size(); at += 4093) {
    pieces.update(as_bytes(million).subspan(at, std::min<std::size_t>(4093, million.size() - at)));
  }
  EXPECT_EQ(pieces.finish_hex(), "a545df8e384a9579b1fd6fae5285c4eb");
}

// A model with `tensors` as initializers of a graph that only passes x through.
std::vector<std::byte> model_with_tensors(std::vector<test::Body> tensors) {
  return model(graph({"x"}, {node({"x"}, {"y"})}, {"y"}, {}, [&](wire::Writer& g) {
    for (const auto& t : tensors) sub(g, GP::kInitializer, t);
  }));
}

TEST(CheckPayload, EveryProblemNotJustTheFirst) {
  const auto bytes =
      model(graph({"x"}, {node({"x", "nowhere"}, {"y"}, "Add")}, {"y"}, {}, [](wire::Writer& g) {
        sub(g, GP::kInitializer,
            test::raw_tensor("w", DataType::float32, {4}, test::float_bytes({1, 2, 3})));
      }));
  // A plain open refuses the file at the first payload problem.
  EXPECT_THROW((void)Model::from_bytes(bytes), Error);
  const auto report = check_bytes(bytes);
  EXPECT_THAT(findings(report), ElementsAre("payload graph.initializer[0].raw_data",
                                            "undefined_input graph.node[0].input[1]"));
  EXPECT_NE(report.problems[0].detail.find("12 bytes"), std::string::npos);
}

TEST(CheckPayload, CollectedTensorsHaveNoBytes) {
  OpenOptions options;
  options.collect_payload_errors = true;
  const Model m = Model::from_bytes(
      model_with_tensors({test::raw_tensor("w", DataType::float32, {2}, {})}), options);
  const Tensor w = m.tensor("w");
  EXPECT_EQ(w.storage(), TensorStorage::invalid);
  ASSERT_TRUE(w.payload_error().has_value());
  EXPECT_EQ(w.payload_error()->field_path(), "graph.initializer[0].raw_data");
  EXPECT_THROW((void)w.bytes(), Error);
  EXPECT_EQ(m.payload_errors().size(), 1U);
}

TEST(CheckPayload, TypedStringAndMissingData) {
  const auto typed = [](wire::Writer& t) {
    t.field_int64(TP::kDims, 2);
    t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::float32));
    t.field_string(TP::kName, "typed");
    t.field_float(TP::kFloatData, 1.0F);
  };
  const auto strings = [](wire::Writer& t) {
    t.field_int64(TP::kDims, 3);
    t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::string));
    t.field_string(TP::kName, "strings");
    t.field_string(TP::kStringData, "only one");
  };
  const auto empty = [](wire::Writer& t) {
    t.field_int64(TP::kDims, 5);
    t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::int64));
    t.field_string(TP::kName, "empty");
  };
  const auto untyped = [](wire::Writer& t) { t.field_string(TP::kName, "untyped"); };
  EXPECT_THAT(
      findings(check_bytes(model_with_tensors({typed, strings, empty, untyped}))),
      ElementsAre("payload graph.initializer[0]", "payload graph.initializer[1].string_data",
                  "payload graph.initializer[2]", "payload graph.initializer[3].data_type"));
}

// External data in a temporary folder: data.bin of 64 bytes, 0..63.
class CheckExternal : public test::TempFolder {
 protected:
  void SetUp() override {
    TempFolder::SetUp();
    std::ofstream out(at("data.bin"), std::ios::binary);
    for (int i = 0; i < 64; ++i) out.put(static_cast<char>(i));
  }

  // A FLOAT[length/4] (or BOOL[length]) tensor at [offset, offset+length) of `location`.
  static test::Body external(std::string name, std::string location, int offset, int length,
                             std::string checksum = "", DataType type = DataType::float32) {
    return [=](wire::Writer& t) {
      const int bytes_per = type == DataType::boolean ? 1 : 4;
      t.field_int64(TP::kDims, length / bytes_per);
      t.field_int32(TP::kDataType, static_cast<std::int32_t>(type));
      t.field_string(TP::kName, name);
      const auto entry = [&](std::string_view key, const std::string& value) {
        sub(t, TP::kExternalData, [&](wire::Writer& e) {
          e.field_string(schema::StringStringEntryProto::kKey, key);
          e.field_string(schema::StringStringEntryProto::kValue, value);
        });
      };
      entry("location", location);
      entry("offset", std::to_string(offset));
      entry("length", std::to_string(length));
      if (!checksum.empty()) entry("checksum", checksum);
      t.field_int32(TP::kDataLocation, static_cast<std::int32_t>(DataLocation::external));
    };
  }

  [[nodiscard]] CheckReport run(std::vector<test::Body> tensors, bool read_data = false,
                                CheckOptions options = {}) const {
    const auto bytes = model_with_tensors(std::move(tensors));
    const auto path = root_ / "model.onnx";
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    options.read_data = read_data;
    return check(path, options);
  }

  [[nodiscard]] std::string file_sha1() const {
    std::vector<std::byte> all(64);
    for (int i = 0; i < 64; ++i) all[static_cast<std::size_t>(i)] = static_cast<std::byte>(i);
    return sha1_hex(all);
  }
};

TEST_F(CheckExternal, CleanRangesPass) {
  EXPECT_TRUE(run({external("a", "data.bin", 0, 16), external("b", "data.bin", 16, 48)}).ok());
}

TEST_F(CheckExternal, FileAndRangeProblems) {
  const auto report = run({external("a", "data.bin", 0, 32), external("b", "data.bin", 16, 16),
                           external("c", "data.bin", 28, 8), external("d", "missing.bin", 0, 4),
                           external("e", "data.bin", 60, 8), external("f", "../up.bin", 0, 4)});
  EXPECT_THAT(findings(report), ElementsAre("external_data graph.initializer[3].external_data",
                                            "external_data graph.initializer[4].external_data",
                                            "external_data graph.initializer[5].external_data",
                                            "overlapping_data graph.initializer[1].external_data",
                                            "overlapping_data graph.initializer[2].external_data"));
  EXPECT_NE(report.problems[3].detail.find("graph.initializer[0]"), std::string::npos);
}

TEST_F(CheckExternal, ChecksumsWithReadData) {
  const std::string range_sha =
      sha1_hex(std::vector<std::byte>{std::byte{16}, std::byte{17}, std::byte{18}, std::byte{19}});
  const std::vector<test::Body> tensors{external("file", "data.bin", 0, 16, file_sha1()),
                                        external("upper", "data.bin", 32, 4,
                                                 [&] {
                                                   std::string s = file_sha1();
                                                   for (char& c : s)
                                                     c = static_cast<char>(std::toupper(c));
                                                   return s;
                                                 }()),
                                        external("range", "data.bin", 16, 4, range_sha),
                                        external("wrong", "data.bin", 20, 4, std::string(40, '0')),
                                        external("garbled", "data.bin", 24, 4, "not-a-digest")};
  // Without read_data nothing is read, so nothing is verified.
  EXPECT_TRUE(run(tensors).ok());
  std::uint64_t last_done = 0;
  std::uint64_t last_total = 0;
  CheckOptions options;
  options.progress = [&](std::uint64_t done, std::uint64_t total) {
    EXPECT_GE(done, last_done);
    last_done = done;
    last_total = total;
  };
  const auto report = run(tensors, true, options);
  EXPECT_THAT(findings(report), ElementsAre("checksum graph.initializer[3].external_data",
                                            "checksum graph.initializer[4].external_data"));
  EXPECT_EQ(last_done, last_total);
  EXPECT_EQ(report.bytes_read, 64U);  // the whole file once, for its checksum
}

TEST_F(CheckExternal, ChecksumsOfTheFilesTheModelOpened) {
  // data.bin replaced by rename after the model was opened: the model reads the file it opened,
  // and its checksum is verified over that file, not over the one now at the path.
  (void)run({external("file", "data.bin", 0, 16, file_sha1())});
  const Model opened = Model::open(root_ / "model.onnx");
  std::ofstream(at("new.bin"), std::ios::binary) << std::string(64, 'x');
  std::filesystem::rename(at("new.bin"), at("data.bin"));
  CheckOptions options;
  options.read_data = true;
  EXPECT_THAT(findings(check(opened, options)), IsEmpty());
  EXPECT_THAT(findings(check(root_ / "model.onnx", options)),
              ElementsAre("checksum graph.initializer[0].external_data"));
}

TEST_F(CheckExternal, BoolValuesWithReadData) {
  // data.bin holds 0..63: bytes 0 and 1 are fine BOOLs, byte 2 is not.
  EXPECT_TRUE(run({external("ok", "data.bin", 0, 2, "", DataType::boolean)}, true).ok());
  const auto report = run({external("bad", "data.bin", 0, 4, "", DataType::boolean)}, true);
  EXPECT_THAT(findings(report), ElementsAre("payload graph.initializer[0]"));
  EXPECT_NE(report.problems[0].detail.find("element 2 is 2"), std::string::npos);
}

TEST_F(CheckExternal, UnreadableFileIsOneStructureProblem) {
  const auto path = root_ / "garbage.onnx";
  std::ofstream(path, std::ios::binary).write("\x0a\xff\xff\xff\xff\x0f", 6);
  const auto report = check(path);
  EXPECT_FALSE(report.opened);
  EXPECT_THAT(findings(report), ElementsAre("structure "));
  EXPECT_THAT(findings(check(root_ / "absent.onnx")), ElementsAre("structure "));
}

}  // namespace
}  // namespace onnxmap
