// Opening maps metadata, not payloads, and a prefetch of what is cached reads nothing.
// A kernel that maps whole page-cache folios on a fault
// (Linux 6.18 and later, for files cached in large folios, as a file just written is) makes
// payload pages around every tensor header resident unless the pass unmaps them again: these
// tests measure the model mapping's resident size in /proc/self/smaps after open.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "load/resident_plan.hpp"
#include "onnxmap/builder.hpp"
#include "onnxmap/onnxmap.hpp"
#include "onnxmap/save.hpp"
#include "schema/fields.hpp"
#include "test_support.hpp"
#include "wire/wire.hpp"

namespace onnxmap::test {
namespace {

constexpr std::size_t kTensors = 24;
constexpr std::size_t kTensorBytes = std::size_t{1} << 20U;

// Resident KiB of the mappings of `path` in this process (advice given to part of a mapping splits
// it in several), or -1 when it is not mapped.
long resident_kib(const std::filesystem::path& path) {
  std::ifstream smaps("/proc/self/smaps");
  const std::string name = std::filesystem::canonical(path).string();
  std::string line;
  bool inside = false;
  long total = -1;
  while (std::getline(smaps, line)) {
    // A mapping's header line holds its address range ("7f..-7f.. r--s ..."), and ends in the
    // file's name for a mapping of a file; its "Rss:" line follows.
    const std::size_t dash = line.find('-');
    if (dash != std::string::npos && dash < line.find(' ')) inside = line.ends_with(name);
    if (inside && line.starts_with("Rss:")) {
      std::istringstream fields(line.substr(4));
      long kib = 0;
      fields >> kib;
      total = std::max(total, 0L) + kib;
    }
  }
  return total;
}

std::vector<std::byte> filled(std::size_t size, unsigned seed) {
  std::vector<std::byte> out(size);
  for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<std::byte>((i * 13 + seed) & 0xFFU);
  return out;
}

// kTensors uint8 tensors of kTensorBytes each, "w0", "w1", ..., tensor i filled(kTensorBytes, i).
ModelBuilder tensors_of_a_mebibyte() {
  ModelBuilder m;
  m.ir_version(8).opset("", 17);
  GraphBuilder& g = m.graph("g");
  for (std::size_t i = 0; i < kTensors; ++i) {
    g.initializer(TensorBuilder("w" + std::to_string(i), DataType::uint8,
                                {static_cast<std::int64_t>(kTensorBytes)},
                                filled(kTensorBytes, i)));
  }
  return m;
}

class Resident : public TempFolder {
 protected:
  // Opens `path`, checks that under an eighth of the file became resident (without unmapping, a
  // folio per header: about all of it), and that the bytes still read back right.
  void expect_payloads_not_resident(const std::filesystem::path& path) {
    const Model model = Model::open(path);
    const long kib = resident_kib(path);
    ASSERT_GE(kib, 0) << "no mapping of " << path << " in /proc/self/smaps";
    const auto file_kib = static_cast<long>(std::filesystem::file_size(path) / 1024);
    EXPECT_LT(kib, file_kib / 8) << "resident after open, of " << file_kib << " KiB";
    ASSERT_EQ(model.tensor_count(), kTensors);
    for (std::size_t i = 0; i < kTensors; i += 7) {
      const TensorData data = model.tensor_at(i).data();
      EXPECT_TRUE(std::ranges::equal(data.bytes(), filled(kTensorBytes, i))) << i;
    }
  }
};

// Reads `path` start to end the way `cat` does, after dropping it from the page cache, so that
// the page cache holds it in readahead's folios rather than in the writer's. (A 1.7 GB model read
// this way was cached in 2 MiB folios that the kernel mapped with one page-table entry each,
// which only MADV_NOHUGEPAGE on the map keeps trimmable; files this small do not get them.)
void recache_by_readahead(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  (void)::fdatasync(fd);
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  std::vector<char> buffer(std::size_t{1} << 20U);
  while (::read(fd, buffer.data(), buffer.size()) > 0) {
  }
  ::close(fd);
}

TEST_F(Resident, OpeningLeavesRawPayloadsUnmapped) {
  const ModelBuilder m = tensors_of_a_mebibyte();
  save(m, at("raw.onnx"));
  expect_payloads_not_resident(at("raw.onnx"));
  recache_by_readahead(at("raw.onnx"));
  expect_payloads_not_resident(at("raw.onnx"));
}

// libprotobuf writes typed data before the name (field 4 before 8), so the pass reads past each
// payload inside the tensor as well.
TEST_F(Resident, OpeningLeavesTypedPayloadsUnmapped) {
  namespace s = schema;
  wire::Writer graph;
  for (std::size_t i = 0; i < kTensors; ++i) {
    const std::vector<std::byte> bytes = filled(kTensorBytes, i);
    wire::Writer tensor;
    tensor.field_int64(s::TensorProto::kDims, static_cast<std::int64_t>(kTensorBytes / 4));
    tensor.field_int32(s::TensorProto::kDataType, static_cast<std::int32_t>(DataType::float32));
    tensor.field_bytes(s::TensorProto::kFloatData, bytes);  // packed fixed32: the same bytes
    tensor.field_string(s::TensorProto::kName, "w" + std::to_string(i));
    graph.field_bytes(s::GraphProto::kInitializer, tensor.bytes());
  }
  wire::Writer model;
  model.field_int64(s::ModelProto::kIrVersion, 8);
  model.field_bytes(s::ModelProto::kGraph, graph.bytes());
  write(at("typed.onnx"), model.bytes());
  expect_payloads_not_resident(at("typed.onnx"));
}

// A prefetch of bytes all in the page cache reads nothing: plan_resident says so with one kernel
// count per window of payloads, and says no as soon as one page of one item is not cached.
TEST_F(Resident, WarmPlansAreKnownResidentAndColdOnesAreNot) {
  const ModelBuilder m = tensors_of_a_mebibyte();
  // External data: no page of the data file is mapped, so all of it can be dropped below.
  SaveOptions options;
  options.external_data = ExternalData::external;
  options.location = "plan.data";
  save(m, at("plan.onnx"), options);
  const Model model = Model::open(at("plan.onnx"));
  std::vector<LoadItem> plan;
  for (std::size_t i = 0; i < kTensors; ++i) plan.push_back({model.tensor_at(i)});
  recache_by_readahead(at("plan.data"));
  EXPECT_TRUE(detail::plan_resident(plan));
  EXPECT_TRUE(detail::plan_resident({}));
  // Rows of a tensor are planned the slow way, whose errors a bad row range must get.
  EXPECT_FALSE(detail::plan_resident(std::vector<LoadItem>{{model.tensor_at(0), 0, 8}}));

  // Dropped from the page cache: cold.
  test::evict(at("plan.data"));
  EXPECT_FALSE(detail::plan_resident(plan));
  prefetch(plan);
  EXPECT_TRUE(detail::plan_resident(plan)) << "prefetch read the plan into the page cache";
}

// Whether some mapping of `path` is advised for huge pages ("hg" among its VmFlags in smaps).
bool mapped_with_huge_page_advice(const std::filesystem::path& path) {
  std::ifstream smaps("/proc/self/smaps");
  const std::string name = std::filesystem::canonical(path).string();
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    // A mapping's header line holds its address range; a file mapping's ends in the file's name.
    if (line.find('-') < line.find(' ') && line.find(' ') != std::string::npos &&
        !line.starts_with("VmFlags")) {
      inside = line.ends_with(name);
    }
    if (inside && line.starts_with("VmFlags:") && line.find(" hg") != std::string::npos) {
      return true;
    }
  }
  return false;
}

// A large payload read through the map may be mapped in 2 MiB pages: its blocks that hold
// payload bytes only are advised so, and nothing is before a payload is read (the open's trimmer
// needs small pages around the metadata).
TEST_F(Resident, ReadPayloadsMayBeMappedInHugePages) {
  constexpr std::size_t kLarge = std::size_t{8} << 20U;
  ModelBuilder m;
  m.ir_version(8).opset("", 17);
  m.graph("g").initializer(TensorBuilder("big", DataType::uint8,
                                         {static_cast<std::int64_t>(kLarge)}, filled(kLarge, 3)));
  save(m, at("big.onnx"));
  const Model model = Model::open(at("big.onnx"));
  EXPECT_FALSE(mapped_with_huge_page_advice(at("big.onnx")));
  const Tensor big = model.tensor("big");
  EXPECT_TRUE(std::ranges::equal(big.bytes(), filled(kLarge, 3)));
  EXPECT_TRUE(mapped_with_huge_page_advice(at("big.onnx")));
  // Released and read again: the same bytes.
  big.release();
  EXPECT_TRUE(std::ranges::equal(big.bytes(), filled(kLarge, 3)));
}

// slice_rows maps a cached slice's pages in one call (MADV_POPULATE_READ) before it hands the view
// out, instead of leaving a fault per 64 KiB to the first read: the mapping's resident size grows
// by the slice before any byte of it is read.
TEST_F(Resident, SlicesAreMappedBeforeTheyAreRead) {
  constexpr std::size_t kRows = 256;
  constexpr std::size_t kRowBytes = std::size_t{32} << 10U;  // 8 MiB in all
  ModelBuilder m;
  m.ir_version(8).opset("", 17);
  m.graph("g").initializer(
      TensorBuilder("w", DataType::uint8,
                    {static_cast<std::int64_t>(kRows), static_cast<std::int64_t>(kRowBytes)},
                    filled(kRows * kRowBytes, 5)));
  save(m, at("slice.onnx"));
  const Model model = Model::open(at("slice.onnx"));
  const long before = resident_kib(at("slice.onnx"));
  const auto rows = model.tensor("w").slice_rows(64, 192);  // 4 MiB, cached since the write
  const long after = resident_kib(at("slice.onnx"));
  EXPECT_GE(after - before, static_cast<long>(rows.size() / 1024 * 9 / 10))
      << "resident KiB before " << before << ", after " << after;
  const std::vector<std::byte> all = filled(kRows * kRowBytes, 5);
  EXPECT_TRUE(std::ranges::equal(rows, std::span(all).subspan(64 * kRowBytes, rows.size())));
}

}  // namespace
}  // namespace onnxmap::test
