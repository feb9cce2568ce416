// Tensors: typed fields decoded into the raw_data layout, size checks, slices, external data and
// its path policy.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "model_builder.hpp"
#include "onnxmap/load.hpp"
#include "onnxmap/model.hpp"
#include "test_support.hpp"

namespace onnxmap {
namespace {

using test::float_bytes;
using test::message;
using test::raw_tensor;
using test::sub;
using TP = schema::TensorProto;

// A model whose only content is graph.initializer[0] = `tensor`.
std::vector<std::byte> model_with(const test::Body& tensor) {
  return message([&](wire::Writer& m) {
    sub(m, schema::ModelProto::kGraph,
        [&](wire::Writer& g) { sub(g, schema::GraphProto::kInitializer, tensor); });
  });
}

std::vector<std::byte> bytes_of(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (const int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

// Decodes a typed tensor of `type` and `dims` written by `fill`, returning data().bytes().
std::vector<std::byte> decoded(DataType type, std::vector<std::int64_t> dims,
                               const std::function<void(wire::Writer&)>& fill) {
  const Model model = Model::from_bytes(model_with([&](wire::Writer& t) {
    for (const auto d : dims) t.field_int64(TP::kDims, d);
    t.field_int32(TP::kDataType, static_cast<std::int32_t>(type));
    t.field_string(TP::kName, "t");
    fill(t);
  }));
  const Tensor t = model.tensor("t");
  EXPECT_EQ(t.storage(), TensorStorage::typed);
  const TensorData data = t.data();
  EXPECT_FALSE(data.is_view());
  return {data.bytes().begin(), data.bytes().end()};
}

TEST(Tensor, TypedFieldsDecodeToRawLayout) {
  // float_data, packed and unpacked.
  EXPECT_EQ(decoded(DataType::float32, {2},
                    [](wire::Writer& t) {
                      t.field_float(TP::kFloatData, 1.0F);
                      t.field_float(TP::kFloatData, -2.0F);
                    }),
            float_bytes({1.0F, -2.0F}));
  // int32_data holds INT8 as sign-extended varints; raw_data keeps one byte each.
  EXPECT_EQ(decoded(DataType::int8, {3},
                    [](wire::Writer& t) {
                      t.field_int32(TP::kInt32Data, -1);
                      t.field_int32(TP::kInt32Data, 5);
                      t.field_int32(TP::kInt32Data, -128);
                    }),
            bytes_of({0xFF, 0x05, 0x80}));
  // FLOAT16 bit patterns in int32_data.
  EXPECT_EQ(decoded(DataType::float16, {1},
                    [](wire::Writer& t) { t.field_int32(TP::kInt32Data, 0x3C00); }),
            bytes_of({0x00, 0x3C}));
  // INT4: two elements per int32_data entry, packed as stored.
  EXPECT_EQ(decoded(DataType::int4, {3},
                    [](wire::Writer& t) {
                      t.field_int32(TP::kInt32Data, 0x21);
                      t.field_int32(TP::kInt32Data, 0x0F);
                    }),
            bytes_of({0x21, 0x0F}));
  // int64_data packed; uint64_data holding UINT32.
  EXPECT_EQ(decoded(DataType::int64, {1},
                    [](wire::Writer& t) {
                      const std::uint64_t v[] = {wire::from_int64(-2)};
                      t.field_packed_varints(TP::kInt64Data, v);
                    }),
            bytes_of({0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}));
  EXPECT_EQ(decoded(DataType::uint32, {1},
                    [](wire::Writer& t) { t.field_varint(TP::kUint64Data, 0x01020304); }),
            bytes_of({0x04, 0x03, 0x02, 0x01}));
  // COMPLEX128 as double pairs.
  EXPECT_EQ(decoded(DataType::complex128, {1},
                    [](wire::Writer& t) {
                      t.field_double(TP::kDoubleData, 1.0);
                      t.field_double(TP::kDoubleData, 0.0);
                    })
                .size(),
            16U);
}

TEST(Tensor, TypedCountMismatchIsAnErrorOnDecode) {
  const Model model = Model::from_bytes(model_with([](wire::Writer& t) {
    t.field_int64(TP::kDims, 3);
    t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::float32));
    t.field_string(TP::kName, "t");
    t.field_float(TP::kFloatData, 1.0F);
  }));
  try {
    (void)model.tensor("t").data();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_tensor);
    EXPECT_EQ(e.field_path(), "graph.initializer[0]");
  }
  EXPECT_THROW((void)model.tensor("t").bytes(), Error);  // typed data is never a view
}

TEST(Tensor, ClaimsDoNotAllocate) {
  // Dims claim 4 billion floats; the file holds one. Opening costs nothing, decoding fails
  // without reserving 16 GB.
  const Model model = Model::from_bytes(model_with([](wire::Writer& t) {
    t.field_int64(TP::kDims, 4'000'000'000LL);
    t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::float32));
    t.field_string(TP::kName, "t");
    t.field_float(TP::kFloatData, 1.0F);
  }));
  EXPECT_EQ(model.tensor("t").byte_size(), 16'000'000'000ULL);
  EXPECT_THROW((void)model.tensor("t").data(), Error);
}

TEST(Tensor, StringTensors) {
  const Model model = Model::from_bytes(model_with([](wire::Writer& t) {
    t.field_int64(TP::kDims, 2);
    t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::string));
    t.field_string(TP::kName, "s");
    t.field_string(TP::kStringData, "ab");
    t.field_string(TP::kStringData, "");
  }));
  EXPECT_EQ(model.tensor("s").strings(), (std::vector<std::string_view>{"ab", ""}));
  EXPECT_EQ(model.tensor("s").byte_size(), 0U);
}

