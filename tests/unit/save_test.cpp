// Saving: verbatim copies, external data placement (threshold, alignment, splitting, one file per
// tensor, attributes), and the safety rules for destinations.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <csignal>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "model_builder.hpp"
#include "onnxmap/onnxmap.hpp"
#include "test_support.hpp"

namespace onnxmap::test {
namespace {

std::vector<std::byte> pattern(std::size_t size, unsigned seed) {
  std::vector<std::byte> out(size);
  for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<std::byte>((i * 7 + seed) & 0xFFU);
  return out;
}

// Initializers of 8192, 16 and 3000 bytes, and a 4000-byte tensor in a Constant node.
ModelBuilder small_model() {
  ModelBuilder m;
  m.ir_version(8).opset("", 17).producer("save_test", "1");
  GraphBuilder& g = m.graph("main");
  g.input("x", TypeSpec::tensor(DataType::float32, {{"batch", 64}}));
  g.initializer(TensorBuilder("big", DataType::float32, {64, 32}, pattern(8192, 1)));
  g.initializer(TensorBuilder("small", DataType::float32, {4}, pattern(16, 2)));
  g.initializer(TensorBuilder("mid", DataType::uint8, {3000}, pattern(3000, 3)));
  g.node("Constant", {}, {"c"})
      .attribute("value", TensorBuilder("", DataType::float32, {1000}, pattern(4000, 4)));
  g.node("MatMul", {"x", "big"}, {"y"});
  g.output("y", TypeSpec::tensor(DataType::float32, {{"batch", 32}}));
  return m;
}

class Save : public TempFolder {
 protected:
  // Every tensor of `a` has the same name, dims and bytes in `b`.
  static void expect_same_tensors(const Model& a, const Model& b) {
    ASSERT_EQ(a.tensor_count(), b.tensor_count());
    for (std::size_t i = 0; i < a.tensor_count(); ++i) {
      const Tensor x = a.tensor_at(i);
      const Tensor y = b.tensor_at(i);
      EXPECT_EQ(x.lookup_name(), y.lookup_name());
      EXPECT_EQ(x.path(), y.path());
      EXPECT_TRUE(std::ranges::equal(x.dims(), y.dims()));
      const TensorData dx = x.data();
      const TensorData dy = y.data();
      EXPECT_TRUE(std::ranges::equal(dx.bytes(), dy.bytes())) << x.lookup_name();
    }
  }

  static std::string json_of(const std::filesystem::path& path) {
    return dump_json(read(path), schema::MessageKind::ModelProto);
  }

