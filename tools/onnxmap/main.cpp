// onnxmap: the command-line face of the library, git-style (`onnxmap VERB ...`).
// Exit codes: 0 success, 1 invalid model or failed check, 2 usage error, 3 internal error (a bug).

#include <CLI/CLI.hpp>
#include <csignal>
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include "onnxmap/onnxmap.hpp"
#include "verbs.hpp"

namespace {

// Whether `kind` says the bytes are not valid protobuf (rather than a model that is fine but
// lacks what was asked for).
bool is_encoding_error(onnxmap::ErrorKind kind) {
  using K = onnxmap::ErrorKind;
  return kind == K::truncated || kind == K::bad_varint || kind == K::bad_wire_type ||
         kind == K::bad_field_number || kind == K::out_of_bounds;
}

// What a person can do about an encoding error at the top of the file, where no field path
// says more: a bare TensorProto (which opens as one) read as a model, or a file cut short.
std::string hint_for(const onnxmap::Error& e, const std::string& model) {
  const bool local_file = !model.empty() && model != "-" && !onnxmap::is_url(model);
  if (!is_encoding_error(e.kind()) || !e.field_path().empty() || !local_file) return "";
  try {
    (void)onnxmap::Model::open(model, {}, onnxmap::schema::MessageKind::TensorProto);
    return "the file holds a bare TensorProto, not a model: `onnxmap dump --message "
           "TensorProto " +
           model + "` reads it";
  } catch (const onnxmap::Error&) {
  }
  if (e.kind() == onnxmap::ErrorKind::truncated || e.kind() == onnxmap::ErrorKind::out_of_bounds) {
    return "the file ends before a field it declares: it may be cut short (an interrupted "
           "download or copy), or not be an ONNX model";
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  // Past a file size limit a write fails with EFBIG, reported like a full disk, instead of the
  // process being killed halfway with a temporary file left behind.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"onnxmap: read ONNX models through a memory map, lazily"};
  app.set_version_flag("--version", std::string("onnxmap ") + std::string(onnxmap::version()));
  app.require_subcommand(1);
  app.footer(
      "Exit status: 0 success, 1 invalid model or failed check, 2 usage error, 3 internal error "
      "(a bug of onnxmap: please report it).\nEvery verb that prints takes --json.");
  onnxmap::cli::register_verbs(app);
  app.footer(
      "Example:\n  onnxmap synth model.onnx --layers 2 --hidden 64 && onnxmap info model.onnx\n"
      "Each verb's --help shows examples of it.\n\n" +
      app.get_footer());
  if (argc > 1) {
    const std::string unknown = onnxmap::cli::unknown_verb(app, argv[1]);
    if (!unknown.empty()) {
      std::cerr << unknown << '\n';
      return onnxmap::cli::kExitUsage;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 exits 0 for --help and --version; every real usage error becomes exit code 2,
    // named like every other message: "onnxmap VERB: what".
    if (e.get_exit_code() == 0) return app.exit(e);
    const auto verbs = app.get_subcommands();
    std::cerr << "onnxmap" << (verbs.empty() ? "" : " " + verbs.front()->get_name()) << ": "
              << e.what() << "\nRun with --help for more information.\n";
    return onnxmap::cli::kExitUsage;
  }
  try {
    return onnxmap::cli::run_selected(app);
  } catch (const onnxmap::Error& e) {
    // One line, as every error: what, where, and what to do where there is something to do.
    const std::string hint = hint_for(e, onnxmap::cli::model_argument(app));
    std::cerr << "onnxmap: " << e.what() << (hint.empty() ? "" : "; " + hint) << '\n';
    return onnxmap::cli::kExitInvalid;
  } catch (const CLI::Error& e) {
    // A value the verb itself validates while running (get --rows A:B).
    std::cerr << "onnxmap " << onnxmap::cli::selected_command(app) << ": " << e.what() << '\n';
    return onnxmap::cli::kExitUsage;
  } catch (const std::bad_alloc&) {
    std::cerr << "onnxmap " << onnxmap::cli::selected_command(app) << ": out of memory\n";
    return onnxmap::cli::kExitInvalid;
  } catch (const std::exception& e) {
    // Every failure the library foresees is an onnxmap::Error; anything else is a bug of ours.
    std::cerr << "onnxmap: internal error (onnxmap " << onnxmap::cli::selected_command(app)
              << "): " << e.what()
              << "\nThis is a bug in onnxmap, not a problem of the model: please report it with "
                 "this message and, if you can, the model.\n";
    return onnxmap::cli::kExitInternal;
  }
}
