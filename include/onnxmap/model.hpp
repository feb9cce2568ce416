#pragma once
// An ONNX model opened through a memory map: one indexing pass at open, views decoded on touch.
//
//   auto model = onnxmap::Model::open("llama.onnx");
//   onnxmap::Tensor w = model.tensor("model.layers.7.mlp.up_proj.weight");
//   std::span<const std::byte> bytes = w.bytes();  // zero-copy
//
// Threads: a Model is immutable once open. Any number of threads may call its members and read
// its views at once; copies share one index and may be made and dropped on any thread, and the
// file stays mapped while one lives. A model opened by URL fetches the ranges a view needs on
// the thread that asks, safely from several at once.

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnxmap/dump.hpp"
#include "onnxmap/export.hpp"
#include "onnxmap/file_version.hpp"
#include "onnxmap/options.hpp"
#include "onnxmap/tensor.hpp"
#include "onnxmap/views.hpp"

namespace onnxmap {

class ModelSummary;

class ONNXMAP_API Model {
 public:
  // Maps `path` and indexes it. Throws onnxmap::Error (file, field path, byte offset) for an
  // unreadable or malformed file. A bare TensorProto file opens with `root` TensorProto.
  [[nodiscard]] static Model open(const std::filesystem::path& path,
                                  const OpenOptions& options = {},
                                  schema::MessageKind root = schema::MessageKind::ModelProto);
  // A model held in memory (copied); external data resolves against `folder`.
  [[nodiscard]] static Model from_bytes(std::span<const std::byte> bytes,
                                        const OpenOptions& options = {},
                                        schema::MessageKind root = schema::MessageKind::ModelProto,
                                        const std::filesystem::path& folder = {});

  [[nodiscard]] std::int64_t ir_version() const;
  [[nodiscard]] std::vector<OperatorSetId> opset_imports() const;
  [[nodiscard]] std::string_view producer_name() const;
  [[nodiscard]] std::string_view producer_version() const;
  [[nodiscard]] std::string_view domain() const;
  [[nodiscard]] ModelVersion model_version() const;
  [[nodiscard]] std::string_view doc_string() const;
  [[nodiscard]] std::vector<StringStringEntry> metadata_props() const;
  // Views (graphs, functions, tensors) read the model's index and bytes and are valid while the
  // Model (or a copy of it: copies share one index) lives. Taking one from a temporary Model
  // does not compile (the `&&` overloads are deleted): `Model::open(p).tensor("w")` would
  // return a view of a model closed at the end of the statement. Name the model first:
  //   const auto model = onnxmap::Model::open(p);  auto w = model.tensor("w");
  [[nodiscard]] std::optional<Graph> graph() const&;
  [[nodiscard]] ViewRange<Function> functions() const&;
  [[nodiscard]] ViewRange<TrainingInfo> training_info() const&;

  // Tensors: every initializer of every graph, sparse initializer parts, and tensors held in
  // attributes (a Constant's value is found by the Constant's output name), breadth-first.
  [[nodiscard]] std::size_t tensor_count() const noexcept;
  [[nodiscard]] Tensor tensor_at(std::size_t i) const&;
  // The outermost tensor named `name`; throws onnxmap::Error (not_found).
  [[nodiscard]] Tensor tensor(std::string_view name) const&;
  [[nodiscard]] std::optional<Tensor> find_tensor(std::string_view name) const&;
  // Every tensor named `name`, outermost first.
  [[nodiscard]] std::vector<Tensor> tensors(std::string_view name) const&;
  // The tensor at `path` ("graph.node[3].attribute[0].t"), which always names exactly one.
  [[nodiscard]] std::optional<Tensor> tensor_at_path(std::string_view path) const&;

  // Views of a temporary Model would dangle: see above.
  std::optional<Graph> graph() const&& = delete;
  ViewRange<Function> functions() const&& = delete;
  ViewRange<TrainingInfo> training_info() const&& = delete;
  Tensor tensor_at(std::size_t i) const&& = delete;
  Tensor tensor(std::string_view name) const&& = delete;
  std::optional<Tensor> find_tensor(std::string_view name) const&& = delete;
  std::vector<Tensor> tensors(std::string_view name) const&& = delete;
  std::optional<Tensor> tensor_at_path(std::string_view path) const&& = delete;

  // With OpenOptions::collect_payload_errors: the error of every tensor opened as
  // TensorStorage::invalid, in tensor order, naming the file, the tensor's field path and offset.
  [[nodiscard]] std::vector<Error> payload_errors() const;

