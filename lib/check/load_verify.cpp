// verify_as_loaded (verify.hpp): each whole tensor of a plan matched with its manifest entry
// before the load, then hashed on the loader's threads as it lands: whole (a load into memory)
// or piece by piece in order (a load to a device).

#include <map>
#include <optional>

#include "io/digest.hpp"
#include "onnxmap/verify.hpp"

namespace onnxmap {

namespace {

// What an item's bytes must hash to: a whole tensor's digest, or that of its rows.
struct Want {
  std::string name, path, file;
  std::string rows;  // "" for the whole tensor, else " rows BEGIN..END"
  std::string digest;
};

// The manifest's digest of `item`'s bytes, where it has one.
std::optional<Want> want_of(const TensorDigest& entry, const LoadItem& item) {
  if (item.row_begin == 0 && item.row_end == kAllRows) {
    return Want{entry.name, entry.path, entry.file, "", entry.digest};
  }
  for (const TensorDigest::Rows& s : entry.rows) {
    if (s.row_begin == item.row_begin && s.row_end == item.row_end) {
      return Want{entry.name, entry.path, entry.file,
                  " rows " + std::to_string(s.row_begin) + ".." + std::to_string(s.row_end),
                  s.digest};
    }
  }
  return std::nullopt;
}

// What the two ways of verifying share: each item's digest to match, or none.
struct Expected {
  DigestAlgorithm algorithm;
  std::vector<std::optional<Want>> of_item;  // per plan item; none: not verified
  std::vector<std::uint64_t> byte_size;      // per plan item
  std::shared_ptr<std::atomic<std::uint64_t>> verified;

  // Counts the item's digest `got`, or throws the mismatch.
  void judge(std::size_t item, const std::string& got) const {
    const Want& want = *of_item[item];
    if (got != want.digest) {
      throw Error(ErrorKind::bad_tensor,
                  "tensor '" + want.name + "'" + want.rows + " in '" + want.file +
                      "': " + std::string(to_string(algorithm)) + " digest " + got +
                      ", the manifest's " + want.digest + "; the load stopped",
                  Error::kNoOffset, want.path);
    }
    ++*verified;
  }
};

// Each item's running digest, updated by its pieces in order (DeviceLoadOptions::on_piece
// passes one piece of an item at a time, so an item's state is never shared between threads).
struct Running {
  std::shared_ptr<const Expected> expected;
  std::vector<std::optional<detail::Digest>> state;

  void piece(const LoadedPiece& p) {
    if (!expected->of_item[p.item]) return;
    std::optional<detail::Digest>& digest = state[p.item];
    if (p.offset == 0) digest.emplace(expected->algorithm);
    digest->update(p.bytes);
    if (p.offset + p.bytes.size() == expected->byte_size[p.item]) {
      const std::string got = digest->finish_hex();
      digest.reset();
      expected->judge(p.item, got);
    }
  }
};

}  // namespace

LandedVerifier verify_as_loaded(const Manifest& manifest, std::span<const LoadItem> plan) {
  if (manifest.tensors.empty()) {
    throw Error(ErrorKind::invalid_argument,
                "the manifest has no tensor digests (a signing tool's payload lists files: "
                "verify those with `onnxmap verify`)");
  }
  std::map<std::string_view, const TensorDigest*> by_path;
  for (const TensorDigest& t : manifest.tensors) by_path[t.path] = &t;
  auto expected = std::make_shared<Expected>();
  expected->algorithm = manifest.algorithm;
  expected->verified = std::make_shared<std::atomic<std::uint64_t>>(0);
  LandedVerifier out;
  for (const LoadItem& item : plan) {
    const auto found = by_path.find(item.tensor.path());
    expected->of_item.push_back(found == by_path.end() ? std::nullopt
                                                       : want_of(*found->second, item));
    expected->byte_size.push_back(item.byte_size());
    if (!expected->of_item.back()) ++out.not_verifiable;
  }
  out.verified = expected->verified;
  out.on_landed = [expected](const LoadedTensor& t) {
    if (!expected->of_item[t.item]) return;
    expected->judge(t.item, detail::digest_hex(expected->algorithm, t.bytes));
  };
  auto running = std::make_shared<Running>(Running{expected, {}});
  running->state.resize(plan.size());
  out.on_piece = [running](const LoadedPiece& p) { running->piece(p); };
  return out;
}

}  // namespace onnxmap
