"""onnxmap on http:// and https:// URLs, against range_server.py on loopback: every verb's
output equals its output on the local file, byte for byte; request and byte counts from the
server's log stay within the targets; every misbehaving server is a clear error."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

HERE = pathlib.Path(__file__).resolve().parent


class Server:
    """range_server.py serving `root`; log() returns the requests since the last clear()."""

    def __init__(self, root, log_path, *extra):
        self.log_path = log_path
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "range_server.py"), "--root", str(root),
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


def synth_models(onnxmap, folder):
    for args in (["synth.onnx", "--layers", 2, "--hidden", 64],
                 ["synth-ext.onnx", "--layers", 2, "--hidden", 64, "--external-data"],
                 # Larger than the whole-file threshold, payload holes: the interleaved layout.
                 ["sparse.onnx", "--layers", 6, "--hidden", 1024, "--vocab", 16384, "--sparse"]):
        r = onnxmap("synth", folder / args[0], *args[1:])
        assert r.returncode == 0, r.stderr.decode()


# The models served; the dense ones (every byte on disk) are compared on every verb, the sparse
# one on those that read no payload.
DENSE = ["fixture.onnx", "ext/fixture ext.onnx", "synth.onnx", "synth-ext.onnx"]
NAMES = DENSE + ["sparse.onnx"]


@pytest.fixture(scope="module")
def folder(onnxmap, tmp_path_factory):
    folder = tmp_path_factory.mktemp("served")
    (folder / "policy").mkdir()
    fixture_models(folder)
    synth_models(onnxmap, folder)
    return folder


@pytest.fixture(scope="module")
def server(folder, tmp_path_factory):
    server = Server(folder, tmp_path_factory.mktemp("log") / "requests.log")
    yield server
    server.stop()


def tensor_names(onnxmap, path):
    listing = json.loads(onnxmap("ls", path, "--json").stdout)
    return [row["name"] for row in listing]


def assert_same_output(onnxmap, server, folder, name, verb):
    url = server.url("ok", name)
    local = folder / name
    a = onnxmap(*verb[:1], local, *verb[1:])
    b = onnxmap(*verb[:1], url, *verb[1:])
    b_out = b.stdout.replace(url.encode(), str(local).encode())
    if verb[0] == "info" and "--json" in verb and b.returncode == 0:
        # By URL, info --json also says what the requests came to ("fetch").
        remote = json.loads(b_out)
        assert remote.pop("fetch")["retries"] == 0, "a perfect server needs no retry"
        assert a.returncode == 0 and remote == json.loads(a.stdout)
        return
    assert a.returncode == b.returncode and a.stdout == b_out \
        and b"internal error" not in a.stderr + b.stderr, \
        f"{' '.join(verb)} by URL differs from the local output: " \
        f"{(a.returncode, b.returncode, b.stderr[-300:])}"


@pytest.mark.parametrize("verb", [["info"], ["info", "--stats"], ["info", "--json"], ["ls"],
                                  ["ls", "--json"], ["graph"], ["dump", "--omit-data"], ["check"]],
                         ids=" ".join)
@pytest.mark.parametrize("name", NAMES)
def test_equal_outputs(onnxmap, server, folder, name, verb):
    assert_same_output(onnxmap, server, folder, name, verb)


@pytest.mark.parametrize("verb", [["dump"], ["check", "--data"], ["stats", "--json"]],
                         ids=" ".join)
@pytest.mark.parametrize("name", DENSE)
def test_equal_outputs_reading_every_payload(onnxmap, server, folder, name, verb):
    path = folder / name
    assert path.stat().st_blocks * 512 >= path.stat().st_size // 2, "a dense file"
    assert_same_output(onnxmap, server, folder, name, verb)


@pytest.mark.parametrize("name", DENSE)
def test_diff_of_the_file_against_its_url_equal_exit_0(onnxmap, server, folder, name):
    r = onnxmap("diff", folder / name, server.url("ok", name))
    assert r.returncode == 0 and r.stdout == b"", (r.returncode, r.stdout[-300:], r.stderr[-300:])


@pytest.mark.parametrize("name", NAMES)
def test_get_equals_the_local_tensor(onnxmap, server, folder, name, tmp_path):
    """get by URL of each of the first six tensors writes the local file's .npy."""
    differ = []
    for tensor in tensor_names(onnxmap, folder / name)[:6]:
        a = onnxmap("get", folder / name, tensor, "-o", tmp_path / "a.npy")
        b = onnxmap("get", server.url("ok", name), tensor, "-o", tmp_path / "b.npy")
        same = a.returncode == b.returncode and (a.returncode != 0 or (
            (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()))
        if not same:
            differ.append(f"get {tensor}: {b.stderr[-300:]}")
    assert not differ, "\n".join(differ)


def sent(entries, suffix=""):
    return sum(e["sent"] for e in entries if e["path"].endswith(suffix))


def test_info_of_an_external_data_model(onnxmap, server):
    server.clear()
    r = onnxmap("info", server.url("ok", "synth-ext.onnx"))
    log = server.log()
    assert r.returncode == 0 and len(log) <= 3, \
        f"at most 3 requests: {[(e['path'], e['range']) for e in log]}"
    assert sent(log, ".data") <= 1, f"no data bytes but one per file: {sent(log, '.data')}"


@pytest.fixture(scope="module")
def sparse_info(onnxmap, server):
    """(exit status, request log) of info of sparse.onnx by URL."""
    server.clear()
    r = onnxmap("info", server.url("ok", "sparse.onnx"))
    return r.returncode, server.log()


@pytest.fixture(scope="module")
def info_bytes(sparse_info):
    """What info of sparse.onnx by URL fetches."""
    return sent(sparse_info[1])


def test_info_of_a_single_file_model_requests(onnxmap, folder, sparse_info):
    code, log = sparse_info
    tensors = len(tensor_names(onnxmap, folder / "sparse.onnx"))
    assert code == 0 and len(log) <= 1.1 * tensors + 10, \
        f"requests <= 1.1 x tensors + 10: {len(log)} for {tensors} tensors"


def test_info_of_a_single_file_model_bytes(folder, info_bytes):
    assert info_bytes <= 8 << 20, \
        f"at most 8 MB: {info_bytes} bytes of {(folder / 'sparse.onnx').stat().st_size}"


def test_one_connection_for_a_sequence_of_requests(sparse_info):
    ports = {e["port"] for e in sparse_info[1]}
    assert len(ports) == 1, ports


@pytest.fixture(scope="module")
def big(onnxmap, folder):
    """The largest tensor of sparse.onnx, as ls --json lists it."""
    return json.loads(onnxmap("ls", folder / "sparse.onnx", "--json", "--sort", "size").stdout)[0]


def test_get_of_one_tensor_fetches_it_and_what_info_needed(onnxmap, server, big, info_bytes,
                                                           tmp_path):
    server.clear()
    r = onnxmap("get", server.url("ok", "sparse.onnx"), big["name"], "--raw", tmp_path / "b.raw")
    log = server.log()
    assert r.returncode == 0 and sent(log) <= big["bytes"] + info_bytes, \
        f"{sent(log)} bytes for a tensor of {big['bytes']}"


def test_large_tensor_in_parallel_parts_equals_the_local_bytes(onnxmap, folder, big, tmp_path):
    """Answers slowed down, so that the parts are surely in flight together."""
    slow = Server(folder, tmp_path / "slow.log", "--latency-ms", 100)
    try:
        onnxmap("get", slow.url("ok", "sparse.onnx"), big["name"], "--raw", tmp_path / "b.raw")
        parts = [e for e in slow.log() if e["sent"] >= 1 << 20]
    finally:
        slow.stop()
    assert len(parts) > 1 and len({e["port"] for e in parts}) == len(parts), \
        f"a large tensor is fetched in parallel parts on several connections: {parts}"
    onnxmap("get", folder / "sparse.onnx", big["name"], "--raw", tmp_path / "a.raw")
    assert (tmp_path / "a.raw").read_bytes() == (tmp_path / "b.raw").read_bytes(), \
        "get of a large tensor equals the local bytes"


def test_get_rows_fetches_those_rows_only_and_equals_the_local_rows(onnxmap, server, folder, big,
                                                                    info_bytes, tmp_path):
    rows_count = big["dims"][0]
    a, b = rows_count // 4, rows_count // 4 + 3
    server.clear()
    r = onnxmap("get", server.url("ok", "sparse.onnx"), big["name"], "--rows", "%d:%d" % (a, b),
                "--raw", tmp_path / "b.raw")
    log = server.log()
    row_bytes = big["bytes"] // rows_count * (b - a)
    assert r.returncode == 0 and sent(log) <= row_bytes + info_bytes, \
        f"{sent(log)} bytes for {row_bytes}"
    onnxmap("get", folder / "sparse.onnx", big["name"], "--rows", "%d:%d" % (a, b), "--raw",
            tmp_path / "a.raw")
    assert (tmp_path / "a.raw").read_bytes() == (tmp_path / "b.raw").read_bytes(), \
        "get --rows equals the local rows"


@pytest.fixture(scope="module")
def bulk(onnxmap, server, folder):
    """name -> (local load --json, requests info makes) of the models load and convert read."""
    out = {}
    for name in ("synth-ext.onnx", "sparse.onnx"):
        local = json.loads(onnxmap("load", folder / name, "--json").stdout or "{}")
        server.clear()
        onnxmap("info", server.url("ok", name))
        out[name] = local, len(server.log())
    return out


@pytest.mark.parametrize("name", ["synth-ext.onnx", "sparse.onnx"])
def test_load_by_url(onnxmap, server, bulk, name):
    """load reads every tensor, each byte once, in large parallel ranges."""
    local, info_requests = bulk[name]
    server.clear()
    r = onnxmap("load", server.url("ok", name), "--json")
    remote = json.loads(r.stdout or "{}")
    log = server.log()
    assert r.returncode == 0 and (remote["tensors"], remote["bytes"]) == \
        (local["tensors"], local["bytes"]), \
        f"load by URL delivers the local tensors and bytes: {r.stderr[-300:]}"
    payload = sum(e["sent"] for e in log if e["range"])
    assert payload <= local["bytes"] + (8 << 20) and \
        len(log) <= info_requests + local["requests"] + 4, \
        f"load fetches each byte once, in large requests ({len(log)} requests, {payload} bytes)"


@pytest.mark.parametrize("extra", [[], ["--inline"]], ids=["as it is", "--inline"])
@pytest.mark.parametrize("name", ["synth-ext.onnx", "sparse.onnx"])
def test_convert_by_url_writes_the_local_result(onnxmap, server, folder, name, extra, tmp_path):
    """What convert writes from the URL equals what it writes from the file, byte for byte (its
    verbatim copies need the payloads fetched first)."""
    outputs = [tmp_path / "a" / "out.onnx", tmp_path / "b" / "out.onnx"]
    for out in outputs:
        out.parent.mkdir()
    a = onnxmap("convert", folder / name, outputs[0], *extra)
    b = onnxmap("convert", server.url("ok", name), outputs[1], *extra)
    assert a.returncode == b.returncode == 0, b.stderr[-300:]
    assert all((outputs[0].parent / f.name).read_bytes() == f.read_bytes()
               for f in outputs[1].parent.iterdir())


@pytest.fixture
def cached(onnxmap, folder, tmp_path):
    """(server, URL, folder, cache): a copy of synth-ext.onnx served alone (its time is changed
    below), and a cache folder."""
    own = tmp_path / "served"
    own.mkdir()
    for name in ("synth-ext.onnx", "synth-ext.onnx.data"):
        shutil.copy2(folder / name, own / name)
    server = Server(own, tmp_path / "requests.log")
    try:
        yield server, server.url("ok", "synth-ext.onnx"), own, tmp_path / "cache"
    finally:
        server.stop()


def test_cache_second_open_makes_one_request(onnxmap, cached):
    server, url, _, cache = cached
    first = onnxmap("ls", url, "--cache", cache)
    server.clear()
    second = onnxmap("ls", url, "--cache", cache)
    log = server.log()
    assert len(log) == 1, f"with --cache the second open makes one request, not {len(log)}"
    assert first.stdout == second.stdout and second.returncode == 0, \
        f"a cached open gives the same output: {second.stderr[-300:]}"


def test_cache_serves_a_tensor_fetched_once(onnxmap, cached, tmp_path):
    server, url, own, cache = cached
    tensor = tensor_names(onnxmap, own / "synth-ext.onnx")[3]
    onnxmap("get", url, tensor, "--cache", cache, "-o", tmp_path / "b.npy")
    server.clear()
    onnxmap("get", url, tensor, "--cache", cache, "-o", tmp_path / "b.npy")
    assert len(server.log()) == 1


def test_cache_fetches_a_changed_file_again(onnxmap, cached):
    server, url, own, cache = cached
    first = onnxmap("ls", url, "--cache", cache)
    path = own / "synth-ext.onnx"
    os.utime(path, (time.time() + 5, time.time() + 5))  # a new Last-Modified and ETag
    server.clear()
    third = onnxmap("ls", url, "--cache", cache)
    assert len(server.log()) > 1 and third.stdout == first.stdout


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


@pytest.mark.parametrize("mode, phrase", HOSTILE, ids=[mode for mode, _ in HOSTILE])
def test_misbehaving_server_one_clear_error(onnxmap, server, mode, phrase):
    url = server.url(mode, "synth.onnx")
    # A short timeout where the server hangs; elsewhere one a loaded machine cannot reach, so the
    # error is the server's fault, not a slow answer's.
    timeout = 1 if mode == "hang" else 30
    r = onnxmap("ls", url, "--http-timeout", timeout, "--http-retry-base", "0.01")
    err = r.stderr.decode()
    assert r.returncode == 1 and phrase in err and url in err and "(http" in err and \
        len(err.strip().splitlines()) == 1, err


def test_a_200_to_a_range_request_downloads_almost_nothing(onnxmap, server, folder):
    """A server ignoring Range on a 1 GiB file: refused before the body is read."""
    big = folder / "big.onnx"
    with open(big, "wb") as f:
        f.write(b"\x08\x07")
        f.truncate(1 << 30)
    try:
        server.clear()
        r = onnxmap("info", server.url("ignore-range", "big.onnx"))
        log = server.log()
    finally:
        big.unlink()
    assert r.returncode == 1 and sent(log) < (64 << 20), f"{sent(log)} bytes sent"


def test_a_redirect_to_another_host_is_followed(onnxmap, server):
    r = onnxmap("info", server.url("hop", "synth.onnx"))
    assert r.returncode == 0, r.stderr[-300:]


def test_a_missing_model_is_a_404_error(onnxmap, server):
    r = onnxmap("info", server.url("ok", "nothing.onnx"))
    assert r.returncode == 1 and b"404" in r.stderr, r.stderr


@pytest.mark.parametrize("location, name", [("../secret.bin", "up.onnx"),
                                            ("/etc/passwd", "abs.onnx")])
def test_external_location_out_of_the_folder_is_refused(onnxmap, server, folder, location, name):
    """Locations that would leave the model's folder are refused before any request for them."""
    t = helper.make_tensor("w", TensorProto.FLOAT, [1], [0.0])
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "4")):
        entry = t.external_data.add()
        entry.key, entry.value = k, v
    graph = helper.make_graph([], "g", [], [], initializer=[t])
    onnx.save(helper.make_model(graph), str(folder / "policy" / name))
    server.clear()
    r = onnxmap("ls", server.url("ok", "policy/" + name))
    assert r.returncode == 1 and b"unsafe_path" in r.stderr and \
        all("secret" not in e["path"] and "passwd" not in e["path"] for e in server.log()), \
        r.stderr[-300:]