  [[nodiscard]] std::filesystem::path saved(const std::string& name,
                                            const SaveOptions& options = {}) {
    save(small_model(), at(name), options);
    return at(name);
  }
};

TEST_F(Save, NothingToMoveIsByteForByte) {
  const auto first = saved("a.onnx");
  const Model model = Model::open(first);
  const SaveResult r = save(model, at("b.onnx"));
  EXPECT_EQ(read(first), read(at("b.onnx")));
  EXPECT_EQ(r.reencoded_tensors, 0U);
  EXPECT_EQ(r.model_bytes, std::filesystem::file_size(first));
  // In read mode too (bytes in memory, no file to copy from).
  const Model in_memory = Model::open(first, OpenOptions{.mode = LoadMode::read});
  save(in_memory, at("c.onnx"));
  EXPECT_EQ(read(first), read(at("c.onnx")));
}

TEST_F(Save, ExternalAndBackKeepsEveryTensor) {
  const Model original = Model::open(saved("a.onnx"));
  SaveOptions external;
  external.external_data = onnxmap::ExternalData::external;
  const SaveResult r = save(original, at("ext.onnx"), external);
  ASSERT_EQ(r.data_files.size(), 1U);
  EXPECT_EQ(r.data_files[0], "ext.onnx.data");
  EXPECT_EQ(r.external_tensors, 2U);  // big and mid; small is under 1024, c is in an attribute
  const Model ext = Model::open(at("ext.onnx"));
  expect_same_tensors(original, ext);
  EXPECT_EQ(ext.tensor("big").storage(), TensorStorage::external);
  EXPECT_EQ(ext.tensor("big").file_offset(), 0U);
  EXPECT_EQ(ext.tensor("mid").file_offset(), 8192U);  // aligned to 4096
  EXPECT_EQ(ext.tensor("small").storage(), TensorStorage::raw);
  EXPECT_EQ(ext.tensor("c").storage(), TensorStorage::raw);

  const SaveResult back = save(ext, at("back.onnx"));
  EXPECT_TRUE(back.data_files.empty());
  EXPECT_EQ(back.reencoded_tensors, 2U);
  const Model inlined = Model::open(at("back.onnx"));
  expect_same_tensors(original, inlined);
  for (std::size_t i = 0; i < inlined.tensor_count(); ++i) {
    EXPECT_NE(inlined.tensor_at(i).storage(), TensorStorage::external);
  }
  // The same messages, field for field (raw_data moved to the end of its tensor).
  EXPECT_EQ(json_of(at("back.onnx")), json_of(at("a.onnx")));
}

TEST_F(Save, ThresholdAlignmentAndAttributes) {
  SaveOptions o;
  o.external_data = onnxmap::ExternalData::external;
  o.size_threshold = 0;
  o.align = 1;
  o.convert_attribute = true;
  const Model packed = Model::open(saved("packed.onnx", o));
  // Packed in file order: the Constant's tensor (nodes come first), then big, small, mid.
  EXPECT_EQ(packed.tensor("c").storage(), TensorStorage::external);
  EXPECT_EQ(packed.tensor("c").file_offset(), 0U);
  EXPECT_EQ(packed.tensor("big").file_offset(), 4000U);
  EXPECT_EQ(packed.tensor("small").file_offset(), 12192U);
  EXPECT_EQ(packed.tensor("mid").file_offset(), 12208U);
  EXPECT_EQ(std::filesystem::file_size(at("packed.onnx.data")), 8192U + 16 + 3000 + 4000);

  o.align = 65536;
  const Model wide = Model::open(saved("wide.onnx", o));
  for (std::size_t i = 0; i < wide.tensor_count(); ++i) {
    EXPECT_EQ(wide.tensor_at(i).file_offset() % 65536, 0U);
  }
  o.align = 3;
  EXPECT_THROW((void)saved("bad.onnx", o), Error);
}

// serialize_in_place: large raw_data tensors become external data naming their own bytes in the
// model file; the rest (small, in an attribute, external already) as it was.
TEST_F(Save, InPlaceReferencesTheBytesWhereTheyLie) {
  const Model inline_model = Model::open(saved("a.onnx"));
  const std::vector<std::byte> bytes = serialize_in_place(inline_model, "a.onnx");
  const Model graph = Model::from_bytes(bytes, {}, schema::MessageKind::ModelProto, at(""));
  expect_same_tensors(inline_model, graph);
  for (const char* name : {"big", "mid"}) {
    EXPECT_EQ(graph.tensor(name).storage(), TensorStorage::external) << name;
    EXPECT_EQ(graph.tensor(name).data_file(), "a.onnx");
    EXPECT_EQ(graph.tensor(name).file_offset(), inline_model.tensor(name).file_offset());
  }
  EXPECT_EQ(graph.tensor("small").storage(), TensorStorage::raw);
  EXPECT_EQ(graph.tensor("c").storage(), TensorStorage::raw);
  EXPECT_LT(bytes.size() + 10000, std::filesystem::file_size(at("a.onnx")));  // 11,192 moved out

  SaveOptions external;
  external.external_data = onnxmap::ExternalData::external;
  const Model ext = Model::open(saved("ext.onnx", external));
  const std::vector<std::byte> ext_bytes = serialize_in_place(ext, "ext.onnx");
  const Model ext_graph = Model::from_bytes(ext_bytes, {}, schema::MessageKind::ModelProto, at(""));
  expect_same_tensors(ext, ext_graph);
  EXPECT_EQ(ext_graph.tensor("big").data_file(), "ext.onnx.data");
  EXPECT_EQ(ext_bytes, read(at("ext.onnx")));  // nothing raw over the threshold: verbatim

  EXPECT_THROW((void)serialize_in_place(inline_model, "../a.onnx"), Error);
}

// The safetensors format: a header padded to `align`, then the payloads widest element first
// (big, 4-byte floats, before mid, bytes), each tensor's external data past the header; shards
// named as the Hub names them beside their index; a ".safetensors" path gets the tensors alone.
TEST_F(Save, SafetensorsFilesHoldTheTensorsPastTheirHeader) {
  const Model original = Model::open(saved("a.onnx"));
  SaveOptions o;
  o.data_format = DataFormat::safetensors;
  o.external_data = ExternalData::keep;  // safetensors goes external
  save(original, at("st.onnx"), o);
  const Model st = Model::open(at("st.onnx"));
  expect_same_tensors(original, st);
  EXPECT_EQ(st.tensor("big").data_file(), "model.safetensors");
  EXPECT_EQ(st.tensor("big").file_offset(), 4096U);
  EXPECT_EQ(st.tensor("mid").file_offset(), 4096U + 8192);
  EXPECT_EQ(st.tensor("small").storage(), TensorStorage::raw);  // under the threshold
  const std::vector<std::byte> file = read(at("model.safetensors"));
  ASSERT_EQ(file.size(), 4096U + 8192 + 3000);
  std::uint64_t length = 0;
  for (int b = 7; b >= 0; --b) length = (length << 8U) | std::to_integer<std::uint64_t>(file[b]);
  EXPECT_EQ(length, 4096U - 8);
  const auto header = nlohmann::json::parse(std::string(
      reinterpret_cast<const char*>(file.data()) + 8, static_cast<std::size_t>(length)));
  EXPECT_EQ(header["big"]["dtype"], "F32");
  EXPECT_EQ(header["big"]["shape"], nlohmann::json({64, 32}));
  EXPECT_EQ(header["mid"]["data_offsets"], nlohmann::json({8192, 11192}));
  EXPECT_EQ(header["__metadata__"]["source"], "a.onnx");

  o.max_external_file_size = 8192;
  o.location = "w.safetensors";
  save(original, at("sharded.onnx"), o);
  const Model sharded = Model::open(at("sharded.onnx"));
  EXPECT_EQ(sharded.tensor("mid").data_file(), "w-00002-of-00002.safetensors");
  const auto index = nlohmann::json::parse(
      std::string(reinterpret_cast<const char*>(read(at("w.safetensors.index.json")).data()),
                  std::filesystem::file_size(at("w.safetensors.index.json"))));
  EXPECT_EQ(index["weight_map"]["big"], "w-00001-of-00002.safetensors");
  EXPECT_EQ(index["metadata"]["total_size"], 8192 + 3000);

  const SaveResult weights = save(original, at("weights.safetensors"));
  EXPECT_EQ(weights.model_bytes, 0U);
  EXPECT_EQ(weights.external_tensors, 3U);  // small too; c is an attribute's
  o = {};
  o.data_format = DataFormat::safetensors;
  o.location = "weights.data";
  o.external_data = ExternalData::external;
  EXPECT_THROW((void)saved("bad.onnx", o), Error);  // the location must end in .safetensors
}

TEST_F(Save, SplitsAtTensorBoundaries) {
  SaveOptions o;
  o.external_data = onnxmap::ExternalData::external;
  o.size_threshold = 0;
  o.align = 1;
  o.max_external_file_size = 8200;
  const auto path = saved("split.onnx", o);
  // big (8192) fills the first; small and mid share the second (16 + 3000 <= 8200).
  EXPECT_EQ(std::filesystem::file_size(at("split.onnx.data.00001")), 8192U);
  EXPECT_EQ(std::filesystem::file_size(at("split.onnx.data.00002")), 3016U);
  EXPECT_FALSE(std::filesystem::exists(at("split.onnx.data.00003")));
  o.max_external_file_size = 100;  // every tensor is larger: one file each
  const SaveResult r = save(small_model(), at("tiny.onnx"), o);
  EXPECT_EQ(r.data_files.size(), 3U);
  const Model model = Model::open(at("tiny.onnx"));
  EXPECT_EQ(model.tensor("mid").data_file(), "tiny.onnx.data.00003");
  expect_same_tensors(Model::open(path), model);
}

TEST_F(Save, OneFilePerTensorNamedAfterIt) {
  ModelBuilder m = small_model();
  GraphBuilder& g = m.graph();
  g.initializer(TensorBuilder("a/b:c", DataType::uint8, {2000}, pattern(2000, 5)));
  g.initializer(TensorBuilder("a_b_c", DataType::uint8, {2000}, pattern(2000, 6)));
  g.initializer(TensorBuilder("..", DataType::uint8, {2000}, pattern(2000, 7)));
  SaveOptions o;
  o.external_data = onnxmap::ExternalData::external;
  o.one_file_per_tensor = true;
  o.location = "weights/ignored.bin";
  save(m, at("m.onnx"), o);
  const Model model = Model::open(at("m.onnx"));
  EXPECT_EQ(model.tensor("big").data_file(), "weights/big");
  EXPECT_EQ(model.tensor("a/b:c").data_file(), "weights/a_b_c");
  EXPECT_EQ(model.tensor("a_b_c").data_file(), "weights/a_b_c.2");
  EXPECT_EQ(model.tensor("..").data_file(), "weights/_.");
  EXPECT_EQ(model.tensor("a_b_c").bytes()[1], std::byte{13});
}

TEST_F(Save, LocationsStayInsideTheFolder) {
  for (const char* location : {"/tmp/x.data", "../x.data", "sub/../../x.data", "a/.."}) {
    SaveOptions o;
    o.external_data = onnxmap::ExternalData::external;
    o.location = location;
    try {
      (void)saved("m.onnx", o);
      ADD_FAILURE() << location;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::unsafe_path) << location;
    }
  }
  EXPECT_EQ(listing(), std::vector<std::string>{});
  SaveOptions o;
  o.external_data = onnxmap::ExternalData::external;
  o.location = "sub/dir/w.data";
  o.durable = true;
  const Model model = Model::open(saved("m.onnx", o));
  EXPECT_EQ(model.tensor("big").data_file(), "sub/dir/w.data");
}

TEST_F(Save, NeverWritesThroughASymlinkOrOverItsSource) {
  const auto source = saved("a.onnx");
  const auto before = read(source);
  std::filesystem::create_symlink(source, at("link.onnx"));
  const Model model = Model::open(source);
  const auto expect_unsafe = [&](const std::filesystem::path& dest, const SaveOptions& o = {},
                                 const Model* from = nullptr) {
    try {
      save(from != nullptr ? *from : model, dest, o);
      ADD_FAILURE() << dest;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::unsafe_path) << e.what();
    }
  };
  expect_unsafe(at("link.onnx"));
  expect_unsafe(source);
  std::filesystem::create_hard_link(source, at("hard.onnx"));
  expect_unsafe(at("hard.onnx"));
  EXPECT_EQ(read(source), before);

