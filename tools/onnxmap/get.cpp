// onnxmap get MODEL NAME|PATH: one tensor as a NumPy .npy file, or its payload bytes as stored.

#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "load_mode_option.hpp"
#include "npy.hpp"
#include "onnxmap/onnxmap.hpp"
#include "remote_flags.hpp"
#include "tooling.hpp"
#include "verbs.hpp"

namespace onnxmap::cli {

namespace {

struct GetArgs {
  std::string model;
  std::string tensor;
  std::string npy_out;
  std::string raw_out;
  std::string rows;
  LoadModeOption load;
  RemoteOptions remote;
};

// "A:B" -> [A, B), checked against `tensor`'s rows: a usage error (exit 2) in the option's
// words when the rows are not there to cut.
std::pair<std::uint64_t, std::uint64_t> parse_rows(const std::string& text, const Tensor& tensor) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) throw CLI::ValidationError("--rows", "expected A:B");
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  try {
    begin = std::stoull(text.substr(0, colon));
    end = std::stoull(text.substr(colon + 1));
  } catch (const std::exception&) {
    throw CLI::ValidationError("--rows", "expected A:B with non-negative integers");
  }
  const std::string name(tensor.lookup_name());
  if (tensor.dims().empty()) {
    throw CLI::ValidationError("--rows", name + " is a scalar: it has no rows");
  }
  if (begin > end || end > tensor.row_count()) {
    throw CLI::ValidationError("--rows", text + " is not within " + name +
                                             "'s rows 0:" + std::to_string(tensor.row_count()) +
                                             " (A:B with A <= B)");
  }
  if (!tensor.can_slice_rows()) {
    throw CLI::ValidationError(
        "--rows", name + " cannot be cut into rows (" +
                      (tensor.has_stored_bytes() ? "a row is not a whole number of bytes"
                                                 : "its elements are not stored as raw bytes") +
                      "); leave --rows out");
  }
  return {begin, end};
}

// Writes `header` then `body` to `path` with the library's writer: `path` never holds half a file.
void write_file(const std::string& path, std::span<const char> header,
                std::span<const std::byte> body) {
  const std::span<const std::byte> parts[] = {std::as_bytes(header), body};
  tooling::save_bytes(path, parts);
}

int run_get(const GetArgs& args) {
  OpenOptions options;
  options.mode = args.load.mode();
  options.remote = args.remote;
  const Model model = Model::open(args.model, options);
  PlanOptions named;
  named.names = {args.tensor};
  const Tensor tensor = plan(model, named).front().tensor;
  const DataType type = tensor.data_type();
  const auto t = traits(type);

  const bool npy = args.raw_out.empty();
  if (npy && (!t || type == DataType::string)) {
    std::cerr << "onnxmap: " << tensor.path() << " is a " << to_string(tensor.data_type())
              << " tensor, which .npy cannot hold; use --raw FILE for its bytes\n";
    return kExitUsage;
  }
  if (!npy && type == DataType::string) {
    write_file(args.raw_out, {}, tooling::encoded_strings(tensor));
    return kExitOk;
  }
  std::vector<std::int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  std::uint64_t count = tensor.element_count();
  // Rows are sliced without reading the rest of the tensor (a URL fetches only those rows).
  std::optional<TensorData> data;
  std::span<const std::byte> bytes;
  if (args.rows.empty()) {
    data.emplace(tensor.data());
    bytes = data->bytes();
  } else {
    const auto [begin, end] = parse_rows(args.rows, tensor);
    bytes = tensor.slice_rows(begin, end);
    shape[0] = static_cast<std::int64_t>(end - begin);
    count = tensor.row_elements() * (end - begin);
  }
  // A copy of a view, made under a guard: a fault in a mapped file that shrank while open is an
  // error (exit 1), and the writers below read memory.
  std::vector<std::byte> copy;
  if ((data && data->is_view()) || !args.rows.empty()) {
    copy.resize(bytes.size());
    copy_bytes(bytes, copy);
    bytes = copy;
  }
  if (!npy) {
    write_file(args.raw_out, {}, bytes);
    return kExitOk;
  }
  std::vector<std::byte> unpacked;
  if (t->bits < 8) {
    unpacked.resize(count);
    unpack_sub_byte(type, bytes, unpacked);
    bytes = unpacked;
  }
  const auto header = npy_header(t->numpy_descr, shape);
  if (args.npy_out.empty() || args.npy_out == "-") {
    std::cout.write(header.data(), static_cast<std::streamsize>(header.size()));
    std::cout.write(reinterpret_cast<const char*>(bytes.data()),
                    static_cast<std::streamsize>(bytes.size()));
    return kExitOk;
  }
  write_file(args.npy_out, header, bytes);
  return kExitOk;
}

}  // namespace

void add_get_verb(CLI::App& app) {
  auto args = std::make_shared<GetArgs>();
  CLI::App* sub = app.add_subcommand("get", "Write one tensor as .npy, or its bytes as stored");
  sub->add_option("MODEL", args->model, "the .onnx file (- = standard input)")->required();
  add_remote_flags(sub, args->remote);
  sub->add_option("TENSOR", args->tensor, "a tensor name, or a path as `ls` shows it")->required();
  auto* npy = sub->add_option("-o,--output", args->npy_out, "the .npy file to write (- = stdout)");
  sub->add_option("--raw", args->raw_out, "write the payload bytes as stored instead")
      ->excludes(npy);
  sub->add_option("--rows", args->rows, "only rows A:B along the first axis");
  add_load_mode_option(sub, args->load);
  add_verb(sub, [args] { return run_get(*args); });
}

}  // namespace onnxmap::cli
