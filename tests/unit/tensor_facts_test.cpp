// The facts the library gives its front ends once: a tensor's rows and sizes, plans that compose,
// glob matching, STRING bytes, the mapped file's path, close names for a mistyped one, the
// save policy that keeps data where the source has it, and LoadStats' fields.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <variant>

#include "model_builder.hpp"
#include "onnxmap/builder.hpp"
#include "onnxmap/device.hpp"
#include "onnxmap/load.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/save.hpp"
#include "test_support.hpp"
#include "tooling.hpp"

namespace onnxmap {
namespace {

using test::float_bytes;
using test::raw_tensor;
using test::sub;
using TP = schema::TensorProto;

// A model whose initializers are `tensors`.
std::vector<std::byte> model_of(const std::vector<test::Body>& tensors) {
  return test::message([&](wire::Writer& m) {
    sub(m, schema::ModelProto::kGraph, [&](wire::Writer& g) {
      for (const auto& t : tensors) sub(g, schema::GraphProto::kInitializer, t);
    });
  });
}

test::Body typed_floats(std::string_view name, std::vector<std::int64_t> dims, int count) {
  return [=](wire::Writer& t) {
    for (const auto d : dims) t.field_int64(TP::kDims, d);
    t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::float32));
    t.field_string(TP::kName, name);
    for (int i = 0; i < count; ++i) t.field_fixed32(TP::kFloatData, 0);
  };
}

TEST(SchemaSizes, BitsCountsAndBytes) {
  EXPECT_EQ(element_bits(DataType::float16), 16U);
  EXPECT_EQ(element_bits(DataType::int4), 4U);
  EXPECT_EQ(element_bits(DataType::string), 0U);
  EXPECT_EQ(element_bits(static_cast<DataType>(99)), 0U);
  const std::int64_t dims[] = {3, 5};
  EXPECT_EQ(element_count(dims), 15U);
  EXPECT_EQ(element_count({}), 1U);  // a scalar
  const std::int64_t huge[] = {std::int64_t{1} << 32, std::int64_t{1} << 32};
  EXPECT_FALSE(element_count(huge).has_value());
  EXPECT_EQ(packed_byte_size(DataType::int4, 3), 2U);  // the last byte padded
  EXPECT_EQ(packed_byte_size(DataType::uint2, 5), 2U);
  EXPECT_EQ(packed_byte_size(DataType::float32, 7), 28U);
  EXPECT_FALSE(packed_byte_size(DataType::string, 1).has_value());
  EXPECT_FALSE(packed_byte_size(DataType::float64, std::uint64_t{1} << 62).has_value());
}

TEST(TensorRows, CountsBytesAndRanges) {
  const Model model = Model::from_bytes(model_of({
      raw_tensor("w", DataType::float32, {3, 2}, float_bytes({0, 1, 2, 3, 4, 5})),
      raw_tensor("s", DataType::float32, {}, float_bytes({7})),
      raw_tensor("odd", DataType::int4, {3, 3}, std::vector<std::byte>(5)),
      raw_tensor("even", DataType::int4, {3, 2}, std::vector<std::byte>(3)),
      raw_tensor("empty", DataType::float32, {0, 4}, {}),
      typed_floats("typed", {2, 2}, 4),
  }));
  const Tensor w = model.tensor("w");
  EXPECT_TRUE(w.has_stored_bytes());
  EXPECT_EQ(w.row_count(), 3U);
  EXPECT_EQ(w.row_elements(), 2U);
  EXPECT_EQ(w.row_bytes(), 8U);
  EXPECT_TRUE(w.can_slice_rows());
  EXPECT_EQ(w.row_range(1, 3).offset, 8U);
  EXPECT_EQ(w.row_range(1, 3).length, 16U);
  EXPECT_EQ(w.slice_rows(1, 3).size(), w.row_range(1, 3).length);

  const Tensor s = model.tensor("s");
  EXPECT_EQ(s.row_count(), 0U);
  EXPECT_FALSE(s.can_slice_rows());
  EXPECT_THROW((void)s.row_range(0, 0), Error);

  const Tensor odd = model.tensor("odd");  // rows of 12 bits
  EXPECT_FALSE(odd.row_bytes().has_value());
  EXPECT_FALSE(odd.can_slice_rows());
  const Tensor even = model.tensor("even");  // rows of one byte
  EXPECT_EQ(even.row_bytes(), 1U);
  EXPECT_TRUE(even.can_slice_rows());

  const Tensor empty = model.tensor("empty");
  EXPECT_EQ(empty.row_elements(), 0U);
  EXPECT_EQ(empty.row_range(0, 0).length, 0U);

  const Tensor typed = model.tensor("typed");
  EXPECT_FALSE(typed.has_stored_bytes());
  EXPECT_EQ(typed.row_bytes(), 8U);  // a row's size does not depend on storage
  EXPECT_FALSE(typed.can_slice_rows());
  try {
    (void)typed.row_range(0, 1);
    FAIL() << "typed rows were cut";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("use data()"), std::string::npos) << e.what();
  }
}

