#pragma once
// ONNXMAP_API marks what the shared library exports. The library is built with hidden
// visibility, so everything else (the index, the wire codec, the writer's plan) stays private.
//
// Threads: a macro only; nothing here runs.

#if defined(__GNUC__) || defined(__clang__)
#define ONNXMAP_API __attribute__((visibility("default")))
#else
#define ONNXMAP_API
#endif
