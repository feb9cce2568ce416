// The folding's kept values (fold_cache.hpp).

#include "fold_cache.hpp"

namespace onnxmap::cli::viewer {

std::shared_ptr<const void> FoldCache::find(const BoxId& key) {
  const std::lock_guard lock(mutex_);
  const auto found = index_.find(key);
  if (found == index_.end()) return nullptr;
  entries_.splice(entries_.begin(), entries_, found->second);
  return found->second->value;
}

// The newest is kept even alone past the budget: the request that made it uses it.
void FoldCache::keep(const BoxId& key, std::shared_ptr<const void> value, std::size_t bytes) {
  const std::lock_guard lock(mutex_);
  if (index_.contains(key)) return;  // another thread made it meanwhile
  entries_.push_front({key, std::move(value), bytes});
  index_.emplace(key, entries_.begin());
  bytes_ += bytes;
  while (entries_.size() > 1 && (entries_.size() > kEntries || bytes_ > kBytes)) {
    bytes_ -= entries_.back().bytes;
    index_.erase(entries_.back().key);
    entries_.pop_back();
  }
}

}  // namespace onnxmap::cli::viewer
