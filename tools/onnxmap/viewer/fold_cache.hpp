#pragma once
// The folding's computed values, kept (graph_level.hpp: Folding): the units of a prefix and the
// boxes of a level, the most recently used first, at most kEntries of them and about kBytes by
// the sizes their makers give. Keys are box ids: a group's for the units of its prefix, a
// range's for the boxes of a level.

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "box_id.hpp"

namespace onnxmap::cli::viewer {

class FoldCache {
 public:
  static constexpr std::size_t kEntries = 32;
  static constexpr std::size_t kBytes = std::size_t{256} << 20;

  // The value kept for `key`, or the one `make` returns (then kept, with the size
  // bytes_of(value) says). `make` runs outside the lock; two threads asking at once may both
  // make it, and one is kept.
  template <typename T, typename Make, typename Bytes>
  [[nodiscard]] std::shared_ptr<const T> get(const BoxId& key, Make&& make, Bytes&& bytes_of) {
    if (auto found = find(key)) return std::static_pointer_cast<const T>(found);
    auto made = std::make_shared<const T>(make());
    keep(key, made, bytes_of(*made));
    return made;
  }

 private:
  struct Entry {
    BoxId key;
    std::shared_ptr<const void> value;
    std::size_t bytes = 0;
  };
  [[nodiscard]] std::shared_ptr<const void> find(const BoxId& key);
  void keep(const BoxId& key, std::shared_ptr<const void> value, std::size_t bytes);

  std::mutex mutex_;
  std::list<Entry> entries_;  // the most recently used first
  std::unordered_map<BoxId, std::list<Entry>::iterator, BoxIdHash> index_;
  std::size_t bytes_ = 0;
};

}  // namespace onnxmap::cli::viewer
