// libonnxmap_gpu_check.so: load_to_device behind a C interface, for bench/gpu_check.py, which
// loads it with ctypes on a GPU machine whose Python (3.12 there) cannot import an extension
// built here for another Python. The library is linked in statically, so the module needs only
// glibc and libstdc++ there. torch allocates the destinations and copies them back; the
// expected bytes come from onnxmap's plain loader (read mode, host memory: another path).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>
#include <onnxmap/onnxmap.hpp>
#include <string>
#include <variant>
#include <vector>

namespace {

struct Check {
  onnxmap::Model model;
  std::vector<onnxmap::LoadItem> items;
  std::vector<std::string> names;
};

void write(char* out, std::size_t cap, const std::string& text) {
  if (cap == 0) return;
  const std::size_t n = std::min(cap - 1, text.size());
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

// Runs `body`, turning an exception into its message in `out` and a non-zero result.
template <class Body>
int guarded(char* out, std::size_t cap, const Body& body) {
  try {
    body();
    return 0;
  } catch (const onnxmap::Error& e) {
    write(out, cap, std::string(onnxmap::to_string(e.kind())) + ": " + e.what());
  } catch (const std::exception& e) {
    write(out, cap, std::string("error: ") + e.what());
  }
  return 1;
}

}  // namespace

extern "C" {

// The plan of every tensor of `model` (ranks > 1: rank's rows of each), or null with the error
// in `err`.
__attribute__((visibility("default"))) void* ogc_open(const char* model, unsigned rank,
                                                      unsigned ranks, char* err, std::size_t cap) {
  Check* check = nullptr;
  (void)guarded(err, cap, [&] {
    auto opened = onnxmap::Model::open(model);
    onnxmap::PlanOptions options;
    if (ranks > 1) options = onnxmap::PlanOptions::shard(rank, ranks);
    auto items = onnxmap::plan(opened, options);
    std::vector<std::string> names;
    for (const auto& item : items) names.emplace_back(item.tensor.lookup_name());
    check = new Check{std::move(opened), std::move(items), std::move(names)};
  });
  return check;
}

__attribute__((visibility("default"))) void ogc_close(void* check) {
  delete static_cast<Check*>(check);
}

__attribute__((visibility("default"))) std::size_t ogc_count(void* check) {
  return static_cast<Check*>(check)->items.size();
}

__attribute__((visibility("default"))) std::uint64_t ogc_bytes(void* check, std::size_t i) {
  return static_cast<Check*>(check)->items.at(i).byte_size();
}

__attribute__((visibility("default"))) const char* ogc_name(void* check, std::size_t i) {
  return static_cast<Check*>(check)->names.at(i).c_str();
}

// load_to_device of every item into dst[i] on `device` ("cuda:N" or "host"); mode "direct",
// "read" or "map", path "automatic", "registered" or "pinned". cancel_after > 0: the load is
// cancelled once that many bytes are on the device. 0 with the stats as JSON in `out`, else 1
// with "kind: message".
__attribute__((visibility("default"))) int ogc_load(void* check, const char* device,
                                                    const char* mode, const char* path,
                                                    unsigned threads, std::uint64_t max_in_flight,
                                                    void** dst, std::uint64_t cancel_after,
                                                    char* out, std::size_t cap) {
  return guarded(out, cap, [&] {
    const Check& c = *static_cast<Check*>(check);
    onnxmap::DeviceLoadOptions options;
    options.device = device;
    options.load.mode = onnxmap::parse_load_mode(mode).value();
    const std::string way = path;
    options.path = way == "pinned"       ? onnxmap::DevicePath::pinned
                   : way == "registered" ? onnxmap::DevicePath::registered
                                         : onnxmap::DevicePath::automatic;
    options.load.threads = threads;
    if (max_in_flight > 0) options.load.max_in_flight_bytes = max_in_flight;
    std::uint64_t done = 0;
    if (cancel_after > 0) {
      options.load.progress = [&](std::uint64_t d, std::uint64_t) { done = d; };
      options.load.cancelled = [&] { return done >= cancel_after; };
    }
    const auto s =
        onnxmap::load_to_device(c.items, std::span<void* const>(dst, c.items.size()), options);
    nlohmann::json stats;
    for (const onnxmap::StatsField& field : onnxmap::fields_of(s)) {
      std::visit([&](const auto& v) { stats[std::string(field.name)] = v; }, field.value);
    }
    write(out, cap, stats.dump());
  });
}

// The expected bytes of every item, by onnxmap's plain loader (read mode) into host dst[i].
__attribute__((visibility("default"))) int ogc_expected(void* check, void** dst, char* out,
                                                        std::size_t cap) {
  return guarded(out, cap, [&] {
    const Check& c = *static_cast<Check*>(check);
    onnxmap::LoadOptions options;
    options.mode = onnxmap::LoadMode::read;
    (void)onnxmap::load(
        c.items,
        [&](const onnxmap::LoadedTensor& t) {
          if (!t.bytes.empty()) std::memcpy(dst[t.item], t.bytes.data(), t.bytes.size());
        },
        options);
  });
}

}  // extern "C"