// Expects opening `bytes` to fail with `kind`, with `path` inside the error's field path.
void expect_open_error(const std::vector<std::byte>& bytes, ErrorKind kind,
                       const std::string& path) {
  try {
    (void)Model::from_bytes(bytes);
    FAIL() << "opened; expected " << to_string(kind);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_EQ(e.field_path(), path) << e.what();
  }
}

TEST(Tensor, SizeChecksAtOpen) {
  expect_open_error(model_with(raw_tensor("w", DataType::float32, {2, 2}, float_bytes({1, 2, 3}))),
                    ErrorKind::bad_tensor, "graph.initializer[0].raw_data");
  expect_open_error(model_with(raw_tensor("w", DataType::float32, {2}, float_bytes({1, 2, 3}))),
                    ErrorKind::bad_tensor, "graph.initializer[0].raw_data");
  expect_open_error(model_with(raw_tensor("w", DataType::float32, {-2}, {})), ErrorKind::bad_tensor,
                    "graph.initializer[0].dims");
  // 2^32 * 2^32 elements: the product overflows 64 bits.
  expect_open_error(
      model_with(raw_tensor("w", DataType::float32, {1LL << 32, 1LL << 32}, float_bytes({1}))),
      ErrorKind::bad_tensor, "graph.initializer[0].dims");
  // 2^62 floats: the element count fits, the byte size does not.
  expect_open_error(model_with(raw_tensor("w", DataType::float32, {1LL << 62}, float_bytes({1}))),
                    ErrorKind::bad_tensor, "graph.initializer[0].dims");
}

TEST(Tensor, SliceRows) {
  const Model model = Model::from_bytes(
      model_with(raw_tensor("w", DataType::float32, {3, 2}, float_bytes({0, 1, 2, 3, 4, 5}))));
  const Tensor w = model.tensor("w");
  const auto rows = w.slice_rows(1, 3);
  ASSERT_EQ(rows.size(), 16U);
  EXPECT_EQ(rows.data(), w.bytes().data() + 8);  // a sub-view, not a copy
  EXPECT_EQ(w.slice_rows(2, 2).size(), 0U);
  EXPECT_THROW((void)w.slice_rows(2, 4), Error);
  EXPECT_THROW((void)w.slice_rows(2, 1), Error);
}

// A folder with a model referencing external data, removed after the test.
class ExternalDataFile : public test::TempFolder {
 protected:
  void SetUp() override {
    TempFolder::SetUp();
    std::filesystem::create_directories(root_ / "model");
    write(root_ / "model" / "weights.bin", std::string(4096, '\0') + std::string(16, '\x01'));
    write(root_ / "outside.bin", std::string(16, '\x02'));
  }

