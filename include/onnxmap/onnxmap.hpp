#pragma once
// Everything onnxmap offers a user, in one include: the model and its views, tensors, options,
// errors, building and saving models, synthetic test models, check and dump.
//
// Threads: each header states its own rule; in short, an opened Model and its views may be read
// from any number of threads at once, and builders and options are plain values.

#include "onnxmap/annotations.hpp"
#include "onnxmap/builder.hpp"
#include "onnxmap/byte_range.hpp"
#include "onnxmap/bytes.hpp"
#include "onnxmap/check.hpp"
#include "onnxmap/device.hpp"
#include "onnxmap/dump.hpp"
#include "onnxmap/error.hpp"
#include "onnxmap/file_version.hpp"
#include "onnxmap/front_end_scope.hpp"
#include "onnxmap/load.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/options.hpp"
#include "onnxmap/save.hpp"
#include "onnxmap/schema.hpp"
#include "onnxmap/stats.hpp"
#include "onnxmap/sub_byte.hpp"
#include "onnxmap/synth.hpp"
#include "onnxmap/verify.hpp"
#include "onnxmap/version.hpp"
