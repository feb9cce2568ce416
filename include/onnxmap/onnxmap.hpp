#pragma once
// Everything onnxmap offers, in one include.

#include "onnxmap/annotations.hpp"
#include "onnxmap/builder.hpp"
#include "onnxmap/bulk.hpp"
#include "onnxmap/check.hpp"
#include "onnxmap/dump.hpp"
#include "onnxmap/error.hpp"
#include "onnxmap/mapped_file.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/save.hpp"
#include "onnxmap/schema.hpp"
#include "onnxmap/synth.hpp"
#include "onnxmap/version.hpp"
#include "onnxmap/wire.hpp"