  // Writes model.onnx whose tensor "w" (FLOAT[4]) lives at `location`, `offset`, `length`.
  std::filesystem::path model(const std::string& location, const std::string& offset,
                              const std::string& length) {
    const auto bytes = model_with([&](wire::Writer& t) {
      t.field_int64(TP::kDims, 4);
      t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::float32));
      t.field_string(TP::kName, "w");
      const auto entry = [&](std::string_view key, const std::string& value) {
        if (value.empty()) return;
        sub(t, TP::kExternalData, [&](wire::Writer& e) {
          e.field_string(schema::StringStringEntryProto::kKey, key);
          e.field_string(schema::StringStringEntryProto::kValue, value);
        });
      };
      entry("location", location);
      entry("offset", offset);
      entry("length", length);
      t.field_int32(TP::kDataLocation, static_cast<std::int32_t>(DataLocation::external));
    });
    const auto path = root_ / "model" / "model.onnx";
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    return path;
  }

  void expect_error(const std::filesystem::path& path, ErrorKind kind,
                    const OpenOptions& options = {}) {
    try {
      (void)Model::open(path, options);
      FAIL() << "opened; expected " << to_string(kind);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
    }
  }
};

TEST_F(ExternalDataFile, MappedInPlace) {
  const Model m = Model::open(model("weights.bin", "4096", "16"));
  const Tensor w = m.tensor("w");
  EXPECT_EQ(w.storage(), TensorStorage::external);
  EXPECT_EQ(w.data_file(), "weights.bin");
  EXPECT_EQ(w.file_offset(), 4096U);
  EXPECT_EQ(w.alignment(), 4096U);
  ASSERT_EQ(w.bytes().size(), 16U);
  EXPECT_EQ(w.bytes()[15], std::byte{1});
  EXPECT_TRUE(w.data().is_view());
  prefetch(w);
  w.release();
  EXPECT_EQ(w.bytes()[0], std::byte{1});  // dropped pages are read again on the next touch
}

TEST_F(ExternalDataFile, LengthDefaultsToTheRestOfTheFile) {
  const Model opened = Model::open(model("weights.bin", "4096", ""));
  EXPECT_EQ(opened.tensor("w").bytes().size(), 16U);
}

TEST_F(ExternalDataFile, RangeAndSizeChecks) {
  expect_error(model("weights.bin", "4100", "16"), ErrorKind::out_of_bounds);
  expect_error(model("weights.bin", "99999", ""), ErrorKind::out_of_bounds);
  expect_error(model("weights.bin", "18446744073709551615", "16"), ErrorKind::out_of_bounds);
  expect_error(model("weights.bin", "0", "18446744073709551615"), ErrorKind::out_of_bounds);
  expect_error(model("weights.bin", "0", "32"), ErrorKind::bad_tensor);  // 32 bytes for FLOAT[4]
  expect_error(model("weights.bin", "-1", "16"), ErrorKind::bad_tensor);
  expect_error(model("weights.bin", "", "sixteen"), ErrorKind::bad_tensor);
  expect_error(model("missing.bin", "", ""), ErrorKind::io);
}

TEST_F(ExternalDataFile, PathPolicy) {
  expect_error(model("../outside.bin", "", ""), ErrorKind::unsafe_path);
  expect_error(model((root_ / "outside.bin").string(), "", ""), ErrorKind::unsafe_path);
  expect_error(model("sub/../../outside.bin", "", ""), ErrorKind::unsafe_path);
  std::filesystem::create_directory_symlink(root_, root_ / "model" / "link");
  expect_error(model("link/outside.bin", "", ""), ErrorKind::unsafe_path);
  std::filesystem::create_hard_link(root_ / "outside.bin", root_ / "model" / "hard.bin");
  expect_error(model("hard.bin", "", ""), ErrorKind::unsafe_path);
  std::filesystem::create_directory(root_ / "model" / "folder");
  expect_error(model("folder", "", ""), ErrorKind::unsafe_path);
  expect_error(model("/dev/zero", "", ""), ErrorKind::unsafe_path);
  // The option opens what the policy refuses, for users who lay out their files that way.
  OpenOptions trusting;
  trusting.allow_external_outside_folder = true;
  const Model opened = Model::open(model("../outside.bin", "", ""), trusting);
  EXPECT_EQ(opened.tensor("w").bytes()[0], std::byte{2});
}

TEST_F(ExternalDataFile, ReadModeCopiesInsteadOfMapping) {
  OpenOptions copy;
  copy.mode = LoadMode::read;
  const Model m = Model::open(model("weights.bin", "4096", "16"), copy);
  EXPECT_EQ(m.tensor("w").bytes()[0], std::byte{1});
}

}  // namespace
}  // namespace onnxmap