TOKEN = "s3cret-token-value"


@pytest.fixture(scope="module")
def token_server(folder, tmp_path_factory):
    server = Server(folder, tmp_path_factory.mktemp("token") / "requests.log", "--token", TOKEN)
    yield server
    server.stop()


def test_bearer_token_from_the_environment_opens_a_private_model(onnxmap, token_server, folder):
    env = dict(os.environ, ONNXMAP_HTTP_TOKEN=TOKEN)
    r = onnxmap("ls", token_server.url("auth", "synth-ext.onnx"), env=env)
    assert r.returncode == 0 and r.stdout == onnxmap("ls", folder / "synth-ext.onnx").stdout, \
        r.stderr[-300:]


def test_refused_token_is_an_error_that_does_not_show_it(onnxmap, token_server):
    env = dict(os.environ, ONNXMAP_HTTP_TOKEN="wrong-" + TOKEN)
    r = onnxmap("ls", token_server.url("auth", "synth-ext.onnx"), env=env)
    assert r.returncode == 1 and b"401" in r.stderr and TOKEN.encode() not in r.stderr, r.stderr


def test_without_a_token_nothing_is_sent(onnxmap, token_server):
    env = {k: v for k, v in os.environ.items() if k != "ONNXMAP_HTTP_TOKEN"}
    token_server.clear()
    r = onnxmap("ls", token_server.url("auth", "synth-ext.onnx"), env=env)
    assert r.returncode == 1 and not any(e["auth"] for e in token_server.log())


