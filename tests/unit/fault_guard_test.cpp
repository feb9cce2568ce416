// Faults in mapped bytes become errors on onnxmap's own copies (io/fault_guard.hpp): a model
// truncated after open, then every guarded path (statistics, decoding, copies, the loaders in
// map and read modes, the device loader's host path, check), a thread that faults while another
// goes on, and the handlers that were there before onnxmap's: an application's gets the faults
// outside onnxmap's copies, and with none the process dies of SIGBUS as it did before.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <numeric>
#include <thread>

#include "device/device_load.hpp"
#include "device/host_engine.hpp"
#include "io/fault_guard.hpp"
#include "io/guarded_bytes.hpp"
#include "model_builder.hpp"
#include "onnxmap/onnxmap.hpp"
#include "test_support.hpp"
#include "tooling.hpp"

namespace onnxmap {
namespace {

namespace fs = std::filesystem;
using TP = schema::TensorProto;

constexpr std::uint64_t kKept = 8192;  // bytes left when the model is cut: two pages
constexpr std::int64_t kFloats = 16384;

// A model whose first tensor "head" lies in the first kKept bytes, "pad" across them, and whose
// others lie after:
// "w" (FLOAT raw), "typed" (FLOAT in float_data), "nibbles" (INT4 raw), "bools" (BOOL raw).
std::vector<std::byte> model_bytes() {
  std::vector<std::byte> floats(kFloats * 4);
  for (std::size_t i = 0; i < floats.size(); ++i) floats[i] = static_cast<std::byte>(i % 61);
  std::vector<std::uint32_t> typed(kFloats);
  for (std::size_t i = 0; i < typed.size(); ++i) typed[i] = 0x3F800000U;  // 1.0f
  return test::message([&](wire::Writer& m) {
    m.field_int64(schema::ModelProto::kIrVersion, 8);
    test::sub(m, schema::ModelProto::kGraph, [&](wire::Writer& g) {
      g.field_string(schema::GraphProto::kName, "main");
      test::sub(g, schema::GraphProto::kInitializer,
                test::raw_tensor("head", DataType::float32, {1024},
                                 std::vector<std::byte>(floats.begin(), floats.begin() + 4096)));
      // Across the cut, so that the tensors after it start past it.
      test::sub(g, schema::GraphProto::kInitializer,
                test::raw_tensor("pad", DataType::uint8, {8192},
                                 std::vector<std::byte>(8192, std::byte{0})));
      test::sub(g, schema::GraphProto::kInitializer,
                test::raw_tensor("w", DataType::float32, {kFloats}, floats));
      test::sub(g, schema::GraphProto::kInitializer, [&](wire::Writer& t) {
        t.field_int64(TP::kDims, kFloats);
        t.field_int32(TP::kDataType, static_cast<std::int32_t>(DataType::float32));
        t.field_string(TP::kName, "typed");
        t.field_packed_fixed32(TP::kFloatData, typed);
      });
      test::sub(g, schema::GraphProto::kInitializer,
                test::raw_tensor("nibbles", DataType::int4, {8 * kFloats}, floats));
      test::sub(g, schema::GraphProto::kInitializer,
                test::raw_tensor("bools", DataType::boolean, {kFloats * 4},
                                 std::vector<std::byte>(floats.size(), std::byte{1})));
    });
  });
}

class FaultGuard : public test::TempFolder {
 protected:
  void SetUp() override {
    TempFolder::SetUp();
    path_ = at("m.onnx");
    write(path_, model_bytes());
    model_.emplace(Model::open(path_));
    // Views are taken before the cut: their names lie past it too.
    for (const char* name : {"head", "w", "typed", "nibbles", "bools"}) {
      tensors_.push_back(model_->tensor(name));
    }
    ASSERT_LT(model_->tensor("head").file_offset() + 4096, kKept);
    ASSERT_GT(model_->tensor("w").file_offset(), kKept);
  }
  void cut() const { fs::resize_file(path_, kKept); }
  [[nodiscard]] const Tensor& head() const { return tensors_[0]; }
  [[nodiscard]] const Tensor& w() const { return tensors_[1]; }
  [[nodiscard]] const Tensor& typed() const { return tensors_[2]; }
  [[nodiscard]] const Tensor& nibbles() const { return tensors_[3]; }

