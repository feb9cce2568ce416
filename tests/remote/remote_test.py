#!/usr/bin/python3
"""onnxmap on http:// and https:// URLs, against range_server.py on loopback: every verb's
output equals its output on the local file, byte for byte; request and byte counts from the
server's log stay within the targets; every misbehaving server is a clear error.

    remote_test.py PATH/TO/onnxmap [--corpus DIR]
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "conformance"))
from corpus_sample import sample  # noqa: E402

ONNXMAP = sys.argv[1]
CORPUS = sys.argv[sys.argv.index("--corpus") + 1] if "--corpus" in sys.argv else None
HERE = pathlib.Path(__file__).resolve().parent
results = {"passed": 0, "failed": 0, "skipped": 0}


def run(*args, env=None):
    return subprocess.run([ONNXMAP, *map(str, args)], capture_output=True, env=env)


def check(name, condition, detail=""):
    results["passed" if condition else "failed"] += 1
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else ": " + str(detail)))


class Server:
    """range_server.py serving `root`; log() returns the requests since the last clear()."""

    def __init__(self, root, *extra):
        self.log_path = pathlib.Path(tempfile.mkstemp(suffix=".log")[1])
        self.process = subprocess.Popen(
            ["/usr/bin/python3", str(HERE / "range_server.py"), "--root", str(root),
             "--log", str(self.log_path), *map(str, extra)], stdout=subprocess.PIPE)
        self.port = int(self.process.stdout.readline())

    def url(self, mode, name, scheme="http"):
        return "%s://127.0.0.1:%d/%s/%s" % (scheme, self.port, mode, urllib.parse.quote(name))

    def wait_quiet(self):
        """Until every request the server is answering is logged (it logs after answering)."""
        no_proxy = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        no_proxy.open("http://127.0.0.1:%d/quiet/" % self.port, timeout=60).close()

    def clear(self):
        self.wait_quiet()
        self.log_path.write_text("")

    def log(self):
        self.wait_quiet()
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]

    def stop(self):
        self.process.kill()
        self.process.wait()
        self.log_path.unlink()


def fixture_models(folder):
    """Models python3-onnx writes: inline raw, typed fields, STRING, a Constant, external data."""
    rng = np.random.default_rng(7)
    w = numpy_helper.from_array(rng.standard_normal((64, 48)).astype(np.float32), "w")
    typed = helper.make_tensor("typed", TensorProto.FLOAT, [50, 40],
                               rng.standard_normal(2000).astype(np.float32).tolist())
    ints = helper.make_tensor("ints", TensorProto.INT64, [300], list(range(-150, 150)))
    names = helper.make_tensor("names", TensorProto.STRING, [2], [b"a", b"bc"])
    const = helper.make_node("Constant", [], ["c"],
                             value=numpy_helper.from_array(np.arange(6, dtype=np.int64), ""))
    node = helper.make_node("MatMul", ["x", "w"], ["y"])
    graph = helper.make_graph(
        [const, node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 48])],
        initializer=[w, typed, ints, names])
    model = helper.make_model(graph, producer_name="remote-test",
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(folder / "fixture.onnx"))
    (folder / "ext" / "data").mkdir(parents=True)
    onnx.save(model, str(folder / "ext" / "fixture ext.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="data/weights one.bin", size_threshold=0)
    return ["fixture.onnx", "ext/fixture ext.onnx"]


def synth_models(folder):
    run("synth", folder / "synth.onnx", "--layers", 2, "--hidden", 64)
    run("synth", folder / "synth-ext.onnx", "--layers", 2, "--hidden", 64, "--external-data")
    # Larger than the whole-file threshold, payload holes: the interleaved layout.
    run("synth", folder / "sparse.onnx", "--layers", 6, "--hidden", 1024, "--vocab", 16384,
        "--sparse")
    return ["synth.onnx", "synth-ext.onnx", "sparse.onnx"]


def tensor_names(path):
    listing = json.loads(run("ls", path, "--json").stdout)
    return [row["name"] for row in listing]


def compare_verbs(server, folder, name, verbs):
    url = server.url("ok", name)
    local = folder / name
    for verb in verbs:
        a = run(*verb[:1], local, *verb[1:])
        b = run(*verb[:1], url, *verb[1:])
        b_out = b.stdout.replace(url.encode(), str(local).encode())
        check("%s: %s equals the local output" % (name, " ".join(verb)),
              a.returncode == b.returncode and a.stdout == b_out
              and b"internal error" not in a.stderr + b.stderr,
              (a.returncode, b.returncode, b.stderr[-300:]))


def test_equal_outputs(server, folder, names):
    verbs = [["info"], ["info", "--stats"], ["info", "--json"], ["ls"], ["ls", "--json"],
             ["graph"], ["dump", "--omit-data"], ["check"]]
    for name in names:
        compare_verbs(server, folder, name, verbs)
        if (folder / name).stat().st_blocks * 512 >= (folder / name).stat().st_size // 2:
            compare_verbs(server, folder, name, [["dump"], ["check", "--data"], ["stats", "--json"]])
            url = server.url("ok", name)
            r = run("diff", folder / name, url)
            check("%s: diff of the file against its URL: equal, exit 0" % name,
                  r.returncode == 0 and r.stdout == b"", (r.returncode, r.stdout[-300:], r.stderr[-300:]))
        for tensor in tensor_names(folder / name)[:6]:
            a = run("get", folder / name, tensor, "-o", folder / "a.npy")
            b = run("get", server.url("ok", name), tensor, "-o", folder / "b.npy")
            same = a.returncode == b.returncode and (a.returncode != 0 or (
                (folder / "a.npy").read_bytes() == (folder / "b.npy").read_bytes()))
            check("%s: get %s equals the local tensor" % (name, tensor), same, b.stderr[-300:])


def sent(entries, suffix=""):
    return sum(e["sent"] for e in entries if e["path"].endswith(suffix))


def test_request_counts(server, folder):
    server.clear()
    r = run("info", server.url("ok", "synth-ext.onnx"))
    log = server.log()
    check("info of an external-data model: at most 3 requests", r.returncode == 0 and len(log) <= 3,
          [(e["path"], e["range"]) for e in log])
    check("info of an external-data model: no data bytes but one per file",
          sent(log, ".data") <= 1, sent(log, ".data"))

    tensors = len(tensor_names(folder / "sparse.onnx"))
    server.clear()
    r = run("info", server.url("ok", "sparse.onnx"))
    log = server.log()
    info_bytes = sent(log)
    check("info of a single-file model: requests <= 1.1 x tensors + 10 (%d for %d tensors)"
          % (len(log), tensors), r.returncode == 0 and len(log) <= 1.1 * tensors + 10)
    check("info of a single-file model: at most 8 MB (%d bytes of %d)"
          % (info_bytes, (folder / "sparse.onnx").stat().st_size), info_bytes <= 8 << 20)
    ports = {e["port"] for e in log}
    check("one connection for a sequence of requests", len(ports) == 1, ports)

    rows = json.loads(run("ls", folder / "sparse.onnx", "--json", "--sort", "size").stdout)
    big = rows[0]
    server.clear()
    r = run("get", server.url("ok", "sparse.onnx"), big["name"], "--raw", folder / "b.raw")
    log = server.log()
    check("get of one tensor: bytes <= tensor bytes + what info needed (%d, tensor %d)"
          % (sent(log), big["bytes"]), r.returncode == 0 and sent(log) <= big["bytes"] + info_bytes)
    # Answers slowed down, so that the parts are surely in flight together.
    slow = Server(folder, "--latency-ms", 100)
    try:
        run("get", slow.url("ok", "sparse.onnx"), big["name"], "--raw", folder / "b.raw")
        parts = [e for e in slow.log() if e["sent"] >= 1 << 20]
        check("a large tensor is fetched in parallel parts on several connections",
              len(parts) > 1 and len({e["port"] for e in parts}) == len(parts), parts)
    finally:
        slow.stop()
    run("get", folder / "sparse.onnx", big["name"], "--raw", folder / "a.raw")
    check("get of a large tensor equals the local bytes",
          (folder / "a.raw").read_bytes() == (folder / "b.raw").read_bytes())
    rows_count = big["dims"][0]
    a, b = rows_count // 4, rows_count // 4 + 3
    server.clear()
    r = run("get", server.url("ok", "sparse.onnx"), big["name"], "--rows", "%d:%d" % (a, b),
            "--raw", folder / "b.raw")
    log = server.log()
    row_bytes = big["bytes"] // rows_count * (b - a)
    check("get --rows fetches those rows only (%d bytes for %d)" % (sent(log), row_bytes),
          r.returncode == 0 and sent(log) <= row_bytes + info_bytes)
    run("get", folder / "sparse.onnx", big["name"], "--rows", "%d:%d" % (a, b), "--raw",
        folder / "a.raw")
    check("get --rows equals the local rows",
          (folder / "a.raw").read_bytes() == (folder / "b.raw").read_bytes())
    for f in ("a.raw", "b.raw", "a.npy", "b.npy"):
        (folder / f).unlink(missing_ok=True)


def test_bulk(server, folder):
    """load reads every tensor with large parallel ranges; convert writes what the local file
    gives, byte for byte (its verbatim copies need the payloads fetched first)."""
    for name in ("synth-ext.onnx", "sparse.onnx"):
        local = json.loads(run("load", folder / name, "--json").stdout or "{}")
        server.clear()
        run("info", server.url("ok", name))
        info_requests = len(server.log())
        server.clear()
        r = run("load", server.url("ok", name), "--json")
        remote = json.loads(r.stdout or "{}")
        log = server.log()
        check("%s: load by URL delivers the local tensors and bytes" % name,
              r.returncode == 0 and (remote["tensors"], remote["bytes"]) ==
              (local["tensors"], local["bytes"]), r.stderr[-300:])
        payload = sum(e["sent"] for e in log if e["range"])
        check("%s: load fetches each byte once, in large requests (%d requests, %d bytes)"
              % (name, len(log), payload), payload <= local["bytes"] + (8 << 20) and
              len(log) <= info_requests + local["requests"] + 4)
        for extra in ([], ["--inline"]):
            outputs = [folder / "a" / "out.onnx", folder / "b" / "out.onnx"]
            for out in outputs:
                shutil.rmtree(out.parent, ignore_errors=True)
                out.parent.mkdir()
            a = run("convert", folder / name, outputs[0], *extra)
            b = run("convert", server.url("ok", name), outputs[1], *extra)
            same = a.returncode == b.returncode == 0 and all(
                (outputs[0].parent / f.name).read_bytes() == f.read_bytes()
                for f in outputs[1].parent.iterdir())
            check("%s: convert %s by URL writes the local result" % (name, " ".join(extra)),
                  same, b.stderr[-300:])
    for sub in ("a", "b"):
        shutil.rmtree(folder / sub)


def test_cache(server, folder):
    cache = folder / "cache"
    url = server.url("ok", "synth-ext.onnx")
    first = run("ls", url, "--cache", cache)
    server.clear()
    second = run("ls", url, "--cache", cache)
    log = server.log()
    check("with --cache the second open makes one request", len(log) == 1, len(log))
    check("a cached open gives the same output", first.stdout == second.stdout and
          second.returncode == 0, second.stderr[-300:])
    tensor = tensor_names(folder / "synth-ext.onnx")[3]
    run("get", url, tensor, "--cache", cache, "-o", folder / "b.npy")
    server.clear()
    run("get", url, tensor, "--cache", cache, "-o", folder / "b.npy")
    check("a tensor fetched once is served from the cache", len(server.log()) == 1)
    path = folder / "synth-ext.onnx"
    os.utime(path, (time.time() + 5, time.time() + 5))  # a new Last-Modified and ETag
    server.clear()
    third = run("ls", url, "--cache", cache)
    check("a changed file is fetched again", len(server.log()) > 1 and third.stdout == first.stdout)
    shutil.rmtree(cache)


HOSTILE = [
    ("ignore-range", "answered HTTP 200 with the whole file"),
    ("wrong-range", "a different range"),
    ("short", "short body"),
    ("grow", "size changed"),
    ("etag", "changed on the server"),
    ("loop", "redirects"),
    ("missing", "HTTP 404"),
    ("hang", "timed out"),
]


def test_hostile(server, folder):
    for mode, phrase in HOSTILE:
        url = server.url(mode, "synth.onnx")
        r = run("ls", url, "--http-timeout", 1)
        err = r.stderr.decode()
        check("%s: one clear error" % mode, r.returncode == 1 and phrase in err and url in err and
              "(http" in err and len(err.strip().splitlines()) == 1, err)
    # A server ignoring Range on a 1 GiB file: refused before the body is read.
    big = folder / "big.onnx"
    with open(big, "wb") as f:
        f.write(b"\x08\x07")
        f.truncate(1 << 30)
    server.clear()
    r = run("info", server.url("ignore-range", "big.onnx"))
    log = server.log()
    check("a 200 to a range request downloads almost nothing (%d bytes sent)" % sent(log),
          r.returncode == 1 and sent(log) < (64 << 20))
    big.unlink()
    r = run("info", server.url("hop", "synth.onnx"))
    check("a redirect to another host is followed", r.returncode == 0, r.stderr[-300:])
    r = run("info", server.url("ok", "nothing.onnx"))
    check("a missing model is a 404 error", r.returncode == 1 and b"404" in r.stderr)


def test_token(folder):
    token = "s3cret-token-value"
    server = Server(folder, "--token", token)
    try:
        url = server.url("auth", "synth-ext.onnx")
        env = dict(os.environ, ONNXMAP_HTTP_TOKEN=token)
        r = run("ls", url, env=env)
        check("a bearer token from ONNXMAP_HTTP_TOKEN opens a private model",
              r.returncode == 0 and r.stdout == run("ls", folder / "synth-ext.onnx").stdout,
              r.stderr[-300:])
        env = dict(os.environ, ONNXMAP_HTTP_TOKEN="wrong-" + token)
        r = run("ls", url, env=env)
        check("a refused token is an error that does not show it",
              r.returncode == 1 and b"401" in r.stderr and token.encode() not in r.stderr,
              r.stderr)
        env = {k: v for k, v in os.environ.items() if k != "ONNXMAP_HTTP_TOKEN"}
        server.clear()
        r = run("ls", url, env=env)
        check("without a token nothing is sent", r.returncode == 1 and
              not any(e["auth"] for e in server.log()))
    finally:
        server.stop()


def test_tls(folder, http_server):
    pem = folder / "tls.pem"
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                           pem, "-out", folder / "tls.crt", "-days", "2", "-subj", "/CN=127.0.0.1",
                           "-addext", "subjectAltName=IP:127.0.0.1"], capture_output=True)
    if made.returncode != 0:
        results["skipped"] += 1
        print("SKIP https: openssl cannot make a certificate: " + made.stderr.decode()[-200:])
        return
    pem.write_bytes(pem.read_bytes() + (folder / "tls.crt").read_bytes())
    server = Server(folder, "--tls-cert", pem, "--http-port", http_server.port)
    try:
        ca = ["--http-ca", folder / "tls.crt"]
        url = server.url("ok", "synth.onnx", "https")
        r = run("ls", url, *ca)
        check("https with a trusted certificate", r.returncode == 0 and
              r.stdout == run("ls", folder / "synth.onnx").stdout, r.stderr[-300:])
        r = run("ls", url)
        check("https with an unknown certificate is refused",
              r.returncode == 1 and b"certificate" in r.stderr, r.stderr[-300:])
        http_server.clear()
        r = run("ls", server.url("to-http", "synth.onnx", "https"), *ca)
        check("a redirect from https to http is refused",
              r.returncode == 1 and b"https never goes to http" in r.stderr and
              not http_server.log(), r.stderr[-300:])
    finally:
        server.stop()


def test_external_policy(server, folder):
    """Locations that would leave the model's folder are refused before any request for them."""
    for location, name in [("../secret.bin", "up.onnx"), ("/etc/passwd", "abs.onnx")]:
        t = helper.make_tensor("w", TensorProto.FLOAT, [1], [0.0])
        t.ClearField("float_data")
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", "0"), ("length", "4")):
            entry = t.external_data.add()
            entry.key, entry.value = k, v
        graph = helper.make_graph([], "g", [], [], initializer=[t])
        onnx.save(helper.make_model(graph), str(folder / "policy" / name))
        server.clear()
        r = run("ls", server.url("ok", "policy/" + name))
        check("external location %s is refused" % location,
              r.returncode == 1 and b"unsafe_path" in r.stderr and
              all("secret" not in e["path"] and "passwd" not in e["path"] for e in server.log()),
              r.stderr[-300:])


