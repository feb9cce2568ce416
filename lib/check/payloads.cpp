// Tensor payloads without reading raw or external bytes: what the open refused to locate, typed
// and STRING element counts (those live in the model file and are counted by decoding), data
// types that name nothing, and external ranges sharing bytes within one file.

#include <algorithm>
#include <string>

#include "check/checks.hpp"

namespace onnxmap::detail {

namespace {

ProblemKind kind_of(const Error& error) {
  switch (error.kind()) {
    case ErrorKind::io:
    case ErrorKind::unsafe_path:
    case ErrorKind::out_of_bounds: return ProblemKind::external_data;
    default: return ProblemKind::payload;
  }
}

std::string dims_text(std::span<const std::int64_t> dims) {
  std::string out = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

void check_elements(const Tensor& tensor, CheckReport& report) {
  const auto type = static_cast<std::int32_t>(tensor.data_type());
  if (type == static_cast<std::int32_t>(DataType::undefined)) {
    add_problem(report, ProblemKind::payload, tensor.path() + ".data_type",
                "data_type is UNDEFINED (0); a tensor needs an element type",
                detail::offset_of(tensor));
    return;
  }
  const std::uint64_t count = tensor.element_count();
  const auto storage = tensor.storage();
  if (storage == TensorStorage::none) {
    if (count > 0 && traits(static_cast<DataType>(type))) {
      add_problem(report, ProblemKind::payload, tensor.path(),
                  "no data field, but dims " + dims_text(tensor.dims()) + " need " +
                      std::to_string(count) + " elements",
                  detail::offset_of(tensor));
    }
    return;
  }
  if (type == static_cast<std::int32_t>(DataType::string)) {
    const std::size_t held = tensor.strings().size();
    if (held != count) {
      add_problem(report, ProblemKind::payload, tensor.path() + ".string_data",
                  std::to_string(held) + " strings, but dims " + dims_text(tensor.dims()) +
                      " need " + std::to_string(count),
                  detail::offset_of(tensor));
    }
    return;
  }
  if (storage != TensorStorage::typed || !traits(static_cast<DataType>(type))) return;
  try {
    (void)tensor.data();  // decoding counts the entries and checks the field fits the type
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::io) throw;  // the file failed (it shrank), not the model
    add_problem(report, ProblemKind::payload,
                e.field_path().empty() ? tensor.path() : e.field_path(), e.detail(), e.offset());
  }
}

// Ranges of one data file that share bytes. Identical ranges count too: two tensors should not
// claim the same bytes (a writer that deduplicates should reference one tensor).
void check_overlaps(const Model& model, CheckReport& report) {
  struct Range {
    std::string_view file;
    std::uint64_t begin;
    std::uint64_t end;
    std::uint32_t tensor;
  };
  std::vector<Range> ranges;
  for (std::size_t i = 0; i < model.tensor_count(); ++i) {
    const Tensor t = model.tensor_at(i);
    if (t.storage() != TensorStorage::external) continue;
    // The open checked a known type's length against its dims, so byte_size() is it without
    // touching the bytes (a model opened by URL would fetch them).
    const auto type = traits(static_cast<DataType>(t.data_type()));
    const bool known = type && type->bits != 0;
    const std::uint64_t length = known ? t.byte_size() : t.bytes().size();
    if (length == 0) continue;
    ranges.push_back(
        {t.data_file(), t.file_offset(), t.file_offset() + length, static_cast<std::uint32_t>(i)});
  }
  std::stable_sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.file != b.file ? a.file < b.file : a.begin < b.begin;
  });
  // A sweep: each range is compared with the one reaching furthest among those before it.
  std::size_t reach = 0;
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    const Range& prev = ranges[reach];
    const Range& cur = ranges[i];
    if (cur.file != prev.file) {
      reach = i;
      continue;
    }
    if (cur.begin < prev.end) {
      const Tensor a = model.tensor_at(prev.tensor);
      const Tensor b = model.tensor_at(cur.tensor);
      add_problem(report, ProblemKind::overlapping_data, b.path() + ".external_data",
                  "bytes [" + std::to_string(cur.begin) + ", " + std::to_string(cur.end) +
                      ") of '" + std::string(cur.file) + "' overlap bytes [" +
                      std::to_string(prev.begin) + ", " + std::to_string(prev.end) + ") of " +
                      a.path() + " ('" + std::string(a.lookup_name()) + "')",
                  detail::offset_of(b));
    }
    if (cur.end > prev.end) reach = i;
  }
}

}  // namespace

void check_payloads(const Model& model, CheckReport& report) {
  for (const Error& error : model.payload_errors()) {
    add_problem(report, kind_of(error), error.field_path(), error.detail(), error.offset());
  }
  for (std::size_t i = 0; i < model.tensor_count(); ++i) {
    const Tensor t = model.tensor_at(i);
    ++report.tensors;
    if (t.storage() != TensorStorage::invalid) check_elements(t, report);
  }
  check_overlaps(model, report);
}

}  // namespace onnxmap::detail
