// onnxmap dump MODEL: protobuf's canonical JSON of the whole message, as MessageToJson prints it.

#include <iostream>
#include <string>

#include "load_mode_option.hpp"
#include "onnxmap/onnxmap.hpp"
#include "remote_flags.hpp"
#include "tooling.hpp"
#include "verbs.hpp"

namespace onnxmap::cli {

namespace {

struct DumpArgs {
  std::string model;
  std::string message = "ModelProto";
  bool omit_data = false;
  bool json = true;  // the only form: accepted so that every verb takes --json
  LoadModeOption load;
  RemoteOptions remote;
};

std::string known_messages() {
  std::string out;
  for (int k = 0; k < schema::kMessageKindCount; ++k) {
    out += ' ';
    out += tooling::message_name(static_cast<schema::MessageKind>(k));
  }
  return out;
}

int run_dump(const DumpArgs& args) {
  const std::optional<schema::MessageKind> kind = tooling::parse_message_kind(args.message);
  if (!kind) {
    std::cerr << "onnxmap dump: --message " << args.message << " is not a message of onnx.proto;"
              << " one of:" << known_messages() << '\n';
    return kExitUsage;
  }
  DumpOptions options;
  options.omit_data = args.omit_data;
  OpenOptions open;
  open.mode = args.load.mode();
  open.remote = args.remote;
  // A payload that does not fit its dims is printed as it is, as protobuf's JSON would: the
  // index records why instead of refusing the file.
  open.collect_payload_errors = true;
  // From a URL, the mirror holds the metadata; payloads are fetched only when they are printed.
  const Model model = Model::open(args.model, open, *kind);
  std::cout << dump_json(model, options);
  return kExitOk;
}

}  // namespace

void add_dump_verb(CLI::App& app) {
  auto args = std::make_shared<DumpArgs>();
  CLI::App* sub = app.add_subcommand("dump", "Print the model as protobuf's canonical JSON");
  sub->add_option("MODEL", args->model,
                  "the .onnx file (or a .pb with --message; - = standard input)")
      ->required();
  add_remote_flags(sub, args->remote);
  sub->add_option(
      "--message", args->message,
      "the message the file holds: ModelProto (default), or TensorProto for a bare tensor "
      "such as the backend tests' .pb files");
  sub->add_flag("--omit-data", args->omit_data, "leave out tensor payloads");
  sub->add_flag("--json", args->json, "JSON is dump's only form; accepted like every verb's");
  add_load_mode_option(sub, args->load);
  add_verb(sub, [args] { return run_dump(*args); });
}

}  // namespace onnxmap::cli
