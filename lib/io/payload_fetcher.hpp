#pragma once
// The hook through which a remote model fills its local mirror before a view of a payload is
// handed out (ModelSource::fetcher, then ModelIndex::fetcher). Local models have none.

#include <cstdint>
#include <span>
#include <string_view>

#include "onnxmap/byte_range.hpp"
#include "onnxmap/options.hpp"

namespace onnxmap::detail {

class PayloadFetcher {
 public:
  PayloadFetcher() = default;
  PayloadFetcher(const PayloadFetcher&) = delete;
  PayloadFetcher& operator=(const PayloadFetcher&) = delete;
  virtual ~PayloadFetcher() = default;
  // Makes every range of `location` (an external data location as written in the model, "" for
  // the model file) present in the mirror, several requests at once. Safe from any thread.
  // Throws onnxmap::Error when a fetch fails. Returns the requests and retries it took.
  virtual FetchStats fetch(std::string_view location, std::span<const ByteRange> ranges) const = 0;
  // Every request and retry the fetcher made so far (the open's included). Safe from any thread.
  [[nodiscard]] virtual FetchStats totals() const noexcept = 0;
  // Called once the index pass has opened the files (or failed): a fetcher may then let go of
  // what only the open needed.
  virtual void indexed() noexcept {}
  FetchStats fetch(std::string_view location, std::uint64_t offset, std::uint64_t length) const {
    const ByteRange range{offset, length};
    return fetch(location, std::span(&range, 1));
  }
};

}  // namespace onnxmap::detail
