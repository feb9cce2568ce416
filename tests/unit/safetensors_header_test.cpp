// safetensors headers (index/safetensors_header.hpp): a valid one read whole; each hostile one a
// clean onnxmap::Error of the kind and words that say what is wrong.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "index/safetensors_header.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::test {
namespace {

using detail::parse_safetensors_header;

// The 8-byte length, `json` padded to 8 bytes, then `data` bytes of zeros; `length` overrides
// the length written.
std::vector<std::byte> file_of(std::string json, std::size_t data, std::uint64_t length = 0) {
  json.resize((json.size() + 7) / 8 * 8, ' ');
  if (length == 0) length = json.size();
  std::vector<std::byte> out;
  for (int b = 0; b < 8; ++b) out.push_back(std::byte((length >> (8 * b)) & 0xFFU));
  for (const char c : json) out.push_back(static_cast<std::byte>(c));
  out.resize(out.size() + data);
  return out;
}

Error error_of(const std::vector<std::byte>& file) {
  try {
    (void)parse_safetensors_header(file, file.size(), "m.safetensors");
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error";
  return Error(ErrorKind::invalid_argument, "none");
}

TEST(SafetensorsHeader, ReadsAValidHeader) {
  const auto file = file_of(
      R"({"__metadata__":{"source":"m.onnx"},"b":{"dtype":"F4","shape":[4],"data_offsets":[16,18]},)"
      R"("a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})",
      18);
  const auto header = parse_safetensors_header(file, file.size(), "m.safetensors");
  EXPECT_EQ(header.data_start, file.size() - 18);
  EXPECT_EQ(header.metadata.at("source"), "m.onnx");
  ASSERT_EQ(header.tensors.size(), 2U);
  EXPECT_EQ(header.tensors[0].name, "a");  // by offset
  EXPECT_EQ(header.tensors[0].shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(header.tensors[1].begin, header.data_start + 16);
  EXPECT_EQ(detail::onnx_type_of_safetensors("BF16"), DataType::bfloat16);
  EXPECT_EQ(detail::safetensors_dtype(DataType::int4), std::nullopt);
}

TEST(SafetensorsHeader, RefusesWhatTheFormatForbids) {
  struct Case {
    std::vector<std::byte> file;
    ErrorKind kind;
    std::string words;
  };
  const std::string a4 = R"("a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]})";
  const std::vector<Case> cases{
      {file_of("{" + a4 + "}", 4, 1 << 20), ErrorKind::out_of_bounds, "runs past the end"},
      {file_of("{}", 0, 100'000'001), ErrorKind::limit_exceeded, "passes safetensors' limit"},
      {file_of("[1,2]", 0), ErrorKind::bad_tensor, "not a JSON object"},
      {file_of("{\"a\":", 0), ErrorKind::bad_tensor, "not a JSON object"},
      {file_of("{" + a4 + R"(,"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})", 6),
       ErrorKind::bad_tensor, "overlaps the one before it"},
      {file_of(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
               R"("b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})",
               6),
       ErrorKind::bad_tensor, "a hole before tensor 'b'"},
      {file_of("{" + a4 + "}", 6), ErrorKind::bad_tensor, "the tensors end at byte"},
      {file_of(R"({"a":{"dtype":"F16","shape":[3],"data_offsets":[0,4]}})", 4),
       ErrorKind::bad_tensor, "F16 of its shape does not take the 4 bytes"},
      {file_of(R"({"a":{"dtype":"I4","shape":[2],"data_offsets":[0,1]}})", 1),
       ErrorKind::bad_tensor, "dtype \"I4\", which onnxmap does not know"},
      {file_of(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", 1),
       ErrorKind::bad_tensor, "not a non-negative integer"},
      {file_of(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[1]}})", 1), ErrorKind::bad_tensor,
       "no data_offsets"},
      {file_of(R"({"__metadata__":{"k":1}})", 0), ErrorKind::bad_tensor, "is not a string"},
      {std::vector<std::byte>(5), ErrorKind::out_of_bounds, "shorter than the 8-byte"},
  };
  for (const Case& c : cases) {
    const Error e = error_of(c.file);
    EXPECT_EQ(e.kind(), c.kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.words), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("m.safetensors"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onnxmap::test
