#pragma once
// A growable array of trivially copyable records for the index's big tables. On Linux its storage
// is an anonymous mapping that grows and shrinks with mremap: pages are moved, not copied, so a
// table is never held twice while it grows (std::vector's doubling copies everything and briefly
// needs three times the memory), and trimming the slack after the pass copies nothing either. The
// one copy is when a growing table moves into huge pages, of at most 256 KiB (pod_table.cpp).
// Elsewhere it falls back to realloc.

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

// Under AddressSanitizer and ThreadSanitizer the tables live in malloc'd memory: ASan sees
// overflows there, and TSan does not follow mremap (memory it moves keeps the old owner's
// history, and another thread's table mapped there later reads as a race).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ONNXMAP_TABLES_IN_MAPPINGS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ONNXMAP_TABLES_IN_MAPPINGS 0
#endif
#endif
#if !defined(ONNXMAP_TABLES_IN_MAPPINGS) && defined(__linux__)
#define ONNXMAP_TABLES_IN_MAPPINGS 1
#endif
#if !defined(ONNXMAP_TABLES_IN_MAPPINGS)
#define ONNXMAP_TABLES_IN_MAPPINGS 0
#endif

namespace onnxmap::detail {

// Whether tables live in anonymous mappings (else in malloc'd memory).
inline constexpr bool kTablesInMappings = ONNXMAP_TABLES_IN_MAPPINGS != 0;

// Storage primitives, in pod_table.cpp. Sizes are in bytes; a null pointer holds nothing.
[[nodiscard]] void* table_resize(void* data, std::size_t old_bytes, std::size_t new_bytes);
void table_free(void* data, std::size_t bytes) noexcept;
// Fresh storage of `bytes` zero bytes (null for none).
[[nodiscard]] void* table_zeroed(std::size_t bytes);
// The capacity, in bytes, a growing table that needs `bytes` is given: at least `bytes`, and more
// where the storage makes that cheaper (see pod_table.cpp).
[[nodiscard]] std::size_t table_growth_bytes(std::size_t bytes) noexcept;

template <class T>
class PodTable {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  PodTable() = default;
  PodTable(const PodTable&) = delete;
  PodTable& operator=(const PodTable&) = delete;
  PodTable(PodTable&& other) noexcept
      : data_(other.data_), size_(other.size_), capacity_(other.capacity_) {
    other.data_ = nullptr;
    other.size_ = other.capacity_ = 0;
  }
  PodTable& operator=(PodTable&& other) noexcept {
    if (this != &other) {
      free_storage();
      data_ = other.data_;
      size_ = other.size_;
      capacity_ = other.capacity_;
      other.data_ = nullptr;
      other.size_ = other.capacity_ = 0;
    }
    return *this;
  }
  ~PodTable() { free_storage(); }

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] T* data() noexcept { return data_; }
  [[nodiscard]] const T* data() const noexcept { return data_; }
  [[nodiscard]] T& operator[](std::size_t i) noexcept { return data_[i]; }
  [[nodiscard]] const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  [[nodiscard]] T* begin() noexcept { return data_; }
  [[nodiscard]] T* end() noexcept { return data_ + size_; }
  [[nodiscard]] const T* begin() const noexcept { return data_; }
  [[nodiscard]] const T* end() const noexcept { return data_ + size_; }
  [[nodiscard]] T& back() noexcept { return data_[size_ - 1]; }

  void push_back(const T& value) {
    if (size_ == capacity_) grow();
    data_[size_++] = value;
  }
  T& emplace_back() {
    if (size_ == capacity_) grow();
    return *new (data_ + size_++) T{};
  }
  // Holds `count` elements whose bytes are all zero, in fresh storage: freshly mapped memory is
  // zero already, and writing it again would cost a pass over the whole table.
  void assign_zeros(std::size_t count) {
    free_storage();
    data_ = nullptr;  // empty, should the allocation throw
    size_ = capacity_ = 0;
    data_ = static_cast<T*>(table_zeroed(count * sizeof(T)));
    size_ = capacity_ = count;
  }
  // Room for `count` elements: until the table holds more, its elements stay where they are.
  void reserve(std::size_t count) {
    if (count > capacity_) resize_storage(grown(count));
  }
  // Drops the elements from `count` on (keeping the storage).
  void truncate(std::size_t count) noexcept {
    if (count < size_) size_ = count;
  }
  void shrink_to_fit() {
    if (capacity_ > size_) resize_storage(size_);
  }

 private:
  void grow() { resize_storage(grown(capacity_ < 64 ? 64 : capacity_ * 2)); }
  [[nodiscard]] static std::size_t grown(std::size_t capacity) noexcept {
    return table_growth_bytes(capacity * sizeof(T)) / sizeof(T);
  }
  void resize_storage(std::size_t capacity) {
    data_ = static_cast<T*>(table_resize(data_, capacity_ * sizeof(T), capacity * sizeof(T)));
    capacity_ = capacity;
  }
  void free_storage() noexcept { table_free(data_, capacity_ * sizeof(T)); }

  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace onnxmap::detail
