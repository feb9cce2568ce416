#include "index/record_runs.hpp"

#include <algorithm>
#include <vector>

#include "index/field_cursor.hpp"
#include "index/payload_trim.hpp"
#include "index/run_guess.hpp"

namespace onnxmap::detail {

bool cut_into_runs(const MappedFile& mapped, Span span, const RunCutting& cutting,
                   const std::function<bool(Span)>& emit) {
  const std::byte* file = mapped.bytes().data();
  const std::byte* pos = file + span.offset;
  const std::byte* const end = pos + span.length;
  const std::byte* start = pos;
  const auto run = [&](const std::byte* stop) {
    return Span{static_cast<std::uint64_t>(start - file), static_cast<std::uint64_t>(stop - start)};
  };
  const std::uint64_t target = cutting.target;
  const bool test_payloads = cutting.min_fields > 0;
  std::vector<Span> held;
  bool cut = false;  // the runs go to `emit`
  bool go_on = true;
  std::uint64_t fields = 0;
  // Stepping reads every field's tag, which maps the page-cache folio around it: the payloads
  // passed are trimmed as the scan trims them (index/payload_trim.hpp), or a graph of large
  // tensors would keep megabytes of payload pages mapped.
  PayloadTrimmer trim(mapped);
  bool holds_payloads = false;
  const auto passed = [&](const std::byte* field, const std::byte* next) {
    const auto at = static_cast<std::uint64_t>(field - file);
    const auto length = static_cast<std::uint64_t>(next - field);
    holds_payloads = holds_payloads || length >= kLargeFieldLength;
    trim.passed(at, Span{at, length}, false);
  };
  try {
    while (pos != end && go_on) {
      const std::byte* guess = nullptr;
      if (cut && static_cast<std::uint64_t>(end - pos) > 2 * target) {
        guess = guess_field_start(pos + target, end, cutting.message_fields);
      }
      // Stepped in pieces small enough that a large field is seen before the next.
      const std::uint64_t piece =
          cut || !test_payloads ? target : std::min(target, kLargeFieldLength);
      pos = guess != nullptr ? guess : step_fields(file, pos, end, piece, fields, passed);
      if (pos == end || (!cut && test_payloads && holds_payloads)) break;
      if (!cut && static_cast<std::uint64_t>(pos - start) < target && fields < cutting.min_fields) {
        continue;
      }
      if (cut) {
        go_on = emit(run(pos));
      } else {
        held.push_back(run(pos));
      }
      start = pos;
      if (!cut && fields >= cutting.min_fields) {
        cut = true;
        for (const Span& runs_so_far : held) go_on = emit(runs_so_far) && go_on;
      }
    }
  } catch (const Error&) {
    // The rest, malformed, is the last run.
  }
  trim.finish();
  if (cut) emit(run(end));
  return cut;
}

}  // namespace onnxmap::detail