@pytest.fixture(scope="module")
def tls(folder, tmp_path_factory):
    """(https server, its certificate); skips where openssl cannot make one."""
    keys = tmp_path_factory.mktemp("tls")
    pem, crt = keys / "tls.pem", keys / "tls.crt"
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                           pem, "-out", crt, "-days", "2", "-subj", "/CN=127.0.0.1",
                           "-addext", "subjectAltName=IP:127.0.0.1"], capture_output=True)
    if made.returncode != 0:
        pytest.skip("https: openssl cannot make a certificate: " + made.stderr.decode()[-200:])
    pem.write_bytes(pem.read_bytes() + crt.read_bytes())
    return pem, crt


@pytest.fixture(scope="module")
def https_server(folder, server, tls, tmp_path_factory):
    """An https server whose to-http redirects go to `server`."""
    https = Server(folder, tmp_path_factory.mktemp("https") / "requests.log", "--tls-cert",
                   tls[0], "--http-port", server.port)
    yield https
    https.stop()


def test_https_with_a_trusted_certificate(onnxmap, https_server, tls, folder):
    r = onnxmap("ls", https_server.url("ok", "synth.onnx", "https"), "--http-ca", tls[1])
    assert r.returncode == 0 and r.stdout == onnxmap("ls", folder / "synth.onnx").stdout, \
        r.stderr[-300:]


