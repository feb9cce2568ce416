#pragma once
// What the viewer and a layout helper process (layout_helpers.hpp) say to each other over a
// socket: frames of a 4-byte little-endian length and that many bytes of CBOR (nlohmann::json's;
// doubles exact). The viewer sends a LayoutInput; the helper answers a LayoutResult, or an error
// message where Graphviz failed. One request at a time, answered in order.

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph_layout.hpp"

namespace onnxmap::cli::viewer {

// The hidden first argument that makes the onnxmap binary a layout helper (`onnxmap
// __layout-helper`); a binary that links the viewer serves layouts when its main() sees it.
inline constexpr std::string_view kLayoutHelperVerb = "__layout-helper";

// The most bytes one frame may hold: a drawing of 600 boxes and 4,000 edges takes well under it.
inline constexpr std::uint32_t kMaxFrameBytes = 64U << 20U;

[[nodiscard]] std::vector<std::uint8_t> encode_input(const LayoutInput& input);
[[nodiscard]] LayoutInput decode_input(const std::vector<std::uint8_t>& frame);
// The answer to a request: the result, or (`error` not empty) why Graphviz failed.
[[nodiscard]] std::vector<std::uint8_t> encode_answer(const LayoutResult& result,
                                                      const std::string& error);
// The result, or throws onnxmap::Error (io) with the helper's message where it failed.
[[nodiscard]] LayoutResult decode_answer(const std::vector<std::uint8_t>& frame);

// Writes one frame to `fd` (blocking, or polling until `deadline` where given); false when the
// peer is gone or the deadline passed.
[[nodiscard]] bool write_frame(int fd, const std::vector<std::uint8_t>& frame,
                               std::optional<std::chrono::steady_clock::time_point> deadline);
// Reads one frame from `fd`, as write_frame; nullopt at end of file, on an error, a frame too
// large, or past the deadline.
[[nodiscard]] std::optional<std::vector<std::uint8_t>> read_frame(
    int fd, std::optional<std::chrono::steady_clock::time_point> deadline);

// A helper's life: answers frames from standard input on standard output with layout_graph
// until standard input ends (or the viewer that started it is gone); returns the exit status.
int serve_layouts();

}  // namespace onnxmap::cli::viewer
