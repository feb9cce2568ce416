#include "verbs.hpp"

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "onnxmap/front_end_scope.hpp"

namespace onnxmap::cli {

namespace {

// What each verb's --help shows under "Examples:", in the order a newcomer would try them.
// tests/cli/cli_test.py runs every line without a URL, in this order, in one folder.
constexpr std::pair<std::string_view, std::string_view> kExamples[] = {
    {"synth", "onnxmap synth model.onnx --layers 2 --hidden 64"},
    {"synth", "onnxmap synth big.onnx --layers 80 --hidden 8192 --sparse   # 153 GB of holes"},
    {"info", "onnxmap info model.onnx"},
    {"info", "onnxmap info model.onnx --stats --json"},
    {"info", "onnxmap info https://example.com/model.onnx --cache ~/.cache/onnxmap"},
    {"ls", "onnxmap ls model.onnx --sort size --filter '*.weight'"},
    {"graph", "onnxmap graph model.onnx --depth 0"},
    {"dump", "onnxmap dump model.onnx --omit-data"},
    {"get", "onnxmap get model.onnx model.embed_tokens.weight -o embed.npy"},
    {"get", "onnxmap get model.onnx model.embed_tokens.weight --rows 0:8 -o rows.npy"},
    {"convert", "onnxmap convert model.onnx split.onnx --external-data split.onnx.data"},
    {"convert", "onnxmap convert split.onnx whole.onnx --inline"},
    {"check", "onnxmap check split.onnx --data"},
    {"hash", "onnxmap hash split.onnx -o split.manifest.json"},
    {"verify", "onnxmap verify split.onnx split.manifest.json"},
    {"diff", "onnxmap diff model.onnx whole.onnx"},
    {"diff", "onnxmap diff model.onnx split.onnx --json --tolerance 1e-3"},
    {"load", "onnxmap load model.onnx --mode direct"},
    {"load", "onnxmap load model.onnx --shard 0/2 --json"},
    {"stats", "onnxmap stats model.onnx --filter '*.mlp.*'"},
    {"stats", "onnxmap stats model.onnx model.embed_tokens.weight --json --bins 16"},
    {"view", "onnxmap view model.onnx"},
    {"view", "onnxmap view split.onnx --port 0 --no-browser   # any free port"},
    {"view", "onnxmap view https://example.com/model.onnx --cache ~/.cache/onnxmap"},
};

// "Examples:" and the verb's lines of kExamples, then the rest of its help's footer.
std::string examples_footer(const CLI::App& sub) {
  std::string out = "Examples:\n";
  for (const auto& [verb, line] : kExamples) {
    if (verb == sub.get_name()) out += "  " + std::string(line) + "\n";
  }
  return out + "\n" + sub.get_footer();
}

struct Verb {
  const CLI::App* subcommand;
  VerbRunner run;
};

std::vector<Verb>& verbs() {
  static std::vector<Verb> all;
  return all;
}

}  // namespace

void add_verb(CLI::App* subcommand, VerbRunner run) {
  verbs().push_back({subcommand, std::move(run)});
}

int run_selected(const CLI::App& app) {
  for (const Verb& verb : verbs()) {
    if (!verb.subcommand->parsed()) continue;
    // Every verb reads names, attributes and the rest of a model's metadata through the map: a
    // model file that shrank while open is then an onnxmap::Error (exit 1), never SIGBUS.
    const FrontEndScope checked;
    return verb.run();
  }
  (void)app;
  return kExitUsage;
}

std::string selected_command(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) {
    std::string out = sub->get_name();
    for (const CLI::Option* option : sub->get_options()) {
      if (!option->get_positional()) continue;
      for (const std::string& value : option->results()) out += " " + value;
    }
    return out;
  }
  return "(no verb)";
}

void register_verbs(CLI::App& app) {
  add_check_verb(app);
  add_convert_verb(app);
  add_diff_verb(app);
  add_dump_verb(app);
  add_get_verb(app);
  add_graph_verb(app);
  add_hash_verb(app);
  add_info_verb(app);
  add_load_verb(app);
  add_ls_verb(app);
  add_stats_verb(app);
  add_synth_verb(app);
  add_verify_verb(app);
  add_view_verb(app);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    sub->footer(examples_footer(*sub));
  }
}

std::string model_argument(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) {
    for (const CLI::Option* option : sub->get_options()) {
      const std::string name = option->get_name();
      if (option->get_positional() && (name == "MODEL" || name == "IN") &&
          !option->results().empty()) {
        return option->results().front();
      }
    }
  }
  return "";
}

std::string unknown_verb(const CLI::App& app, std::string_view first) {
  if (first.empty() || first.front() == '-') return "";
  const auto subs = app.get_subcommands([](const CLI::App*) { return true; });
  std::string names;
  for (const CLI::App* sub : subs) {
    if (sub->get_name() == first) return "";
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return "onnxmap: unknown verb '" + std::string(first) + "'; the verbs are " + names +
         "\nRun with --help for more information.";
}

}  // namespace onnxmap::cli
