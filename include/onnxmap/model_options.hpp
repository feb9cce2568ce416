#pragma once
// How a model is opened, with safe limits by default. An input past a limit is an onnxmap::Error
// whose message names the option (depth_limit for max_depth, limit_exceeded for the others).

#include <cstdint>

#include "onnxmap/load_mode.hpp"
#include "onnxmap/remote_options.hpp"

namespace onnxmap {

// The largest max_depth accepted. Leaf messages (types in types) are checked recursively at open,
// and each level of that costs native stack; this ceiling keeps a deep file from overflowing the
// stack whatever the caller configures (a larger max_depth is an invalid_argument error).
inline constexpr int kMaxDepthCeiling = 10000;

struct OpenOptions {
  // How the model file and its external data files are fetched (load_mode.hpp). map: pages are
  // read on touch (a file truncated while mapped raises SIGBUS on the next touch); read: each
  // whole file is copied into memory with large reads, immune to that (pipes and stdin are
  // always read); direct: copied like read, but around the page cache (O_DIRECT).
  LoadMode load = LoadMode::map;
  // Messages nested deeper than this (subgraphs in attributes in nodes ...) are an error, never a
  // stack overflow. 1..kMaxDepthCeiling.
  int max_depth = 64;
  // At most this many tensors; a limit, not a reservation.
  std::uint64_t max_tensors = std::uint64_t{1} << 28U;
  // At most this many structural messages (graphs, nodes, attributes, tensors, value infos, ...)
  // in the index: the size of the metadata a model may have. Each costs about 48 bytes of index,
  // so the default bounds the index to about 3 GiB; the largest real models hold a few million.
  std::uint64_t max_messages = std::uint64_t{1} << 26U;
  // External data locations that are absolute, climb out with "..", or reach outside the model's
  // folder through a symlink or hardlink are refused unless this is set.
  bool allow_external_outside_folder = false;
  // A tensor whose payload cannot be located or does not fit its dims and data type (raw_data of
  // the wrong size, a missing, unsafe or too short external file, a negative dimension) fails
  // the open unless this is set. When set, such a tensor opens with TensorStorage::invalid, its
  // bytes() throw that error, and Model::payload_errors() lists every one: what `check` needs to
  // report all problems of a file, not just the first.
  bool collect_payload_errors = false;
  // Threads of the indexing pass: 0 (the default) for every core, N for N. Either way they work
  // only on the parts where threads pay: in model files of 4 MiB or more, the levels of the
  // message tree with many records (16384 or more, such as the nodes of a large graph); the rest,
  // an LLM's few hundred tensors among it, is read on the calling thread. The index, its errors
  // and its limits are the same for any number.
  unsigned index_threads = 0;
  // For a model opened by URL (remote_options.hpp); unused for files.
  RemoteOptions remote{};
};

// The former name of OpenOptions, kept for code written against it.
using Options = OpenOptions;

}  // namespace onnxmap