TEST(TensorRows, LoadItemSizes) {
  const Model model = Model::from_bytes(
      model_of({raw_tensor("w", DataType::float32, {4, 2}, std::vector<std::byte>(32))}));
  EXPECT_EQ((LoadItem{model.tensor("w")}.byte_size()), 32U);
  EXPECT_EQ((LoadItem{model.tensor("w"), 1, 3}.byte_size()), 16U);
  EXPECT_THROW((void)(LoadItem{model.tensor("w"), 3, 5}.byte_size()), Error);
}

TEST(Plan, FilterNamesAndShardsCompose) {
  const Model model = Model::from_bytes(model_of({
      raw_tensor("a.weight", DataType::float32, {8, 2}, std::vector<std::byte>(64)),
      raw_tensor("a.bias", DataType::float32, {2}, std::vector<std::byte>(8)),
      raw_tensor("b.weight", DataType::float32, {8, 2}, std::vector<std::byte>(64)),
      typed_floats("c.weight", {8}, 8),
  }));
  EXPECT_EQ(plan(model).size(), 4U);
  PlanOptions options = PlanOptions::shard(1, 4);
  options.filter = "*.weight";
  const auto items = plan(model, options);
  ASSERT_EQ(items.size(), 3U);
  EXPECT_EQ(items[0].tensor.lookup_name(), "a.weight");
  EXPECT_EQ(items[0].row_begin, 2U);
  EXPECT_EQ(items[0].row_end, 4U);
  EXPECT_EQ(items[2].tensor.lookup_name(), "c.weight");  // typed: whole
  EXPECT_EQ(items[2].row_end, kAllRows);

  PlanOptions named = PlanOptions::shard(0, 4);
  named.names = {"b.weight", "graph.initializer[1]"};  // a name and a path, in this order
  const auto picked = plan(model, named);
  ASSERT_EQ(picked.size(), 2U);
  EXPECT_EQ(picked[0].tensor.lookup_name(), "b.weight");
  EXPECT_EQ(picked[0].row_end, 2U);
  EXPECT_EQ(picked[1].tensor.lookup_name(), "a.bias");
  EXPECT_EQ(picked[1].row_end, kAllRows);  // 2 rows, fewer than 4 ranks: whole

  named.filter = "*";
  EXPECT_THROW((void)plan(model, named), Error);
  EXPECT_THROW((void)plan(model, PlanOptions::shard(4, 4)), Error);
  PlanOptions missing;
  missing.names = {"a.wieght"};
  try {
    (void)plan(model, missing);
    FAIL() << "a missing name was planned";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
    EXPECT_NE(std::string(e.what()).find("did you mean 'a.weight'"), std::string::npos) << e.what();
  }
}

// PlanOptions::filter: an fnmatch glob over lookup names ("" takes every tensor), in model order.
TEST(Plan, FilterIsAGlob) {
  const Model model = Model::from_bytes(model_of({
      raw_tensor("model.layers.3.mlp.up", DataType::float32, {1}, float_bytes({0})),
      raw_tensor("a.weight", DataType::float32, {1}, float_bytes({0})),
      raw_tensor("ab7", DataType::float32, {1}, float_bytes({0})),
  }));
  const auto names = [&](std::string glob) {
    std::vector<std::string_view> out;
    for (const LoadItem& item : plan(model, PlanOptions::matching(std::move(glob)))) {
      out.push_back(item.tensor.lookup_name());
    }
    return out;
  };
  using Found = std::vector<std::string_view>;
  EXPECT_EQ(names(""), (Found{"model.layers.3.mlp.up", "a.weight", "ab7"}));
  EXPECT_EQ(names("model.layers.*.mlp.*"), Found{"model.layers.3.mlp.up"});
  EXPECT_EQ(names("*.bias"), Found{});
  EXPECT_EQ(names("a?[0-9]"), Found{"ab7"});
  EXPECT_EQ(names("*"), names(""));
}

TEST(CloseNames, RankedAndBounded) {
  const Model model = Model::from_bytes(model_of({
      raw_tensor("decoder.layer.weight", DataType::float32, {1}, float_bytes({0})),
      raw_tensor("decoder.layer.bias", DataType::float32, {1}, float_bytes({0})),
      raw_tensor("encoder.layer.weight", DataType::float32, {1}, float_bytes({0})),
      raw_tensor("x", DataType::float32, {1}, float_bytes({0})),
  }));
  const auto message = [&](std::string_view name) {
    try {
      (void)model.tensor(name);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("found");
  };
  EXPECT_NE(message("decoder.layer.wieght").find("did you mean 'decoder.layer.weight'"),
            std::string::npos);
  // Both one edit away; the bias is further.
  EXPECT_NE(
      message("eecoder.layer.weight").find("'decoder.layer.weight' or 'encoder.layer.weight'?"),
      std::string::npos);
  EXPECT_EQ(message("nope").find("did you mean"), std::string::npos) << message("nope");
}

TEST(StringTensor, EncodedAsStored) {
  const Model model = Model::from_bytes(model_of({[](wire::Writer& t) {
    t.field_int64(TP::kDims, 2);
    t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::string));
    t.field_string(TP::kName, "s");
    t.field_string(TP::kStringData, "ab");
    t.field_string(TP::kStringData, "");
  }}));
  const auto bytes = tooling::encoded_strings(model.tensor("s"));
  const std::vector<std::byte> expected = {std::byte{0x32}, std::byte{2},    std::byte{'a'},
                                           std::byte{'b'},  std::byte{0x32}, std::byte{0}};
  EXPECT_EQ(bytes, expected);
  const Model floats =
      Model::from_bytes(model_of({raw_tensor("f", DataType::float32, {1}, float_bytes({1}))}));
  EXPECT_THROW((void)tooling::encoded_strings(floats.tensor("f")), Error);
}

