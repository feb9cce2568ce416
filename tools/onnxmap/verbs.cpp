#include "verbs.hpp"

#include <utility>
#include <vector>

namespace onnxmap::cli {

namespace {

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
    if (verb.subcommand->parsed()) return verb.run();
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
  add_dump_verb(app);
  add_get_verb(app);
  add_graph_verb(app);
  add_info_verb(app);
  add_load_verb(app);
  add_ls_verb(app);
  add_synth_verb(app);
}

}  // namespace onnxmap::cli