  // Expects `call()` to throw the error of a fault past the cut: io, naming the file and its size.
  template <class Call>
  void expect_shrunk(Call&& call) const {
    test::expect_shrunk(call, path_, kKept);
  }

  fs::path path_;
  std::optional<Model> model_;
  std::vector<Tensor> tensors_;
};

TEST_F(FaultGuard, StatisticsAndDecodingOfLostBytesAreErrors) {
  cut();
  const auto bytes = w().bytes();
  expect_shrunk([&] { (void)tensor_stats(bytes, DataType::float32, kFloats); });
  expect_shrunk([&] { (void)tooling::decode_values(bytes, DataType::float32, kFloats); });
  expect_shrunk([&] { (void)compare_values(bytes, bytes, DataType::float32, kFloats); });
  // Counted by bit pattern (16 bits and less), on the stack of tables each thread keeps.
  expect_shrunk([&] { (void)tensor_stats(nibbles().bytes(), DataType::int4, 8 * kFloats); });
  std::vector<std::byte> unpacked(8 * kFloats);
  expect_shrunk([&] { unpack_sub_byte(DataType::int4, nibbles().bytes(), unpacked); });
  expect_shrunk([&] { (void)typed().data(); });
  // The bytes before the cut still count.
  EXPECT_EQ(tensor_stats(head().bytes(), DataType::float32, 1024).count, 1024U);
}

TEST_F(FaultGuard, AFaultMidwayLeavesTheCountingTablesClean) {
  cut();
  // 4096 float16 elements from a page before the cut into the page after: counted through the
  // thread's tables, which the fault interrupts after the first page.
  const std::byte* file = head().bytes().data() - head().file_offset();
  const std::span<const std::byte> across(file + kKept - 4096, 8192);
  expect_shrunk([&] { (void)tensor_stats(across, DataType::float16, 4096); });
  const std::vector<std::byte> sevens(8192, std::byte{7});
  const TensorStats s = tensor_stats(sevens, DataType::float16, 4096);
  EXPECT_EQ(std::accumulate(s.histogram.begin(), s.histogram.end(), std::uint64_t{0}), 4096U);
  EXPECT_EQ(s.min, s.max);
}

TEST_F(FaultGuard, CopiesComparisonsAndTouchesOfLostBytesAreErrors) {
  cut();
  const auto bytes = w().bytes();
  std::vector<std::byte> copy(bytes.size());
  expect_shrunk([&] { copy_bytes(bytes, copy); });
  expect_shrunk([&] { (void)detail::equal_bytes(copy, bytes); });
  expect_shrunk([&] { (void)detail::touch_pages(bytes); });
  // A second fault on the same thread is caught too (the handler does not block SIGBUS).
  expect_shrunk([&] { copy_bytes(bytes, copy); });
  std::vector<std::byte> kept(4096);
  copy_bytes(head().bytes(), kept);
  EXPECT_EQ(kept[60], std::byte{60});
}

TEST_F(FaultGuard, LoadsInEveryModeEndInAnError) {
  cut();
  const std::vector<LoadItem> typed_only{{typed()}};
  const std::vector<LoadItem> all = plan(*model_);
  for (const LoadMode mode : {LoadMode::map, LoadMode::read, LoadMode::direct}) {
    LoadOptions options;
    options.mode = mode;
    // Typed fields are decoded from the map in every mode: the guarded path.
    expect_shrunk([&] { (void)load(typed_only, {}, options); });
    const auto error = test::error_of([&] { (void)load(all, {}, options); });
    ASSERT_TRUE(error) << to_string(mode);
    EXPECT_EQ(error->kind(), ErrorKind::io) << error->what();
    EXPECT_NE(std::string(error->what()).find("shrink"), std::string::npos) << error->what();
    const auto stats = test::error_of([&] { (void)plan_stats(all, 32, options); });
    ASSERT_TRUE(stats) << to_string(mode);
    EXPECT_EQ(stats->kind(), ErrorKind::io) << stats->what();
  }
  std::vector<std::byte> buffer(typed().byte_size());
  const std::span<std::byte> buffers[] = {buffer};
  expect_shrunk([&] { (void)load_into(typed_only, buffers, {}); });
}

TEST_F(FaultGuard, DeviceLoadsIntoHostMemoryEndInAnError) {
  cut();
  // Registered: the host engine copies straight from the mapping, and faults there.
  const std::vector<LoadItem> items{{w()}};
  std::vector<std::byte> target(w().byte_size());
  void* const pointers[] = {target.data()};
  DeviceLoadOptions options;
  options.device = "host";
  options.load.mode = LoadMode::map;
  options.path = DevicePath::registered;
  detail::HostCopyEngine engine;
  expect_shrunk([&] { (void)detail::load_to_device(items, {pointers, nullptr}, options, engine); });
  // Typed fields are decoded (guarded) before they are staged.
  const std::vector<LoadItem> typed_only{{typed()}};
  options.path = DevicePath::pinned;
  expect_shrunk([&] {
    (void)detail::load_to_device(typed_only, {pointers, nullptr}, options, engine);
  });
}

TEST_F(FaultGuard, CheckingPayloadsEndsInAnError) {
  cut();
  CheckOptions options;
  options.read_data = true;
  const auto error = test::error_of([&] { (void)check(*model_, options); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind(), ErrorKind::io) << error->what();
}

TEST_F(FaultGuard, CheckingTheDataOfAShrunkDataFileEndsInAnError) {
  SynthOptions options;
  options.layers = 1;
  options.hidden = 256;
  options.external_data = true;
  const fs::path path = at("ext.onnx");
  (void)synth(path, options);
  const Model model = Model::open(path);
  fs::resize_file(at("ext.onnx.data"), fs::file_size(at("ext.onnx.data")) / 2 / 4096 * 4096);
  CheckOptions read;
  read.read_data = true;
  const std::string message = test::expect_error([&] { (void)check(model, read); }, ErrorKind::io);
  EXPECT_NE(message.find("ext.onnx.data"), std::string::npos) << message;
  EXPECT_NE(message.find("shrink"), std::string::npos) << message;
}

TEST_F(FaultGuard, AThreadThatFaultsLeavesTheOthersGoingOn) {
  cut();
  std::atomic<bool> faulting{true};
  std::atomic<int> errors{0};
  std::thread faulter([&] {
    for (int i = 0; i < 200; ++i) {
      try {
        (void)detail::touch_pages(w().bytes());
      } catch (const Error&) {
        ++errors;
      }
    }
    faulting = false;
  });
  int counted = 0;
  do {
    EXPECT_EQ(tensor_stats(head().bytes(), DataType::float32, 1024).count, 1024U);
    ++counted;
  } while (faulting || counted < 10);
  faulter.join();
  EXPECT_EQ(errors, 200);
}

// Nested guards over kept and lost bytes (run_guarded's kernels are plain functions).
struct Nested {
  std::span<const std::byte> kept, lost;
  const void* inner_fault = nullptr;
  bool inner_returned = false;
};
void touch_lost(void* p) {
  volatile std::byte lost = static_cast<Nested*>(p)->lost[8];
  (void)lost;
}
void inner_over_kept(void* p) {
  auto* n = static_cast<Nested*>(p);
  n->inner_returned = detail::run_guarded(n->kept, {}, touch_lost, n, &n->inner_fault);
}
void inner_over_lost(void* p) {
  auto* n = static_cast<Nested*>(p);
  n->inner_returned = detail::run_guarded(n->lost, {}, touch_lost, n, &n->inner_fault);
}

TEST_F(FaultGuard, AFaultGoesToTheInnermostGuardCoveringIt) {
  cut();
  Nested n{head().bytes(), w().bytes()};
  // The inner guard covers only the kept bytes, so a fault in the lost ones jumps past it to the
  // outer guard, releasing both guards' slots: a thousand rounds would exhaust them otherwise.
  for (int round = 0; round < 1000; ++round) {
    const void* fault = nullptr;
    ASSERT_FALSE(detail::run_guarded(n.lost, {}, inner_over_kept, &n, &fault));
    ASSERT_EQ(fault, n.lost.data() + 8);
  }
  // An inner guard that covers the fault takes it, and the outer one runs on.
  const void* fault = nullptr;
  EXPECT_TRUE(detail::run_guarded(n.lost, {}, inner_over_lost, &n, &fault));
  EXPECT_FALSE(n.inner_returned);
  EXPECT_EQ(n.inner_fault, n.lost.data() + 8);
}

// Guards nested deeper than one block of the guards' table (64 slots): the table grows, and a
// fault in the innermost still jumps to it.
struct Deep {
  std::span<const std::byte> lost;
  int left = 0;
  int faults = 0;  // guards that returned false: the innermost only
};
void nest_deeper(void* p) {
  auto* d = static_cast<Deep*>(p);
  if (d->left-- == 0) {
    volatile std::byte lost = d->lost[8];  // the jump leaves this guard here
    (void)lost;
    return;
  }
  const void* fault = nullptr;
  if (!detail::run_guarded(d->lost, {}, nest_deeper, d, &fault)) ++d->faults;
}

TEST_F(FaultGuard, GuardsNestWithoutALimit) {
  cut();
  Nested n{head().bytes(), w().bytes()};
  Deep d{n.lost, 300};
  const void* fault = nullptr;
  EXPECT_TRUE(detail::run_guarded(d.lost, {}, nest_deeper, &d, &fault));
  EXPECT_EQ(d.faults, 1);
  // Every slot was given back: a thousand guards at once on this thread still find slots.
  for (int round = 0; round < 1000; ++round) {
    ASSERT_FALSE(detail::run_guarded(n.lost, {}, inner_over_kept, &n, &fault));
  }
}

TEST_F(FaultGuard, AFaultNoOpenModelHoldsIsStillAnError) {
  // A map of the caller's own, not a model's: the error says so, with no file.
  const fs::path own = at("own.bin");
  write(own, std::vector<std::byte>(3 * 4096, std::byte{1}));
  const int fd = ::open(own.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void* map = ::mmap(nullptr, 3 * 4096, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  ASSERT_NE(map, MAP_FAILED);
  fs::resize_file(own, 4096);
  const std::span<const std::byte> bytes(static_cast<const std::byte*>(map), 3 * 4096);
  const std::string message =
      test::expect_error([&] { (void)detail::touch_pages(bytes); }, ErrorKind::io);
  EXPECT_NE(message.find("no open model"), std::string::npos) << message;
  ::munmap(map, 3 * 4096);
}

// In a child process (a death test), where no guard has installed onnxmap's handler yet.
class FaultGuardDeath : public FaultGuard {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    FaultGuard::SetUp();
  }
  // Touches a lost page outside any guard.
  void touch_unguarded() const {
    volatile std::byte b = w().bytes()[100];
    (void)b;
  }
  // A guarded fault: an error, so the handler is installed and takes no other path.
  void guarded_fault() const {
    std::vector<std::byte> copy(w().byte_size());
    try {
      copy_bytes(w().bytes(), copy);
    } catch (const Error&) {
      return;
    }
    ::_exit(3);  // no error: the test fails on the exit code
  }
};

void exit_42(int, siginfo_t* info, void*) {
  ::_exit(info->si_code > 0 ? 42 : 43);
}

TEST_F(FaultGuardDeath, TheApplicationsHandlerGetsFaultsOutsideGuards) {
  EXPECT_EXIT(
      {
        struct sigaction application {};
        application.sa_sigaction = exit_42;
        application.sa_flags = SA_SIGINFO;
        sigemptyset(&application.sa_mask);
        ::sigaction(SIGBUS, &application, nullptr);
        cut();
        guarded_fault();  // onnxmap's handler goes on top of the application's
        guarded_fault();
        touch_unguarded();
        ::_exit(4);
      },
      ::testing::ExitedWithCode(42), "");
}

TEST_F(FaultGuardDeath, WithoutAHandlerAFaultOutsideGuardsKillsAsBefore) {
  const auto run = [this] {
    cut();
    guarded_fault();
    touch_unguarded();
  };
  if (test::kSanitizerTakesSigbus) {
    // The handler before ours is the sanitizer's: it gets the fault and reports it.
    EXPECT_DEATH(run(), "Sanitizer: BUS");
  } else {
    EXPECT_EXIT(run(), ::testing::KilledBySignal(SIGBUS), "");
  }
}

}  // namespace
}  // namespace onnxmap
