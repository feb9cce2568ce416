// fields_of (load.hpp, device.hpp): every statistics type of the loaders as a list of fields,
// the one serialisation the command's --json and Python's dictionaries are made from. Both lists
// live here, so that a field added to one struct is added to its list beside the other's: in
// the device layer, the one that sees both (it uses the loader; the loader knows no device).

#include "onnxmap/device.hpp"
#include "onnxmap/load.hpp"

namespace onnxmap {

std::vector<StatsField> fields_of(const LoadStats& s) {
  return {{"tensors", std::uint64_t{s.tensors}},
          {"bytes", s.bytes},
          {"bytes_read", s.bytes_read},
          {"requests", s.requests},
          {"fresh_buffer_bytes", s.fresh_buffer_bytes},
          {"bytes_copied", s.bytes_copied},
          {"direct", s.direct},
          {"retries", s.retries},
          {"retry_wait_ms", s.retry_wait_ms}};
}

std::vector<StatsField> fields_of(const DeviceLoadStats& s) {
  return {{"tensors", std::uint64_t{s.tensors}},
          {"bytes", s.bytes},
          {"seconds", s.seconds},
          {"cpu_seconds", s.cpu_seconds},
          {"bytes_staged", s.bytes_staged},
          {"bytes_registered", s.bytes_registered},
          {"bytes_read", s.bytes_read},
          {"pinned_bytes", s.pinned_bytes},
          {"registrations", s.registrations},
          {"registrations_refused", s.registrations_refused},
          {"threads", std::uint64_t{s.threads}},
          {"direct", s.direct},
          {"path", s.path()}};
}

}  // namespace onnxmap