def test_https_with_an_unknown_certificate_is_refused(onnxmap, https_server):
    r = onnxmap("ls", https_server.url("ok", "synth.onnx", "https"))
    assert r.returncode == 1 and b"certificate" in r.stderr, r.stderr[-300:]


def test_a_redirect_from_https_to_http_is_refused(onnxmap, https_server, server, tls):
    server.clear()
    r = onnxmap("ls", https_server.url("to-http", "synth.onnx", "https"), "--http-ca", tls[1])
    assert r.returncode == 1 and b"https never goes to http" in r.stderr and \
        not server.log(), r.stderr[-300:]


@pytest.fixture(scope="module")
def corpus_server(corpus, tmp_path_factory):
    """A server of the corpus folder."""
    server = Server(corpus, tmp_path_factory.mktemp("corpus") / "requests.log")
    yield server
    server.stop()


@pytest.mark.parametrize("verb", [["info"], ["ls", "--json"], ["dump", "--omit-data"]],
                         ids=" ".join)
def test_corpus_model_by_url(onnxmap, corpus, corpus_server, corpus_model, verb):
    """info, ls and dump --omit-data of each corpus model succeed by URL, with the local output;
    equal is not enough: both must succeed (a crash of both is equal too)."""
    a = onnxmap(verb[0], corpus_model, *verb[1:])
    b = onnxmap(verb[0], corpus_server.url("ok", str(corpus_model.relative_to(corpus))), *verb[1:])
    assert a.returncode == 0 and b.returncode == 0 and a.stdout == b.stdout \
        and not a.stderr and not b.stderr, (a.returncode, b.returncode, b.stderr[-200:])


