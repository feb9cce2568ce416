#include "write/safetensors_layout.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "index/safetensors_header.hpp"
#include "onnxmap/error.hpp"
#include "onnxmap/version.hpp"
#include "wire/wire.hpp"
#include "write/data_layout.hpp"

namespace onnxmap::detail {

namespace {

constexpr std::string_view kSuffix = ".safetensors";

std::uint64_t align_up(std::uint64_t offset, std::uint64_t align) {
  return (offset + align - 1) / align * align;
}

// Bits per element, for the widest-first order.
std::uint32_t bits_of(const PayloadInfo& t) {
  return element_bits(t.type);
}

// Keys are unique in a header: a name that two graphs use gets ".2", ".3", ... after the first.
std::vector<std::string> unique_keys(std::span<const PayloadInfo> tensors) {
  std::set<std::string> used;
  std::vector<std::string> keys;
  for (const PayloadInfo& t : tensors) {
    std::string key(t.name);
    for (int n = 2; !used.insert(key).second; ++n)
      key = std::string(t.name) + "." + std::to_string(n);
    keys.push_back(key);
  }
  return keys;
}

// The header of a file holding `members` (indices into tensors), laid out widest first from
// offset 0 of the data; fills `data_offsets` with each member's start in the data.
std::string header_json(std::span<const PayloadInfo> tensors, const std::vector<std::string>& keys,
                        std::vector<std::size_t>& members, std::vector<std::uint64_t>& data_offsets,
                        std::string_view source) {
  std::stable_sort(members.begin(), members.end(), [&](std::size_t a, std::size_t b) {
    return bits_of(tensors[a]) > bits_of(tensors[b]);
  });
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"source", std::string(source)},
                            {"producer", std::string("onnxmap ") + std::string(version())}};
  std::uint64_t at = 0;
  data_offsets.clear();
  for (const std::size_t i : members) {
    const PayloadInfo& t = tensors[i];
    data_offsets.push_back(at);
    header[keys[i]] = {{"dtype", std::string(*safetensors_dtype(t.type))},
                       {"shape", std::vector<std::int64_t>(t.dims.begin(), t.dims.end())},
                       {"data_offsets", {at, at + t.size}}};
    at += t.size;
  }
  return header.dump();
}

// The length prefix and the JSON, padded with spaces so that the data starts at a multiple of
// `align` (at least 8, the widest element).
std::vector<std::byte> framed(std::string json, std::uint64_t align) {
  const std::uint64_t start = align_up(8 + json.size(), std::max<std::uint64_t>(align, 8));
  json.resize(start - 8, ' ');
  wire::Writer out;
  out.fixed64(json.size());
  std::vector<std::byte> framed = out.bytes();
  const auto text = std::as_bytes(std::span(json.data(), json.size()));
  framed.insert(framed.end(), text.begin(), text.end());
  return framed;
}

void check_types(std::span<const PayloadInfo> tensors) {
  for (const PayloadInfo& t : tensors) {
    const auto dtype = safetensors_dtype(t.type);
    const auto info = traits(t.type);
    const auto elements = element_count(t.dims);
    const bool whole_bytes = info && elements && (*elements * info->bits) % 8 == 0;
    if (dtype && !whole_bytes) {
      throw Error(ErrorKind::invalid_argument,
                  "tensor '" + std::string(t.name) + "' is " + std::string(info->name) +
                      " with an odd element count: safetensors holds whole bytes");
    }
    if (!dtype || !info) {
      throw Error(ErrorKind::invalid_argument,
                  "tensor '" + std::string(t.name) + "' is " +
                      std::string(info ? info->name : "of an unknown type") +
                      ", which safetensors cannot hold (docs/format-and-limits.md lists the "
                      "types it can)");
    }
  }
}

}  // namespace

SafetensorsLayout::SafetensorsLayout(std::span<const PayloadInfo> tensors,
                                     const std::string& location, std::uint64_t shard_size,
                                     std::uint64_t align, std::string_view source) {
  if (location.size() <= kSuffix.size() || !location.ends_with(kSuffix)) {
    throw Error(ErrorKind::invalid_argument,
                "a safetensors location must end in \".safetensors\", not \"" + location + "\"");
  }
  check_types(tensors);
  // Shards in model order.
  std::vector<std::vector<std::size_t>> shards;
  std::uint64_t filled = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (shards.empty() || (shard_size > 0 && filled > 0 && filled + tensors[i].size > shard_size)) {
      shards.emplace_back();
      filled = 0;
    }
    shards.back().push_back(i);
    filled += tensors[i].size;
  }
  const std::string stem = location.substr(0, location.size() - kSuffix.size());
  const std::vector<std::string> keys = unique_keys(tensors);
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  std::uint64_t total = 0;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    SafetensorsFile file;
    file.location = location;
    if (shards.size() > 1) {
      char name[64];
      std::snprintf(name, sizeof name, "-%05zu-of-%05zu", s + 1, shards.size());
      file.location = stem + name + std::string(kSuffix);
    }
    std::vector<std::uint64_t> data_offsets;
    file.header = framed(header_json(tensors, keys, shards[s], data_offsets, source), align);
    for (std::size_t k = 0; k < shards[s].size(); ++k) {
      const PayloadInfo& t = tensors[shards[s][k]];
      where_[t.tensor] = {files_.size(), file.header.size() + data_offsets[k]};
      weight_map[keys[shards[s][k]]] = file.location;
      file.size = std::max(file.size, file.header.size() + data_offsets[k] + t.size);
      total += t.size;
    }
    file.size = std::max<std::uint64_t>(file.size, file.header.size());
    files_.push_back(std::move(file));
  }
  if (shards.size() > 1) {
    index_location_ = location + ".index.json";
    nlohmann::ordered_json index;
    index["metadata"] = {{"total_size", total}};
    index["weight_map"] = weight_map;
    index_json_ = index.dump(2) + "\n";
  }
}

}  // namespace onnxmap::detail