def test_corpus(server, folder):
    if not CORPUS or not os.path.isdir(CORPUS):
        results["skipped"] += 1
        print("SKIP corpus: %s not found" % CORPUS)
        return
    link = folder / "corpus"
    link.symlink_to(os.path.abspath(CORPUS))
    models = sample(sorted(pathlib.Path(CORPUS).rglob("model.onnx")))
    bad = []
    for model in models:
        rel = "corpus/" + str(model.relative_to(CORPUS))
        for verb in (["info"], ["ls", "--json"], ["dump", "--omit-data"]):
            a = run(verb[0], model, *verb[1:])
            b = run(verb[0], server.url("ok", rel), *verb[1:])
            # Equal is not enough: both must succeed (a crash of both is equal too).
            if a.returncode != 0 or a.returncode != b.returncode or a.stdout != b.stdout \
                    or a.stderr or b.stderr:
                bad.append((rel, verb, b.returncode, b.stderr[-200:]))
    check("corpus: info, ls and dump --omit-data succeed, equal, on %d models by URL"
          % len(models),
          not bad, bad[:5])


def main():
    folder = pathlib.Path(tempfile.mkdtemp())
    (folder / "policy").mkdir()
    names = fixture_models(folder) + synth_models(folder)
    server = Server(folder)
    try:
        test_equal_outputs(server, folder, names)
        test_request_counts(server, folder)
        test_bulk(server, folder)
        test_cache(server, folder)
        test_hostile(server, folder)
        test_external_policy(server, folder)
        test_token(folder)
        test_tls(folder, server)
        test_corpus(server, folder)
    finally:
        server.stop()
        shutil.rmtree(folder)
    print("remote: %(passed)d passed, %(failed)d failed, %(skipped)d skipped" % results)
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
