#pragma once
// Writing models: a model opened with Model::open, or one made with ModelBuilder, saved inline or
// with its tensors in external data files.
//
// Every length is planned bottom-up with 64-bit sizes before a byte is written, then each file is
// written in one streaming pass. Messages that do not change are copied byte for byte from the
// source file (payloads by the kernel where it can), so saving an opened model with nothing to
// move reproduces it exactly, and converting a 300 GB model costs one sequential copy.
//
// Files are written under temporary names in their folder and renamed when complete: an error, a
// full disk or an interrupted write never leaves a half-written file under a final name.
//
// Threads: save only reads its source (an opened Model may be read by other threads meanwhile;
// a ModelBuilder must not change). Two saves to one path race: one of the complete files stays.
// Progress is called on the saving thread.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "onnxmap/export.hpp"
#include "onnxmap/options.hpp"

namespace onnxmap {

class Model;
class ModelBuilder;

// Where a save puts tensor data.
enum class ExternalData : std::uint8_t {
  inline_data,  // every tensor inline (raw_data), external tensors of the source included
  external,     // tensors of at least `size_threshold` bytes go to external data files
  // Where the source keeps it: external when any tensor of the opened model is external data
  // or the data format is safetensors, else inline (a ModelBuilder: inline). What `onnxmap
  // convert` does without a layout flag.
  keep,
};

// The format of external data files.
enum class DataFormat : std::uint8_t {
  raw,  // payloads at aligned offsets, as onnx writes them
  // safetensors files: a JSON header naming each tensor's dtype, shape and offsets, then the
  // payloads without holes, widest element first, so each is aligned to its element size
  // (docs/format-and-limits.md). Each tensor's external data points past the header, so ONNX
  // Runtime, onnx and the safetensors library read the same bytes.
  safetensors,
};

// An ONNX graph pointing into safetensors files that hold its weights already (a checkpoint of
// the Hub): each initializer found there becomes external data inside them, and no byte of it is
// written (docs/cli.md, convert --weights-from).
struct WeightsFrom {
  // A .safetensors file, a model.safetensors.index.json, or a folder holding either (its index,
  // else every .safetensors file in it). Empty: no sharing. The files must lie in the saved
  // model's folder or below it, as external data locations must.
  std::filesystem::path source;
  // Initializer name -> the checkpoint's tensor name, where they differ. An initializer found by
  // name (its own, or the one given here) must have the tensor's element type and shape (else an
  // error names both) and the same values (compared at 16 places spread over it, or all of them
  // with compare_all_bytes; a difference is an error).
  std::map<std::string, std::string, std::less<>> names;
  bool compare_all_bytes = false;
  // An initializer not found by name is looked for by content among the checkpoint's tensors of
  // its type and shape, and, for a matrix, among the transposes of those of the reversed shape
  // (the copies torch's dynamo exporter and Optimum fold into a MatMul's weight); a candidate is
  // compared in full before it is used.
  bool match_content = true;
  // A transposed match is kept in the model's own data file unless this is set: then the
  // checkpoint's tensor becomes an initializer (named as in the checkpoint) feeding a Transpose
  // node whose output takes the folded copy's name, so the graph computes the same values.
  bool share_transposed = false;
};

struct SaveOptions {
  ExternalData external_data = ExternalData::inline_data;
  // raw, or safetensors: then `location` defaults to "model.safetensors" and must end in
  // ".safetensors", max_external_file_size is the shard size (shards named as the Hub names
  // them, model-00001-of-00004.safetensors, beside model.safetensors.index.json),
  // one_file_per_tensor is refused, `align` pads the header so that the data starts at a
  // multiple of it, and a type safetensors cannot hold is an error naming the tensor.
  DataFormat data_format = DataFormat::raw;
  // The data file, relative to the model's folder; may name a subfolder ("weights/model.data").
  // Empty: the model's file name + ".data". Absolute paths and ".." are refused.
  std::string location;
  // Tensors smaller than this stay inline (as onnx's save_model does by default).
  std::uint64_t size_threshold = 1024;
  // One data file per tensor instead of one for all. Each file is named after its tensor (bytes
  // outside [A-Za-z0-9._-] become '_', an empty name "tensor"; a name used twice gets ".2", ".3"
  // ...) and placed in the folder of `location`.
  bool one_file_per_tensor = false;
  // When non-zero, data is split at tensor boundaries into files of at most this many bytes,
  // named LOCATION.00001, LOCATION.00002, ... in file order; a tensor larger than the cap gets a
  // file of its own.
  std::uint64_t max_external_file_size = 0;
  // Every external payload starts at a multiple of this (a power of two; 1 = packed). 4096 lets
  // onnxmap and ONNX Runtime map tensors in place; 65536 suits Windows' allocation granularity.
  std::uint64_t align = 4096;
  // Tensors held in attributes (Constant nodes and others) go external too, as onnx's
  // convert_attribute does; otherwise only initializers (and sparse initializer parts) move.
  bool convert_attribute = false;
  // fsync every file before it is renamed into place (survives a power cut; slower).
  bool durable = false;
  // Each external tensor of a data file this save writes gets ONNX's `checksum` key: the SHA-1
  // of that whole file (onnx's definition; check --data verifies it), computed from the planned
  // bytes before any file is written, so the payloads are read twice. Without it, a checksum the
  // source carried is kept as it was.
  bool checksum = false;
  // Initializers that point into existing safetensors files instead of being written (those of
  // at least size_threshold bytes); the rest go where the options above say (keep: external).
  WeightsFrom weights_from;
  // Called now and then with the bytes written so far and the total planned.
  ProgressCallback progress;
};

// Tensors and their payload bytes.
struct TensorCount {
  std::uint64_t tensors = 0;
  std::uint64_t bytes = 0;
};

// What a save with WeightsFrom shared, by how each tensor was found.
struct SharedWeights {
  TensorCount by_name;     // an initializer of the checkpoint's name (or mapped to it)
  TensorCount by_content;  // the same bytes under another name
  TensorCount transposed;  // the checkpoint's tensor through a Transpose (share_transposed)
  // Found transposed but kept in the model's own data (share_transposed not set or not possible:
  // a graph input, a subgraph's initializer); counted in `own` too.
  TensorCount transposed_kept;
  TensorCount own;  // the tensors written to the model's own data files
};

struct SaveResult {
  std::uint64_t model_bytes = 0;
  std::vector<std::filesystem::path> data_files;  // relative to the model's folder, in order
  std::uint64_t data_bytes = 0;                   // total size of the data files
  std::uint64_t external_tensors = 0;
  std::uint64_t copied_messages = 0;    // messages copied verbatim from the source
  std::uint64_t reencoded_tensors = 0;  // tensors whose data moved
  SharedWeights shared;                 // with SaveOptions::weights_from
};

// Saves `model` to `path`. A path ending in ".safetensors" gets the initializers alone (and, with
// convert_attribute, attribute tensors), whatever their size, as a safetensors file, or past
// max_external_file_size as shards and their index; payloads are copied verbatim. Throws
// onnxmap::Error: io for unwritable destinations or a full disk,
// unsafe_path for a destination that is a symlink, is the source model or one of its data files,
// or a location outside the model's folder; invalid_argument for unusable options, a type the
// safetensors format cannot hold (naming the tensor) and a weights file of a model without any.
ONNXMAP_API SaveResult save(const Model& model, const std::filesystem::path& path,
                            const SaveOptions& options = {});
ONNXMAP_API SaveResult save(const ModelBuilder& model, const std::filesystem::path& path,
                            const SaveOptions& options = {});

// The model as bytes in memory for a runtime that is handed its large tensors in memory and reads
// the rest itself (ONNX Runtime given OrtValues with SessionOptions.add_initializer: onnxmap.ort).
// Each initializer of the main graph or a subgraph held in raw_data with at least
// `size_threshold` bytes becomes external data naming where its bytes already lie: `location`
// (the model file as the runtime will find it, relative to the folder it resolves against), the
// payload's offset in the model file and its length. External tensors keep their entries, the
// rest is copied verbatim: no payload byte is copied, and every reference is true, so a runtime
// that reads a tensor itself reads the right bytes. A model opened by URL is fetched whole first.
// Throws onnxmap::Error (unsafe_path) for a location that leaves the folder.
ONNXMAP_API std::vector<std::byte> serialize_in_place(const Model& model,
                                                      const std::string& location,
                                                      std::uint64_t size_threshold = 1024);

}  // namespace onnxmap
