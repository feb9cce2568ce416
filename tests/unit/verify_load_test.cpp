// Loads verified as their bytes land (verify_as_loaded): into memory through on_landed and to a
// device (the host engine: CI has no GPU) through on_piece, whose pieces of one tensor come from
// several workers and must pass in order. The model's own manifest verifies every tensor on
// every path and mode; a flipped byte stops the load naming the tensor and both digests.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "onnxmap/device.hpp"
#include "onnxmap/load.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/synth.hpp"
#include "onnxmap/verify.hpp"
#include "test_support.hpp"

namespace onnxmap {
namespace {

namespace fs = std::filesystem;

class VerifyLoad : public test::TempFolder {
 protected:
  // A synthetic model with external data, its tensors from 16 KiB to 256 KiB.
  fs::path model() {
    SynthOptions options;
    options.layers = 2;
    options.hidden = 64;
    options.vocab = 1000;
    options.external_data = true;
    (void)synth(at("m.onnx"), options);
    return at("m.onnx");
  }

  // Flips one byte in the middle of `name`'s stored bytes (in the data file).
  static void flip_byte_of(const fs::path& path, const std::string& name) {
    std::uint64_t offset = 0;
    {
      const Model m = Model::open(path);
      const Tensor t = *m.find_tensor(name);
      offset = t.file_offset() + t.byte_size() / 2;
    }
    std::fstream f(fs::path(path).concat(".data"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    const char c = static_cast<char>(f.get() ^ 0x10);
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(c);
  }

  // Loads the whole model to the host "device" in 16 KiB slots on 4 workers, verified.
  static std::uint64_t device_load(const Model& m, const Manifest& manifest, DevicePath path,
                                   LoadMode mode) {
    const std::vector<LoadItem> items = plan(m);
    std::vector<std::vector<std::byte>> buffers;
    std::vector<void*> pointers;
    for (const LoadItem& item : items) buffers.emplace_back(item.byte_size());
    for (auto& b : buffers) pointers.push_back(b.empty() ? nullptr : b.data());
    const LandedVerifier verifier = verify_as_loaded(manifest, items);
    DeviceLoadOptions options;
    options.device = "host";
    options.path = path;
    options.load.mode = mode;
    options.load.threads = 4;
    options.load.max_in_flight_bytes = 64 << 10;
    options.on_piece = verifier.on_piece;
    (void)load_to_device(items, pointers, options);
    EXPECT_EQ(verifier.not_verifiable, 0U);
    return verifier.verified->load();
  }
};

constexpr LoadMode kLoadModes[] = {LoadMode::map, LoadMode::read, LoadMode::direct};

TEST_F(VerifyLoad, TheModelsManifestVerifiesEveryTensorOnEveryPath) {
  const Model m = Model::open(model());
  const std::uint64_t tensors = plan(m).size();
  for (const DigestAlgorithm algorithm : {DigestAlgorithm::sha256, DigestAlgorithm::xxh3_128}) {
    HashOptions hash;
    hash.algorithm = algorithm;
    const Manifest manifest = hash_model(m, hash);
    for (const LoadMode mode : kLoadModes) {
      for (const DevicePath path : {DevicePath::registered, DevicePath::pinned}) {
        EXPECT_EQ(device_load(m, manifest, path, mode), tensors) << to_string(mode);
      }
      const std::vector<LoadItem> items = plan(m);
      const LandedVerifier verifier = verify_as_loaded(manifest, items);
      LoadOptions options;
      options.mode = mode;
      options.on_landed = verifier.on_landed;
      (void)load(
          items, [](const LoadedTensor&) {}, options);
      EXPECT_EQ(verifier.verified->load(), tensors) << to_string(mode);
    }
  }
}

TEST_F(VerifyLoad, AFlippedByteStopsTheLoadNamingTheTensor) {
  const fs::path path = model();
  const std::string name = "model.embed_tokens.weight";  // 256 KiB: 16 pieces
  const Manifest manifest = hash_model(Model::open(path));
  flip_byte_of(path, name);
  const Model m = Model::open(path);
  for (const LoadMode mode : kLoadModes) {
    for (const DevicePath path_taken : {DevicePath::registered, DevicePath::pinned}) {
      try {
        (void)device_load(m, manifest, path_taken, mode);
        ADD_FAILURE() << "loaded " << to_string(mode);
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::bad_tensor);
        const std::string what = e.what();
        EXPECT_NE(what.find("tensor '" + name + "' in 'm.onnx.data': sha256 digest "),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find("the load stopped"), std::string::npos) << what;
      }
    }
  }
}

}  // namespace
}  // namespace onnxmap