class FilePaths : public test::TempFolder {};

TensorStorage storage_of(const std::filesystem::path& path) {
  const Model model = Model::open(path);
  return model.tensor("w").storage();
}

TEST_F(FilePaths, MappedFilesOnly) {
  const auto path = at("m.onnx");
  {
    const auto bytes = model_of(
        {raw_tensor("w", DataType::float32, {1}, float_bytes({1})), typed_floats("t", {1}, 1)});
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  const Model mapped = Model::open(path);
  EXPECT_EQ(mapped.tensor("w").file_path(), std::filesystem::absolute(path));
  EXPECT_TRUE(mapped.tensor("t").file_path().empty());
  OpenOptions read;
  read.mode = LoadMode::read;
  const Model copied = Model::open(path, read);
  EXPECT_TRUE(copied.tensor("w").file_path().empty());
}

TEST_F(FilePaths, SaveKeepsDataWhereTheSourceHasIt) {
  ModelBuilder builder;
  builder.graph("g").initializer(TensorBuilder::zeros("w", DataType::float32, {1024}));
  SaveOptions external;
  external.external_data = ExternalData::external;
  (void)save(builder, at("ext.onnx"), external);
  SaveOptions keep;
  keep.external_data = ExternalData::keep;
  (void)save(builder, at("built.onnx"), keep);  // a builder has no source layout: inline
  EXPECT_EQ(storage_of(at("built.onnx")), TensorStorage::raw);
  const Model source = Model::open(at("ext.onnx"));
  const SaveResult kept = save(source, at("kept.onnx"), keep);
  EXPECT_EQ(kept.external_tensors, 1U);
  EXPECT_EQ(storage_of(at("kept.onnx")), TensorStorage::external);
  const Model inline_source = Model::open(at("built.onnx"));
  (void)save(inline_source, at("kept-inline.onnx"), keep);
  EXPECT_EQ(storage_of(at("kept-inline.onnx")), TensorStorage::raw);
}

TEST(LoadStatsFields, OneListInOrder) {
  LoadStats stats;
  stats.tensors = 3;
  stats.seconds = 0.25;
  stats.bytes_copied = 9;
  stats.direct = true;
  stats.retry_wait_ms = 250;
  const auto fields = fields_of(stats);
  ASSERT_EQ(fields.size(), 11U);
  EXPECT_EQ(fields.front().name, "tensors");
  EXPECT_EQ(std::get<std::uint64_t>(fields.front().value), 3U);
  EXPECT_EQ(fields[2].name, "seconds");
  EXPECT_EQ(std::get<double>(fields[2].value), 0.25);
  EXPECT_EQ(fields[7].name, "bytes_copied");
  EXPECT_EQ(std::get<std::uint64_t>(fields[7].value), 9U);
  EXPECT_EQ(fields[8].name, "direct");
  EXPECT_TRUE(std::get<bool>(fields[8].value));
  EXPECT_EQ(fields.back().name, "retry_wait_ms");
  EXPECT_EQ(std::get<std::uint64_t>(fields.back().value), 250U);
}

// A device load's statistics are the loader's, then the device's own, then the path.
TEST(LoadStatsFields, DeviceStatsAreTheLoadersThenTheDevicesThenPath) {
  DeviceLoadStats stats;
  stats.tensors = 2;
  stats.retries = 5;
  stats.bytes_staged = 7;
  stats.threads = 4;
  const auto fields = fields_of(stats);
  const auto common = fields_of(static_cast<const LoadStats&>(stats));
  ASSERT_EQ(fields.size(), common.size() + 7);
  for (std::size_t i = 0; i < common.size(); ++i) {
    EXPECT_EQ(fields[i].name, common[i].name);
    EXPECT_EQ(fields[i].value, common[i].value) << fields[i].name;
  }
  EXPECT_EQ(fields[9].name, "retries");
  EXPECT_EQ(std::get<std::uint64_t>(fields[9].value), 5U);
  EXPECT_EQ(fields[common.size()].name, "bytes_staged");
  EXPECT_EQ(std::get<std::uint64_t>(fields[common.size()].value), 7U);
  EXPECT_EQ(fields[common.size() + 5].name, "threads");
  EXPECT_EQ(std::get<std::uint64_t>(fields[common.size() + 5].value), 4U);
  EXPECT_EQ(fields.back().name, "path");
  EXPECT_EQ(std::get<std::string_view>(fields.back().value), "pinned");
}

}  // namespace
}  // namespace onnxmap
