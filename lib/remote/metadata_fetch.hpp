#pragma once
// Fills a mirror with the metadata of a remote model: every byte of the message tree except
// tensor payloads (raw_data, and packed float_data/double_data, whose bytes the index pass never
// reads). The tree is walked over the network with the wire reader and the schema: a message
// that may hold payloads is descended into, everything else is fetched whole. Reads go ahead in
// chunks that grow while the walk moves forward and shrink after a skipped payload, so a layout
// interleaving tensor headers and payloads costs about one request per tensor.

#include <span>
#include <string>
#include <vector>

#include "onnxmap/message_kind.hpp"
#include "remote/mirror_file.hpp"
#include "schema/fields.hpp"

namespace onnxmap::remote {

// Walks the message of kind `root` filling the whole of `file`; `first` is the start() answer.
// Returns the external data locations the tensors name, each once, in file order. Throws
// onnxmap::Error for malformed wire data (with the URL and byte offset) and failed fetches.
[[nodiscard]] std::vector<std::string> fetch_metadata(MirrorFile& file,
                                                      std::span<const std::byte> first,
                                                      schema::MessageKind root, int max_depth);

}  // namespace onnxmap::remote