  // The data file of the model being read is a source too.
  SaveOptions ext;
  ext.external_data = onnxmap::ExternalData::external;
  save(model, at("e.onnx"), ext);
  const Model external = Model::open(at("e.onnx"));
  ext.location = "e.onnx.data";
  expect_unsafe(at("f.onnx"), ext, &external);
  // A symlinked data folder is not followed.
  std::filesystem::create_directory(at("real"));
  std::filesystem::create_directory_symlink(at("real"), at("via"));
  ext.location = "via/w.data";
  expect_unsafe(at("g.onnx"), ext);
  EXPECT_TRUE(std::filesystem::is_empty(at("real")));
}

TEST_F(Save, FailuresLeaveNothingBehind) {
  EXPECT_THROW(save(small_model(), at("missing/m.onnx")), Error);
  std::filesystem::create_directory(at("folder.onnx"));
  EXPECT_THROW(save(small_model(), at("folder.onnx")), Error);
  SaveOptions o;
  o.external_data = onnxmap::ExternalData::external;
  std::filesystem::create_directory(at("m.onnx.data"));  // a folder holds the data file's name
  EXPECT_THROW(save(small_model(), at("m.onnx"), o), Error);
  EXPECT_EQ(listing(), (std::vector<std::string>{"folder.onnx", "m.onnx.data"}));
}

