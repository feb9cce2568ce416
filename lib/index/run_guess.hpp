#pragma once
// Where to cut a very large message (a graph of 360 000 nodes) into runs of whole fields, found
// without stepping over every field before the cut. A guess: a position from which several
// fields in a row decode as the message's repeated message fields, each holding well-formed
// fields. The pass checks every guess for free: the run before a cut is walked from a known
// field start and must end exactly at the cut (a field that crosses it is an error), so a wrong
// guess makes that run fail and the level is scanned again on one thread, as for any error.

#include <cstddef>
#include <cstdint>

namespace onnxmap::detail {

// Looks for a field start in [from, from + kRunGuessWindow), before `end`: a run of
// kRunGuessChain LEN fields (or fewer, ending exactly at `end`), each of a number whose bit is
// set in `message_fields` and whose payload is a sequence of well-formed fields. Returns it, or
// nullptr when no position in the window qualifies (payload bytes, uncommon encodings) or the
// search has stepped over kRunGuessSteps fields in payloads without finding one.
[[nodiscard]] const std::byte* guess_field_start(const std::byte* from, const std::byte* end,
                                                 std::uint64_t message_fields) noexcept;

inline constexpr std::uint64_t kRunGuessWindow = 4096;
inline constexpr int kRunGuessChain = 8;
inline constexpr std::int64_t kRunGuessSteps = 65536;

}  // namespace onnxmap::detail
