// External data that lies: ranges past the end of the data file or overflowing 64 bits, a data
// file shorter than its tensors, and locations that name a device, a FIFO, a folder, or a file
// outside the model's folder. Each is refused at open with the field path of the reference, and
// none may hang (a FIFO opened for reading would block) or read without end (/dev/zero).

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "model_builder.hpp"
#include "onnxmap/model.hpp"
#include "test_support.hpp"

namespace onnxmap {
namespace {

namespace fs = std::filesystem;
using test::sub;
using TP = schema::TensorProto;

struct ExternalRef {
  std::string name;
  std::string location;
  std::string offset;  // "" leaves the key out
  std::string length;
};

// A model whose initializers are FLOAT[4] tensors stored as `refs` say.
std::vector<std::byte> model_bytes(const std::vector<ExternalRef>& refs) {
  return test::message([&](wire::Writer& m) {
    sub(m, schema::ModelProto::kGraph, [&](wire::Writer& g) {
      for (const ExternalRef& ref : refs) {
        sub(g, schema::GraphProto::kInitializer, [&](wire::Writer& t) {
          t.field_int64(TP::kDims, 4);
          t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::float32));
          t.field_string(TP::kName, ref.name);
          for (const auto& entry :
               {std::pair<std::string_view, const std::string&>{"location", ref.location},
                {"offset", ref.offset},
                {"length", ref.length}}) {
            if (entry.second.empty()) continue;
            sub(t, TP::kExternalData, [&](wire::Writer& e) {
              e.field_string(schema::StringStringEntryProto::kKey, entry.first);
              e.field_string(schema::StringStringEntryProto::kValue, entry.second);
            });
          }
          t.field_int32(TP::kDataLocation, static_cast<std::int32_t>(DataLocation::external));
        });
      }
    });
  });
}

class ExternalHostile : public test::TempFolder {
 protected:
  void SetUp() override {
    TempFolder::SetUp();
    fs::create_directories(folder());
    write(folder() / "data.bin", 24);  // room for one FLOAT[4] at offset 8, not two
    write(folder() / "short.bin", 8);  // half a FLOAT[4]
    write(root_ / "outside.bin", 16);
  }
  [[nodiscard]] fs::path folder() const { return root_ / "model"; }

  static void write(const fs::path& path, std::size_t size) {
    std::ofstream(path, std::ios::binary) << std::string(size, '\x01');
  }

  // Opens `refs` (from memory, resolving against the model folder) and expects `kind` at `path`.
  void expect_error(const std::vector<ExternalRef>& refs, ErrorKind kind, const std::string& path,
                    const OpenOptions& options = {}) {
    for (const LoadMode mode : {LoadMode::map, LoadMode::read}) {
      OpenOptions with_mode = options;
      with_mode.mode = mode;
      try {
        (void)Model::from_bytes(model_bytes(refs), with_mode, schema::MessageKind::ModelProto,
                                folder());
        ADD_FAILURE() << "opened " << refs.back().location << "; expected " << to_string(kind);
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), kind) << e.what();
        EXPECT_EQ(e.field_path(), path) << e.what();
      }
    }
  }
};

TEST_F(ExternalHostile, RangesPastTheFileOrOverflowing) {
  const std::string at = "graph.initializer[0].external_data";
  expect_error({{"w", "data.bin", "16", "16"}}, ErrorKind::out_of_bounds, at);  // 16 + 16 > 24
  expect_error({{"w", "data.bin", "25", ""}}, ErrorKind::out_of_bounds, at);    // offset past end
  // offset + length wraps around 2^64 to a small number: must not pass for "inside".
  expect_error({{"w", "data.bin", "8", "18446744073709551608"}}, ErrorKind::out_of_bounds, at);
  expect_error({{"w", "data.bin", "18446744073709551615", "16"}}, ErrorKind::out_of_bounds, at);
  expect_error({{"w", "data.bin", "18446744073709551616", "16"}}, ErrorKind::bad_tensor, at);
  expect_error({{"w", "data.bin", "8", "+16"}}, ErrorKind::bad_tensor, at);
}

TEST_F(ExternalHostile, DataFileShorterThanItsTensorsIsCaughtAtOpen) {
  // No length: the rest of the file (8 bytes) is what FLOAT[4] gets, and it needs 16.
  expect_error({{"w", "short.bin", "", ""}}, ErrorKind::bad_tensor,
               "graph.initializer[0].external_data");
  // The first tensor fits, the second runs past the end; the error names the second.
  expect_error({{"a", "data.bin", "8", "16"}, {"b", "data.bin", "16", "16"}},
               ErrorKind::out_of_bounds, "graph.initializer[1].external_data");
  const Model fits = Model::from_bytes(model_bytes({{"a", "data.bin", "8", "16"}}), {},
                                       schema::MessageKind::ModelProto, folder());
  EXPECT_EQ(fits.tensor("a").bytes().size(), 16U);
}

