// onnxmap.Manifest, Model.hash and Model.verify: the library's digests and manifests
// (verify.hpp) from Python; and the verify= keyword argument that Model.load, load_to_torch and
// safe_open take (take_manifest).

#include <pybind11/stl.h>

#include <string>

#include "binding.hpp"

namespace onnxmap::python {

namespace {

Manifest read_manifest(const py::object& path) {
  const py::object name = py::module_::import("os").attr("fspath")(path);
  const py::object file = py::module_::import("builtins").attr("open")(name, "rb");
  const py::bytes text = file.attr("read")();
  file.attr("close")();
  return parse_manifest(std::string(text), py::str(name).cast<std::string>());
}

py::list files_list(const Manifest& m) {
  py::list out;
  for (const FileDigest& f : m.files) {
    py::dict d;
    d["file"] = f.file;
    d["size"] = m.signed_files_only ? py::object(py::none()) : py::int_(f.size);
    d["digest"] = f.digest;
    out.append(d);
  }
  return out;
}

py::list tensors_list(const Manifest& m) {
  py::list out;
  for (const TensorDigest& t : m.tensors) {
    py::dict d;
    d["name"] = t.name;
    d["path"] = t.path;
    d["file"] = t.file;
    d["offset"] = t.offset;
    d["length"] = t.length;
    d["digest"] = t.digest;
    if (!t.rows.empty()) {
      py::list slices;
      for (const TensorDigest::Rows& s : t.rows) {
        py::dict slice;
        slice["rows"] = py::make_tuple(s.row_begin, s.row_end);
        slice["digest"] = s.digest;
        slices.append(slice);
      }
      d["slices"] = slices;
    }
    out.append(d);
  }
  return out;
}

HashOptions hash_options(const std::string& algorithm, unsigned threads,
                         const std::vector<unsigned>& ranks) {
  HashOptions options;
  const auto parsed = parse_digest_algorithm(algorithm);
  if (!parsed || *parsed == DigestAlgorithm::sha1) {
    raise_invalid("algorithm '" + algorithm + "': expected sha256 or xxh3-128");
  }
  options.algorithm = *parsed;
  options.threads = threads;
  options.ranks = ranks;
  return options;
}

Manifest hash_of(const py::handle& self, const std::string& algorithm, unsigned threads,
                 const std::vector<unsigned>& ranks) {
  const ModelPtr model = model_of(self);
  const HashOptions options = hash_options(algorithm, threads, ranks);
  const py::gil_scoped_release unlocked;
  return hash_model(*model, options);
}

py::dict verify_of(const py::handle& self, const py::object& manifest, unsigned threads) {
  const ModelPtr model = model_of(self);
  const Manifest m = manifest_of(manifest);
  HashOptions options;
  options.threads = threads;
  VerifyReport report;
  {
    const py::gil_scoped_release unlocked;
    report = verify_model(*model, m, options);
  }
  py::list mismatches;
  for (const Mismatch& x : report.mismatches) {
    py::dict d;
    d["what"] = x.what;
    d["name"] = x.name;
    d["file"] = x.file;
    d["expected"] = x.expected;
    d["actual"] = x.actual;
    d["detail"] = x.detail;
    mismatches.append(d);
  }
  py::dict out;
  out["ok"] = report.ok();
  out["files"] = report.files;
  out["tensors"] = report.tensors;
  out["bytes"] = report.bytes;
  out["mismatches"] = mismatches;
  return out;
}

constexpr const char* kManifestDoc =
    "A model's digests (docs/verify.md): each file's and each stored tensor's, with one "
    "algorithm, as `onnxmap hash` writes them. Model.hash() makes one; Manifest.read(path) "
    "reads one (also a model-signing tool's signed payload, which lists files only); "
    "Model.verify, Model.load, Model.load_to_torch and safe_open take one as verify=.";

}  // namespace

Manifest manifest_of(const py::object& given) {
  if (py::isinstance<Manifest>(given)) return given.cast<Manifest>();
  return read_manifest(given);
}

std::optional<Manifest> take_manifest(py::dict& kwargs) {
  if (!kwargs.contains("verify")) return std::nullopt;
  const py::object given = kwargs["verify"];
  PyDict_DelItemString(kwargs.ptr(), "verify");
  if (given.is_none()) return std::nullopt;
  return manifest_of(given);
}

void add_verified(py::dict& stats, const std::optional<LandedVerifier>& verifier) {
  if (!verifier) return;
  stats["verified"] = verifier->verified->load();
  stats["not_verified"] = verifier->not_verifiable;
}

void bind_verify(py::module_& m) {
  py::class_<Manifest>(m, "Manifest", kManifestDoc)
      .def_static("read", &read_manifest, py::arg("path"),
                  "The manifest in the file at `path`; onnxmap.Error (invalid_argument) naming "
                  "it for anything that is not one")
      .def_static(
          "from_json",
          [](const std::string& text, const std::string& name) {
            return parse_manifest(text, name);
          },
          py::arg("text"), py::arg("name") = "the manifest")
      .def(
          "to_json", [](const Manifest& x) { return to_json(x); }, "The manifest's JSON text")
      .def_property_readonly("algorithm",
                             [](const Manifest& x) { return std::string(to_string(x.algorithm)); })
      .def_property_readonly("files", &files_list,
                             "Each file's {file, size, digest} (size None in a signed payload)")
      .def_property_readonly("tensors", &tensors_list,
                             "Each stored tensor's {name, path, file, offset, length, digest}, "
                             "and slices: [{rows: (begin, end), digest}] where hash had ranks")
      .def_property_readonly("signed_files_only",
                             [](const Manifest& x) { return x.signed_files_only; })
      .def("__repr__", [](const Manifest& x) {
        const auto counted = [](std::size_t n, const char* what) {
          return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
        };
        return "<onnxmap.Manifest " + std::string(to_string(x.algorithm)) + ", " +
               counted(x.files.size(), "file") + ", " + counted(x.tensors.size(), "tensor") + ">";
      });
  def_method(m.attr("Model"), "hash", &hash_of, py::arg("algorithm") = "sha256",
             py::arg("threads") = 0, py::arg("ranks") = std::vector<unsigned>{},
             py::doc("hash(algorithm=\"sha256\", threads=0, ranks=()) -> Manifest: every "
                     "file's and every stored tensor's digest (\"sha256\" or \"xxh3-128\"), "
                     "each byte read once on `threads` threads (0: one a core), the GIL "
                     "released; for each R of `ranks`, also the digests of the rows each of R "
                     "ranks reads (shard=(rank, R)), so that a rank's load verifies its rows"));
  def_method(m.attr("Model"), "verify", &verify_of, py::arg("manifest"), py::arg("threads") = 0,
             py::doc("verify(manifest, threads=0) -> dict: the model hashed with the manifest's "
                     "algorithm (a Manifest or a path to one) and compared: {ok, files, tensors, "
                     "bytes, mismatches: [{what, name, file, expected, actual, detail}]}"));
}

}  // namespace onnxmap::python
