// match_weights: by name first (the initializer's, or the one the mapping gives), where the type,
// shape and values must agree; then by content, through fingerprints of the checkpoint's
// tensors of a wanted type and shape (or of its reverse, read transposed), each candidate
// compared in full before it is taken.

#include <algorithm>
#include <set>
#include <unordered_map>

#include "index/model_index.hpp"
#include "io/guarded_bytes.hpp"
#include "onnxmap/tensor.hpp"
#include "view/view_access.hpp"
#include "write/shared_weights.hpp"
#include "write/weight_compare.hpp"

namespace onnxmap::detail {

namespace {

std::string describe(DataType type, std::span<const std::int64_t> dims) {
  std::string text(to_string(type));
  text += " [";
  for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

// A tensor's type, shape and fingerprint, as the content search keys them.
std::string content_key(DataType type, std::span<const std::int64_t> dims, std::uint64_t print) {
  std::string key(1, static_cast<char>(type));
  for (const std::int64_t d : dims) key += std::to_string(d) + ",";
  return key + ":" + std::to_string(print);
}

std::size_t element_size(DataType type) {
  const std::uint32_t bits = element_bits(type);
  return bits % 8 == 0 && bits <= 64 ? bits / 8 : 0;
}

class Matcher {
 public:
  Matcher(const Model& model, const Checkpoint& checkpoint, const WeightsFrom& options)
      : model_(model),
        index_(*ViewAccess::index(model)),
        checkpoint_(checkpoint),
        options_(options) {}

  std::vector<WeightMatch> run(std::span<const std::uint32_t> candidates) {
    check_mapping();
    std::vector<WeightMatch> matches(candidates.size());
    std::vector<std::size_t> unmatched;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      matches[i] = by_name(candidates[i]);
      if (matches[i].kind == MatchKind::none) unmatched.push_back(i);
    }
    if (!options_.match_content || unmatched.empty()) return matches;
    index_content(candidates, unmatched);
    for (const std::size_t i : unmatched) matches[i] = by_content(candidates[i]);
    return matches;
  }

 private:
  // A mapping that names an initializer the model lacks, or a tensor the checkpoint lacks, is
  // a mistake worth a word (a typo would otherwise quietly write the weights).
  void check_mapping() const {
    for (const auto& [onnx_name, checkpoint_name] : options_.names) {
      if (!model_.find_tensor(onnx_name)) {
        throw Error(ErrorKind::invalid_argument,
                    "the name mapping names '" + onnx_name + "', which is no tensor of the model");
      }
      if (checkpoint_.find(checkpoint_name) == nullptr) {
        throw Error(ErrorKind::invalid_argument, "the name mapping gives '" + checkpoint_name +
                                                     "' for '" + onnx_name +
                                                     "', which the checkpoint does not hold");
      }
    }
  }

  WeightMatch by_name(std::uint32_t id) const {
    const TensorRecord& t = index_.tensors[id];
    const auto mapped = options_.names.find(t.name);
    const std::string_view name = mapped != options_.names.end() ? mapped->second : t.name;
    const CheckpointTensor* c = checkpoint_.find(name);
    if (c == nullptr) return {};
    const Tensor tensor = model_.tensor_at(id);
    const auto where = [&] {
      return "the checkpoint's '" + c->name + "' (" + checkpoint_.files[c->file].location + ")";
    };
    if (c->type != tensor.data_type() || !std::ranges::equal(c->shape, tensor.dims())) {
      throw Error(ErrorKind::invalid_argument,
                  "initializer '" + std::string(t.name) + "' is " +
                      describe(tensor.data_type(), tensor.dims()) + ", " + where() + " " +
                      describe(c->type, c->shape),
                  Error::kNoOffset, tensor.path());
    }
    const auto ours = stored_bytes(t);
    const auto theirs = checkpoint_.bytes(*c);
    if (!(options_.compare_all_bytes ? equal_bytes(ours, theirs) : sampled_equal(ours, theirs))) {
      throw Error(ErrorKind::invalid_argument,
                  "initializer '" + std::string(t.name) + "' holds other values than " + where() +
                      " (is the graph exported from another checkpoint? map its names, or "
                      "leave it out)",
                  Error::kNoOffset, tensor.path());
    }
    return {MatchKind::name, static_cast<std::uint32_t>(c - checkpoint_.tensors.data())};
  }

  // Fingerprints the checkpoint's tensors that could hold an unmatched candidate: of its type
  // and shape, or (a matrix) of its type and the reversed shape, read transposed.
  void index_content(std::span<const std::uint32_t> candidates,
                     std::span<const std::size_t> unmatched) {
    std::set<std::string> wanted;  // type and shape keys of the unmatched
    for (const std::size_t i : unmatched) {
      const TensorRecord& t = index_.tensors[candidates[i]];
      if (element_size(static_cast<DataType>(t.data_type)) == 0) continue;
      wanted.insert(content_key(static_cast<DataType>(t.data_type), dims_of(t), 0));
    }
    for (std::uint32_t c = 0; c < checkpoint_.tensors.size(); ++c) {
      const CheckpointTensor& tensor = checkpoint_.tensors[c];
      const std::size_t size = element_size(tensor.type);
      if (size == 0 || tensor.length == 0) continue;
      if (wanted.contains(content_key(tensor.type, tensor.shape, 0))) {
        const auto print = fingerprint(checkpoint_.bytes(tensor), size);
        prints_.emplace(content_key(tensor.type, tensor.shape, print), Found{c, false});
      }
      if (tensor.shape.size() != 2) continue;
      const std::int64_t reversed[2] = {tensor.shape[1], tensor.shape[0]};
      if (wanted.contains(content_key(tensor.type, reversed, 0))) {
        const auto rows = static_cast<std::uint64_t>(tensor.shape[0]);
        const auto print = fingerprint(checkpoint_.bytes(tensor), size, rows);
        prints_.emplace(content_key(tensor.type, reversed, print), Found{c, true});
      }
    }
  }

  WeightMatch by_content(std::uint32_t id) const {
    const TensorRecord& t = index_.tensors[id];
    const auto type = static_cast<DataType>(t.data_type);
    const std::size_t size = element_size(type);
    if (size == 0) return {};
    const auto ours = stored_bytes(t);
    const auto [first, last] =
        prints_.equal_range(content_key(type, dims_of(t), fingerprint(ours, size)));
    // The same bytes as stored before a transpose, for a square matrix that could be either.
    std::vector<Found> found;
    for (auto it = first; it != last; ++it) found.push_back(it->second);
    std::stable_sort(found.begin(), found.end(),
                     [](const Found& a, const Found& b) { return !a.transposed && b.transposed; });
    for (const Found& f : found) {
      const CheckpointTensor& c = checkpoint_.tensors[f.tensor];
      const auto theirs = checkpoint_.bytes(c);
      const bool same = f.transposed ? transposed_equal(ours, theirs, size,
                                                        static_cast<std::uint64_t>(dims_of(t)[0]))
                                     : equal_bytes(ours, theirs);
      if (same) return {f.transposed ? MatchKind::transposed : MatchKind::content, f.tensor};
    }
    return {};
  }

  // The tensor's payload in its mapped file. Not Tensor::bytes(): inside a front end's scope
  // that reads every page first, and the comparisons here read only what they need (each
  // under the fault guard).
  std::span<const std::byte> stored_bytes(const TensorRecord& t) const {
    return index_.payload_file(t)->bytes().subspan(t.payload_offset, t.payload_length);
  }

  std::span<const std::int64_t> dims_of(const TensorRecord& t) const {
    return {index_.dims.data() + t.dims_begin, t.dims_count};
  }

  struct Found {
    std::uint32_t tensor;
    bool transposed;
  };

  const Model& model_;
  const ModelIndex& index_;
  const Checkpoint& checkpoint_;
  const WeightsFrom& options_;
  std::unordered_multimap<std::string, Found> prints_;
};

}  // namespace

std::vector<WeightMatch> match_weights(const Model& model,
                                       std::span<const std::uint32_t> candidates,
                                       const Checkpoint& checkpoint, const WeightsFrom& options) {
  return Matcher(model, checkpoint, options).run(candidates);
}

}  // namespace onnxmap::detail