TEST_F(ExternalHostile, DevicesFifosAndFoldersAreRefused) {
  const std::string at = "graph.initializer[0].external_data";
  fs::create_symlink("/dev/zero", folder() / "zero");
  fs::create_directory(folder() / "sub");
  ASSERT_EQ(::mkfifo((folder() / "fifo").c_str(), 0600), 0);
  expect_error({{"w", "/dev/zero", "", "16"}}, ErrorKind::unsafe_path, at);
  expect_error({{"w", "zero", "", "16"}}, ErrorKind::unsafe_path, at);
  expect_error({{"w", "fifo", "", "16"}}, ErrorKind::unsafe_path, at);
  expect_error({{"w", "sub", "", "16"}}, ErrorKind::unsafe_path, at);
  expect_error({{"w", "sub/", "", "16"}}, ErrorKind::unsafe_path, at);
  expect_error({{"w", ".", "", "16"}}, ErrorKind::unsafe_path, at);
  // Trusting callers may reach outside the folder, but never into a device or a FIFO: mapping
  // /dev/zero or reading it whole (LoadMode::read) would never end, and a FIFO blocks.
  OpenOptions trusting;
  trusting.allow_external_outside_folder = true;
  expect_error({{"w", "/dev/zero", "", "16"}}, ErrorKind::unsafe_path, at, trusting);
  expect_error({{"w", "zero", "", "16"}}, ErrorKind::unsafe_path, at, trusting);
  expect_error({{"w", "fifo", "", "16"}}, ErrorKind::unsafe_path, at, trusting);
}

TEST_F(ExternalHostile, EscapesThroughLinksAndDotDot) {
  const std::string at = "graph.initializer[0].external_data";
  fs::create_directory(folder() / "sub");
  fs::create_symlink("../../outside.bin", folder() / "sub" / "up");
  fs::create_symlink("../data.bin", folder() / "sub" / "in");
  fs::create_hard_link(root_ / "outside.bin", folder() / "hard.bin");
  expect_error({{"w", "sub/up", "", ""}}, ErrorKind::unsafe_path, at);
  expect_error({{"w", "hard.bin", "", ""}}, ErrorKind::unsafe_path, at);
  expect_error({{"w", "../outside.bin", "", ""}}, ErrorKind::unsafe_path, at);
  expect_error({{"w", "sub/../../outside.bin", "", ""}}, ErrorKind::unsafe_path, at);
  expect_error({{"w", (root_ / "outside.bin").string(), "", ""}}, ErrorKind::unsafe_path, at);
  expect_error({{"w", std::string("data.bin\0x", 10), "", ""}}, ErrorKind::unsafe_path, at);
  // A symlink that stays inside the folder is fine.
  const Model inside = Model::from_bytes(model_bytes({{"w", "sub/in", "8", "16"}}), {},
                                         schema::MessageKind::ModelProto, folder());
  EXPECT_EQ(inside.tensor("w").bytes().size(), 16U);
}

// A Hugging Face Hub cache: each file of a snapshot is a symlink into the repository's blobs/.
// Those links are followed; one leading elsewhere, or a snapshots/ folder outside a models--
// repository, is still refused.
TEST_F(ExternalHostile, HubCacheSnapshotsLinkIntoTheirBlobs) {
  const fs::path repo = root_ / "hub" / "models--org--name";
  const fs::path snapshot = repo / "snapshots" / "0123abcd";
  fs::create_directories(repo / "blobs");
  fs::create_directories(snapshot / "onnx");
  write(repo / "blobs" / "9f86d081", 16);
  fs::create_symlink("../../blobs/9f86d081", snapshot / "w.bin");
  fs::create_symlink("../../../blobs/9f86d081", snapshot / "onnx" / "w.bin");
  fs::create_symlink(root_ / "outside.bin", snapshot / "out.bin");
  const auto open = [](const fs::path& folder, const std::string& location) {
    return Model::from_bytes(model_bytes({{"w", location, "", ""}}), {},
                             schema::MessageKind::ModelProto, folder);
  };
  const Model top = open(snapshot, "w.bin");
  EXPECT_EQ(top.tensor("w").bytes().size(), 16U);
  const Model below = open(snapshot / "onnx", "w.bin");
  EXPECT_EQ(below.tensor("w").bytes().size(), 16U);
  try {
    (void)open(snapshot, "out.bin");
    ADD_FAILURE() << "followed a snapshot's link out of its repository";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsafe_path) << e.what();
  }
  const fs::path fake = root_ / "plain" / "snapshots" / "rev";  // no models-- repository
  fs::create_directories(fake);
  fs::create_directories(root_ / "plain" / "blobs");
  write(root_ / "plain" / "blobs" / "b", 16);
  fs::create_symlink("../../blobs/b", fake / "w.bin");
  try {
    (void)open(fake, "w.bin");
    ADD_FAILURE() << "followed a link out of a folder that is no Hub snapshot";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsafe_path) << e.what();
  }
}

}  // namespace
}  // namespace onnxmap
