#pragma once
// Cuts one very large record (a graph of 360 000 nodes) into runs of whole fields of about the
// same size, so that the parallel pass scans its fields on several threads (index/build.cpp).

#include <cstdint>
#include <functional>

#include "io/mapped_file.hpp"
#include "onnxmap/detail/span.hpp"

namespace onnxmap::detail {

struct RunCutting {
  std::uint64_t target = 0;  // the bytes of a run, about
  // The fields the record must have before it is cut at all; 0 cuts at once. When nonzero, a
  // field of kLargeFieldLength or more seen before that keeps the record whole: a graph that holds
  // its weights has few fields, and stepping over them all would only repeat the scan's page
  // faults.
  std::uint64_t min_fields = 0;
  std::uint64_t message_fields = 0;  // FieldActions::message_fields of the record's kind
};

// Cuts the record at `span` of `file`: calls emit(run) for each run, in file order, as they are
// cut, and returns true; or returns false, having called nothing, when the record stays whole.
// Until the record proves to have min_fields fields, its runs are held and the cuts are found by
// stepping over every field; after, they are guessed (index/run_guess.hpp), so that the cutting
// thread does not read the whole record ahead of the scanning ones, and stepped only where no
// guess is found. Malformed bytes, or emit returning false, end the cutting: the rest is the last
// run, whose scan reports the problem.
bool cut_into_runs(const MappedFile& file, Span span, const RunCutting& cutting,
                   const std::function<bool(Span)>& emit);

}  // namespace onnxmap::detail
