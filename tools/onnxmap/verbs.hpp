#pragma once
// The verbs of the onnxmap command, one file each. Each `add_*` registers its subcommand and
// the function that runs it.

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <string_view>

#include "onnxmap/options.hpp"

namespace onnxmap::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalid = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInternal = 3;  // an exception no verb foresaw: a bug of onnxmap

using VerbRunner = std::function<int()>;

// Registers every verb on `app`.
void register_verbs(CLI::App& app);
// Runs the verb the command line selected; returns the exit code.
int run_selected(const CLI::App& app);
// The selected verb and its positional arguments as typed ("info model.onnx"), for messages.
[[nodiscard]] std::string selected_command(const CLI::App& app);
// The model the selected verb was given (its MODEL or IN argument), or "".
[[nodiscard]] std::string model_argument(const CLI::App& app);
// The message for a first argument that is neither an option nor a verb, or "".
[[nodiscard]] std::string unknown_verb(const CLI::App& app, std::string_view first);

// Each verb's file defines one of these.
void add_check_verb(CLI::App& app);
void add_convert_verb(CLI::App& app);
void add_diff_verb(CLI::App& app);
void add_dump_verb(CLI::App& app);
void add_get_verb(CLI::App& app);
void add_graph_verb(CLI::App& app);
void add_hash_verb(CLI::App& app);
void add_info_verb(CLI::App& app);
void add_load_verb(CLI::App& app);
void add_ls_verb(CLI::App& app);
void add_stats_verb(CLI::App& app);
void add_synth_verb(CLI::App& app);
void add_verify_verb(CLI::App& app);
void add_view_verb(CLI::App& app);

// Called by each verb's file to make itself known.
void add_verb(CLI::App* subcommand, VerbRunner run);

}  // namespace onnxmap::cli