def test_load_verify_by_url_checks_each_tensor_as_it_streams(onnxmap, server, folder):
    """load --verify of a URL hashes the tensors as their ranges arrive (each byte fetched once),
    and a flipped bit in the served data file stops it naming the tensor."""
    (folder / "verify").mkdir()
    for name in ("synth-ext.onnx", "synth-ext.onnx.data"):
        shutil.copy(folder / name, folder / "verify" / name)
    manifest = folder / "verify.manifest.json"
    assert onnxmap("hash", folder / "verify" / "synth-ext.onnx", "-o", manifest).returncode == 0
    url = server.url("ok", "verify/synth-ext.onnx")
    server.clear()
    r = onnxmap("load", url, "--verify", manifest, "--json")
    out = json.loads(r.stdout or "{}")
    assert r.returncode == 0 and (out["verified"], out["not_verified"]) == (out["tensors"], 0), \
        r.stderr[-300:]
    assert sum(e["sent"] for e in server.log() if e["range"]) <= out["bytes"] + (8 << 20)
    tensors = json.loads(manifest.read_text())["tensors"]
    t = next(t for t in tensors if t["name"] == "model.layers.1.mlp.up_proj.weight")
    data = folder / "verify" / "synth-ext.onnx.data"
    raw = bytearray(data.read_bytes())
    raw[t["offset"] + 3] ^= 0x01
    data.write_bytes(raw)
    r = onnxmap("load", url, "--verify", manifest)
    assert r.returncode == 1 and r.stdout == b"", r.stdout
    assert b"tensor 'model.layers.1.mlp.up_proj.weight' in 'synth-ext.onnx.data': sha256 " \
        b"digest " in r.stderr and b"the load stopped" in r.stderr, r.stderr[-300:]
