// The indexing pass reads tensors in the common layout (dims, data_type, name, raw_data, in that
// order) on a fast path and every other tensor with the general walk. Both must agree on every
// tensor: each case here is written in the common layout and again with its fields reversed,
// which only the general walk reads, and the two models must give the same tensors.

#include <gtest/gtest.h>

#include "index/tensor_fields.hpp"
#include "model_builder.hpp"
#include "onnxmap/onnxmap.hpp"
#include "test_support.hpp"

namespace onnxmap::test {
namespace {

using TP = schema::TensorProto;
using GP = schema::GraphProto;
using MP = schema::ModelProto;

struct Case {
  std::string name;
  std::int32_t data_type;
  std::vector<std::int64_t> dims;
  std::optional<std::vector<std::byte>> raw;
};

std::vector<std::byte> bytes_count(std::size_t n) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>(i * 31 + 7);
  return out;
}

std::vector<Case> cases() {
  return {
      {"w", static_cast<std::int32_t>(DataType::float32), {2, 2}, bytes_count(16)},
      {"scalar", static_cast<std::int32_t>(DataType::int64), {}, bytes_count(8)},
      {"", static_cast<std::int32_t>(DataType::uint8), {3}, bytes_count(3)},
      {"no-bytes", static_cast<std::int32_t>(DataType::float16), {0, 5}, std::nullopt},
      {"empty-raw", static_cast<std::int32_t>(DataType::float16), {0}, std::vector<std::byte>{}},
      {"multi-byte-dims",
       static_cast<std::int32_t>(DataType::uint8),
       {1, 300, 2},
       bytes_count(600)},
      {"no-type", 0, {4}, bytes_count(4)},
      {"unknown-type", 99, {4}, bytes_count(4)},
      {"int4", static_cast<std::int32_t>(DataType::int4), {5}, bytes_count(3)},
      {std::string(5000, 'n'), static_cast<std::int32_t>(DataType::uint8), {2}, bytes_count(2)},
      {"utf8-\xc3\xa9", static_cast<std::int32_t>(DataType::uint8), {1}, bytes_count(1)},
  };
}

// The tensor's fields in number order (the common layout), or reversed.
Body tensor_body(const Case& c, bool reversed) {
  return [c, reversed](wire::Writer& t) {
    std::vector<std::function<void()>> fields;
    // The dims stay in their order: reversing them would make another tensor.
    fields.emplace_back([&t, &c] {
      for (const std::int64_t d : c.dims) t.field_int64(TP::kDims, d);
    });
    if (c.data_type != 0)
      fields.emplace_back([&t, &c] { t.field_int32(TP::kDataType, c.data_type); });
    if (!c.name.empty()) fields.emplace_back([&t, &c] { t.field_string(TP::kName, c.name); });
    if (c.raw) fields.emplace_back([&t, &c] { t.field_bytes(TP::kRawData, *c.raw); });
    if (reversed) std::reverse(fields.begin(), fields.end());
    for (const auto& write : fields) write();
  };
}

std::vector<std::byte> model_of(const std::vector<Case>& all, bool reversed) {
  return message([&](wire::Writer& m) {
    sub(m, MP::kGraph, [&](wire::Writer& g) {
      for (const Case& c : all) sub(g, GP::kInitializer, tensor_body(c, reversed));
    });
  });
}

TEST(CommonTensor, FastPathAndGeneralWalkAgree) {
  // The common model's tensors do take the fast path (all but the one whose name fills a page).
  for (const Case& c : cases()) {
    const std::vector<std::byte> bytes = message(tensor_body(c, false));
    detail::PodTable<std::int64_t> dims;
    detail::TensorFields out;
    EXPECT_EQ(detail::read_common_tensor(bytes.data(), {0, bytes.size()}, 4096, dims, out),
              c.name.size() < 4000)
        << c.name;
  }
  const Model common = Model::from_bytes(model_of(cases(), false));
  const Model reversed = Model::from_bytes(model_of(cases(), true));
  ASSERT_EQ(common.tensor_count(), cases().size());
  ASSERT_EQ(reversed.tensor_count(), cases().size());
  for (std::size_t i = 0; i < common.tensor_count(); ++i) {
    const Tensor a = common.tensor_at(i);
    const Tensor b = reversed.tensor_at(i);
    SCOPED_TRACE(a.path());
    EXPECT_EQ(a.name(), b.name());
    EXPECT_EQ(a.name(), cases()[i].name);
    EXPECT_EQ(a.data_type(), b.data_type());
    EXPECT_EQ(a.lookup_name(), b.lookup_name());
    EXPECT_TRUE(std::ranges::equal(a.dims(), b.dims()));
    EXPECT_EQ(a.storage(), b.storage());
    if (a.storage() == TensorStorage::raw && a.byte_size()) {
      EXPECT_TRUE(std::ranges::equal(a.data().bytes(), b.data().bytes()));
      EXPECT_TRUE(std::ranges::equal(a.data().bytes(), *cases()[i].raw));
    }
  }
}

TEST(CommonTensor, ReadsOnlyTheCommonLayout) {
  std::vector<std::vector<std::byte>> kept;  // the tensors' bytes, which `out` points into
  const auto read = [&kept](const Body& body, detail::TensorFields& out) {
    const std::vector<std::byte>& bytes = kept.emplace_back(message(body));
    detail::PodTable<std::int64_t> dims;
    dims.push_back(42);  // what was there before stays
    const bool ok = detail::read_common_tensor(bytes.data(), {0, bytes.size()}, 4096, dims, out);
    EXPECT_GE(dims.size(), 1U);
    EXPECT_EQ(dims[0], 42);
    if (!ok) {
      EXPECT_EQ(dims.size(), 1U) << "dims left behind by a refused tensor";
    }
    return ok;
  };
  detail::TensorFields out;
  ASSERT_TRUE(read(tensor_body(cases()[0], false), out));
  EXPECT_EQ(out.name, "w");
  EXPECT_EQ(out.data_type, static_cast<std::int32_t>(DataType::float32));
  ASSERT_TRUE(out.raw.has_value());
  EXPECT_EQ(out.raw->length, 16U);

  // Left to the general walk: fields out of order, repeated, unknown, past the first page.
  const std::vector<std::pair<std::string, Body>> refused = {
      {"reversed", tensor_body(cases()[0], true)},
      {"type twice",
       [](wire::Writer& t) {
         t.field_int32(TP::kDataType, 1);
         t.field_int32(TP::kDataType, 1);
       }},
      {"field after raw_data",
       [](wire::Writer& t) {
         t.field_bytes(TP::kRawData, bytes_count(4));
         t.field_string(TP::kDocString, "d");
       }},
      {"unknown field",
       [](wire::Writer& t) {
         t.field_int64(TP::kDims, 1);
         t.field_varint(1000, 1);
       }},
      {"negative dim", [](wire::Writer& t) { t.field_int64(TP::kDims, -1); }},
      {"packed dims",
       [](wire::Writer& t) {
         const std::uint64_t d[] = {1, 2};
         t.field_packed_varints(TP::kDims, d);
       }},
      {"long name", tensor_body(cases()[9], false)},
      // Another wire type than varint is an unknown field to protobuf, not a dim or a type
      // (found by fuzz_save_roundtrip: a fixed32 field 1 was read as a dim).
      {"fixed32 dims", [](wire::Writer& t) { t.field_fixed32(TP::kDims, 0x02101401); }},
      {"fixed64 data_type", [](wire::Writer& t) { t.field_fixed64(TP::kDataType, 1); }},
  };
  for (const auto& [what, body] : refused) {
    detail::TensorFields ignored;
    EXPECT_FALSE(read(body, ignored)) << what;
  }
  // Malformed bytes throw the cursor's error, the one the general walk would throw at the same
  // field.
  const std::vector<std::pair<std::string, Body>> malformed = {
      {"length past the end",
       [](wire::Writer& t) {
         t.field_int64(TP::kDims, 2);
         t.tag(TP::kName, wire::WireType::len);
         t.varint(50);
         t.raw(bytes_count(3));
       }},
      {"cut varint",
       [](wire::Writer& t) {
         t.tag(TP::kDims, wire::WireType::varint);
         t.raw(bytes_of({0x80}));
       }},
  };
  for (const auto& [what, body] : malformed) {
    detail::TensorFields ignored;
    EXPECT_THROW((void)read(body, ignored), Error) << what;
  }
}

TEST(CommonTensor, MalformedTensorsGetTheGeneralWalksErrors) {
  // A negative dim looks like the common layout but is refused there, and reported.
  const auto bytes = message([](wire::Writer& m) {
    sub(m, MP::kGraph, [](wire::Writer& g) {
      sub(g, GP::kInitializer, [](wire::Writer& t) {
        t.field_int64(TP::kDims, -3);
        t.field_int32(TP::kDataType, 1);
        t.field_string(TP::kName, "neg");
      });
    });
  });
  try {
    (void)Model::from_bytes(bytes);
    FAIL() << "a negative dim opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_tensor);
    EXPECT_NE(std::string(e.what()).find("negative dimension -3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onnxmap::test