  // Number of message records the index holds, and the files behind the model.
  [[nodiscard]] std::size_t message_count() const noexcept;
  [[nodiscard]] const std::filesystem::path& path() const noexcept;
  // The folder external data locations resolve against (the model file's folder).
  [[nodiscard]] const std::filesystem::path& folder() const noexcept;
  [[nodiscard]] std::uint64_t file_size() const noexcept;
  // The version of the model file that was opened, as it was at open. A model keeps reading the
  // files it opened when they are replaced on disk (by rename: a new save, a download), so a
  // long-running reader compares this with file_version(path()) to learn that it serves an older
  // version. nullopt for a model opened by URL, from standard input or from bytes.
  [[nodiscard]] std::optional<FileVersion> opened_version() const noexcept;
  // The files behind the model (the model file, then its external data files, by the paths they
  // were opened at) whose version on disk is no longer the one opened: replaced, written or
  // removed since. One stat each; empty for a model opened by URL. A model from standard input
  // or from bytes has no model file to compare, only data files.
  [[nodiscard]] std::vector<std::filesystem::path> changed_on_disk() const;
  // Heap bytes of the index (records, tensor table, name hash); the mapped file is not counted.
  [[nodiscard]] std::uint64_t index_bytes() const noexcept;
  // A model opened by URL: its requests and retries so far, the open's included (its copies
  // share them). Nullopt for a file.
  [[nodiscard]] std::optional<FetchStats> fetch_stats() const noexcept;

 private:
  explicit Model(std::shared_ptr<const detail::ModelIndex> index) : index_(std::move(index)) {}
  friend struct detail::ViewAccess;
  friend class ModelSummary;
  friend ModelSummary peek(const std::filesystem::path& path, const OpenOptions& options);

  std::shared_ptr<const detail::ModelIndex> index_;
};

// What `peek` reads: the model's own fields and the main graph's name, inputs and outputs, with
// no tensor index and no walk over nodes. For metadata of huge files at almost no cost.
class ONNXMAP_API ModelSummary {
 public:
  // The same view of a model already opened in full, without reading the file again (a pipe or
  // standard input can be read only once).
  [[nodiscard]] static ModelSummary of(Model model) { return ModelSummary(std::move(model)); }

  [[nodiscard]] std::int64_t ir_version() const { return model_.ir_version(); }
  [[nodiscard]] std::vector<OperatorSetId> opset_imports() const { return model_.opset_imports(); }
  [[nodiscard]] std::string_view producer_name() const { return model_.producer_name(); }
  [[nodiscard]] std::string_view producer_version() const { return model_.producer_version(); }
  [[nodiscard]] std::string_view domain() const { return model_.domain(); }
  [[nodiscard]] ModelVersion model_version() const { return model_.model_version(); }
  [[nodiscard]] std::string_view doc_string() const { return model_.doc_string(); }
  [[nodiscard]] std::vector<StringStringEntry> metadata_props() const {
    return model_.metadata_props();
  }
  [[nodiscard]] bool has_graph() const { return model_.graph().has_value(); }
  [[nodiscard]] std::string_view graph_name() const;
  // Valid while the summary lives; not from a temporary one (see Model's views).
  [[nodiscard]] ViewRange<ValueInfo> inputs() const&;
  [[nodiscard]] ViewRange<ValueInfo> outputs() const&;
  ViewRange<ValueInfo> inputs() const&& = delete;
  ViewRange<ValueInfo> outputs() const&& = delete;
  [[nodiscard]] std::uint64_t file_size() const noexcept { return model_.file_size(); }
  [[nodiscard]] std::optional<FetchStats> fetch_stats() const noexcept {
    return model_.fetch_stats();
  }

 private:
  explicit ModelSummary(Model model) : model_(std::move(model)) {}
  friend ModelSummary peek(const std::filesystem::path& path, const OpenOptions& options);
  Model model_;
};

// Maps `path` and reads only what ModelSummary shows. Throws onnxmap::Error like Model::open.
[[nodiscard]] ONNXMAP_API ModelSummary peek(const std::filesystem::path& path,
                                            const OpenOptions& options = {});

// The JSON text (dump.hpp) of an opened model's root message, of the kind it was opened as, read
// from its file. A model opened by URL fetches the bytes first: all of them, or with omit_data
// only the metadata its mirror holds already. Throws onnxmap::Error (http) when a fetch fails.
[[nodiscard]] ONNXMAP_API std::string dump_json(const Model& model,
                                                const DumpOptions& options = {});

}  // namespace onnxmap
