#pragma once
// Putting a saved model's files in place: its data files, then the model.
//
// A model with external data is several files, and no rename replaces several at once. The order
// keeps what a reader of the model's path can open to the old version or the new one, or nothing:
//   - when no data file replaces a file (a first save, an inline model, new data names), the
//     data files are renamed into place first, where no model refers to them yet, and then the
//     model, in one rename: readers see the old model (with its own data) or the new one;
//   - when a data file replaces one (saving over a model with the same data location), the old
//     model is removed first, then the data files are renamed, then the new model: a reader finds
//     the old model, no model, or the new one, never the old model naming new data. (A reader
//     that opened the old model just before and reaches its data files only after they were
//     replaced is the one exception: see docs/format-and-limits.md.)
// An error while renaming removes the files this save already put in place, so a failed save
// leaves the old destination (first case) or none (second). With `durable`, each folder is synced
// after its files were renamed, and the model's after the old model was removed, before any data
// file replaces its own. The renames and the removal go through io::system_calls(), where a test
// watches each step or makes one fail.

#include <filesystem>
#include <vector>

#include "io/new_file.hpp"

namespace onnxmap::detail {

// Renames `data_files` and then `model` into place as above. Throws onnxmap::Error (io).
void commit_model(std::vector<io::NewFile>& data_files, io::NewFile& model, bool durable);

}  // namespace onnxmap::detail
