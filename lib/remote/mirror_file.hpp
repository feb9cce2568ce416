#pragma once
// One remote file and its local mirror: a sparse file of the remote size holding exactly the
// ranges fetched so far (holes elsewhere), which the model maps. Not thread-safe: the remote
// model serializes every fetch.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "remote/http_client.hpp"
#include "remote/range_set.hpp"

namespace onnxmap::remote {

class MirrorFile {
 public:
  // Opens (creates) the mirror at `path`; nothing is requested yet.
  MirrorFile(std::filesystem::path path, Endpoint endpoint, const RemoteOptions& options,
             const HttpSession& session);
  ~MirrorFile();
  MirrorFile(const MirrorFile&) = delete;
  MirrorFile& operator=(const MirrorFile&) = delete;

  // The first request: bytes [0, length) (fewer when the file is shorter). Sizes the mirror to
  // the remote file and writes those bytes.
  [[nodiscard]] std::span<const std::byte> start(std::uint64_t length);
  // A cached mirror: trusts it to hold `held` of the version `known` names, without a request
  // (a fetch then refuses an answer from another version).
  void restore(const Validators& known, const RangeSet& held);
  // Drops what a cached mirror held before start() (its record did not match).
  void discard();

  // Fetches what the mirror lacks of each range (clipped to the file), in parts of at most kPart
  // bytes, several at once; short held stretches between missing pieces are fetched again
  // rather than cut a request in two. Returns the requests and retries that took.
  FetchStats ensure(std::span<const ByteRange> ranges);
  FetchStats ensure(std::uint64_t offset, std::uint64_t length) {
    const ByteRange range{offset, length};
    return ensure(std::span(&range, 1));
  }
  // The bytes of [offset, offset + length), fetched first when missing.
  [[nodiscard]] std::vector<std::byte> read(std::uint64_t offset, std::uint64_t length);

  [[nodiscard]] std::uint64_t size() const noexcept { return client_.validators().size; }
  [[nodiscard]] const Validators& validators() const noexcept { return client_.validators(); }
  [[nodiscard]] const RangeSet& held() const noexcept { return held_; }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  [[nodiscard]] const std::string& url() const noexcept { return client_.url(); }
  // The file's name in errors: no secret in it.
  [[nodiscard]] const std::string& shown() const noexcept { return client_.shown(); }

  static constexpr std::uint64_t kPart = std::uint64_t{16} << 20U;
  // Held bytes up to this long between two missing pieces are fetched again with them.
  static constexpr std::uint64_t kRefetchGap = std::uint64_t{64} << 10U;

 private:
  void write(std::uint64_t offset, std::span<const std::byte> bytes) const;

  std::filesystem::path path_;
  HttpClient client_;
  int fd_ = -1;
  RangeSet held_;
  std::vector<std::byte> first_;  // the start() answer
};

}  // namespace onnxmap::remote
