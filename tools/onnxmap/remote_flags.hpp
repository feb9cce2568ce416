#pragma once
// The flags of every verb that reads a model, for models given as http:// or https:// URLs.

#include <CLI/CLI.hpp>

#include "onnxmap/options.hpp"

namespace onnxmap::cli {

// Adds --cache DIR, --http-timeout SECONDS and --http-ca FILE to `sub`, filling `remote` when
// parsed.
void add_remote_flags(CLI::App* sub, RemoteOptions& remote);

}  // namespace onnxmap::cli