TEST_F(Save, AFullDiskLeavesNoFile) {
  // Writes fail as on a full disk midway through the data file.
  SaveOptions o;
  o.external_data = onnxmap::ExternalData::external;
  const auto error =
      test::error_under_file_size_limit(5000, [&] { save(small_model(), at("m.onnx"), o); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind(), ErrorKind::io);
  const std::string what = error->what();
  EXPECT_NE(what.find("m.onnx.data"), std::string::npos) << what;
  EXPECT_EQ(listing(), std::vector<std::string>{});
}

TEST_F(Save, AKilledWriterLeavesNoFile) {
  // SIGKILL in the middle of writing the model (no destructor runs): the file being written has
  // no name yet, so nothing is left in the folder.
  ModelBuilder m = small_model();
  m.graph("main").initializer(TensorBuilder("generated", DataType::uint8, {std::int64_t{4} << 20U},
                                            [](std::uint64_t offset, std::span<std::byte> out) {
                                              std::fill(out.begin(), out.end(), std::byte{1});
                                              if (offset > 0) std::raise(SIGKILL);
                                            }));
  EXPECT_EXIT(save(m, at("m.onnx")), ::testing::KilledBySignal(SIGKILL), "");
  EXPECT_EQ(listing(), std::vector<std::string>{});
}

TEST_F(Save, MergedTensorMovesWhole) {
  // A Constant whose tensor arrives in two parts (protobuf merges them): name and dims first,
  // raw_data in the second.
  using NP = schema::NodeProto;
  using AP = schema::AttributeProto;
  using TP = schema::TensorProto;
  const auto raw = pattern(2048, 9);
  const auto bytes = message([&](wire::Writer& m) {
    m.field_int64(schema::ModelProto::kIrVersion, 8);
    sub(m, schema::ModelProto::kGraph, [&](wire::Writer& g) {
      sub(g, schema::GraphProto::kNode, [&](wire::Writer& n) {
        n.field_string(NP::kOutput, "c");
        n.field_string(NP::kOpType, "Constant");
        sub(n, NP::kAttribute, [&](wire::Writer& a) {
          a.field_string(AP::kName, "value");
          sub(a, AP::kT, [&](wire::Writer& t) {
            t.field_int64(TP::kDims, 512);
            t.field_int32(TP::kDataType, 1);
          });
          a.field_int32(AP::kType, 4);
          sub(a, AP::kT, [&](wire::Writer& t) { t.field_bytes(TP::kRawData, raw); });
        });
      });
    });
  });
  write(at("merged.onnx"), bytes);
  const Model source = Model::open(at("merged.onnx"));
  SaveOptions o;
  o.external_data = onnxmap::ExternalData::external;
  o.convert_attribute = true;
  save(source, at("out.onnx"), o);
  const Model out = Model::open(at("out.onnx"));
  EXPECT_EQ(out.tensor("c").storage(), TensorStorage::external);
  expect_same_tensors(source, out);
  save(out, at("back.onnx"));
  EXPECT_EQ(json_of(at("back.onnx")), json_of(at("merged.onnx")));
}

TEST_F(Save, RefusesAModelWithBrokenPayloads) {
  const auto bytes = message([&](wire::Writer& m) {
    sub(m, schema::ModelProto::kGraph, [&](wire::Writer& g) {
      sub(g, schema::GraphProto::kInitializer,
          raw_tensor("w", DataType::float32, {4}, std::vector<std::byte>(12)));  // 16 needed
    });
  });
  write(at("bad.onnx"), bytes);
  const Model model = Model::open(at("bad.onnx"), OpenOptions{.collect_payload_errors = true});
  try {
    save(model, at("out.onnx"));
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_tensor) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(at("out.onnx")));
}

TEST_F(Save, ReportsProgressUpToTheTotal) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> calls;
  SaveOptions o;
  o.external_data = onnxmap::ExternalData::external;
  o.progress = [&](std::uint64_t done, std::uint64_t total) { calls.emplace_back(done, total); };
  const SaveResult r = save(small_model(), at("m.onnx"), o);
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back().first, r.model_bytes + r.data_bytes);
  EXPECT_EQ(calls.back().second, r.model_bytes + r.data_bytes);
  EXPECT_TRUE(std::ranges::is_sorted(calls));
}

}  // namespace
}  // namespace onnxmap::test
