"""Transient faults of a remote store survived, the rest not retried: onnxmap against
range_server.py's fault modes (503 every third request, with and without Retry-After; every
fourth body cut in half; a stall past the timeout; an object changed between requests; always
503) over http://, hf:// (the Hub's /hub/ -> /cdn/) and s3:// (range_server.py as a faulting
proxy in front of the S3 server, which checks every signature). Outputs are judged against the
local file; attempts are counted from the servers' logs. Waits are kept short with
--http-retry-base, never slept through: no test asserts a duration.
"""
import json
import shutil

import pytest

from cloud_support import HOME, folder, run, scan  # noqa: F401
from remote_test import DENSE, Server, tensor_names
from s3_test import s3, s3_url, signed  # noqa: F401

QUICK = ["--http-retry-base", "0.01"]
FAULTS = {"503 every 3rd": ["--fail-every", 3], "cut every 4th": ["--cut-every", 4]}
MODELS = ["fixture.onnx", "ext/fixture ext.onnx", "synth-ext.onnx"]
assert set(MODELS) <= set(DENSE)


@pytest.fixture(scope="module")
def root(folder, tmp_path_factory):
    """The models, also as the Hub's repository org/repo."""
    root = tmp_path_factory.mktemp("root")
    shutil.copytree(folder, root, dirs_exist_ok=True)
    shutil.copytree(folder, root / "org" / "repo")
    return root


class Servers:
    """One range_server.py per set of flags, started on first use, stopped at the end."""

    def __init__(self, root, logs):
        self.root, self.logs, self.started = root, logs, {}

    def get(self, *flags):
        key = tuple(map(str, flags))
        if key not in self.started:
            log = self.logs / ("server-%d.log" % len(self.started))
            self.started[key] = Server(self.root, log, *key)
        return self.started[key]

    def stop(self):
        for server in self.started.values():
            server.stop()


@pytest.fixture(scope="module")
def servers(root, tmp_path_factory):
    s = Servers(root, tmp_path_factory.mktemp("logs"))
    yield s
    s.stop()


def endpoint(scheme, servers, flags, name, request):
    """(URL, environment, the faulting server) of model `name` over `scheme`."""
    if scheme == "s3":
        upstream = request.getfixturevalue("s3")
        server = servers.get("--upstream", upstream.endpoint, *flags)
        env = dict(signed(upstream), AWS_ENDPOINT_URL="http://127.0.0.1:%d" % server.port)
        return s3_url(name), env, server
    server = servers.get(*flags)
    if scheme == "hf":
        return "hf://org/repo/" + name, {"HF_ENDPOINT": "http://127.0.0.1:%d/hub" % server.port}, \
            server
    return server.url("ok", name), {}, server


def without_fetch(stdout):
    out = json.loads(stdout)
    fetched = out.pop("fetch", None)
    return out, fetched


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("scheme", ["http", "hf", "s3"])
def test_faults_survived_by_info_get_load_and_stats(onnxmap, servers, folder, fault, scheme,
                                                    request, tmp_path):
    """Every answer equals the local file's; the faults fired and were retried."""
    retries = 0
    for name in MODELS:
        url, env, server = endpoint(scheme, servers, FAULTS[fault], name, request)
        local = folder / name
        a = run(onnxmap, "info", local, "--json")
        b = run(onnxmap, "info", url, "--json", *QUICK, env=env)
        assert b.returncode == 0, b.stderr[-400:]
        info, fetched = without_fetch(b.stdout)
        assert info == json.loads(a.stdout) and fetched["requests"] > 0
        retries += fetched["retries"]
        for tensor in tensor_names(onnxmap, local)[:6]:
            a = run(onnxmap, "get", local, tensor, "-o", tmp_path / "a.npy")
            b = run(onnxmap, "get", url, tensor, "-o", tmp_path / "b.npy", *QUICK, env=env)
            # (a STRING tensor has no .npy: the same error both ways)
            assert a.returncode == b.returncode and a.stderr == b.stderr, (tensor, b.stderr)
            assert a.returncode != 0 or \
                (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes(), tensor
        a = run(onnxmap, "stats", local, "--json")
        b = run(onnxmap, "stats", url, "--json", *QUICK, env=env)
        assert b.returncode == 0 and b.stdout.replace(url.encode(), str(local).encode()) == \
            a.stdout, b.stderr[-400:]
        a = json.loads(run(onnxmap, "load", local, "--json").stdout)
        b = run(onnxmap, "load", url, "--json", *QUICK, env=env)
        assert b.returncode == 0, b.stderr[-400:]
        loaded = json.loads(b.stdout)
        assert (loaded["tensors"], loaded["bytes"]) == (a["tensors"], a["bytes"])
        assert a["retries"] == 0 and loaded["retry_wait_ms"] >= 0
        retries += loaded["retries"]
    log = server.log()
    assert any(e.get("fault") for e in log), "the fault never fired"
    assert retries > 0, "no retry counted"
    assert_cut_bodies_resumed(log)


def assert_cut_bodies_resumed(log):
    """Each cut body is asked for again from its first byte not received, to the same end."""
    asked = [e["range"] for e in log]
    for i, e in enumerate(log):
        if e.get("fault") == "cut":
            first, last = e["range"][len("bytes="):].split("-")
            rest = "bytes=%d-%s" % (int(first) + e["sent"], last)
            assert rest in asked[i + 1:], (e, "not resumed with", rest)


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("scheme", ["http", "hf", "s3"])
def test_viewer_values_through_faults(onnxmap, servers, folder, fault, scheme, request,
                                      monkeypatch):
    from viewer import Viewer  # tests/view, on the path by tests/conftest.py
    name = "synth-ext.onnx"
    url, env, _ = endpoint(scheme, servers, FAULTS[fault], name, request)
    with Viewer(onnxmap.path, folder / name) as v:
        names = [row["name"] for row in v.get("/api/tensors", limit=1000)["rows"]]
        local = {n: v.get("/api/values", name=n, count=256) for n in names}
    for k, value in {**env, "HOME": str(HOME)}.items():
        monkeypatch.setenv(k, value)
    with Viewer(onnxmap.path, url, *QUICK) as v:
        remote = {n: v.get("/api/values", name=n, count=256) for n in names}
    assert names and remote == local


def test_retry_after_in_seconds_is_what_the_wait_is(onnxmap, servers):
    """503 every 2nd request with "Retry-After: 1": each wait is the server's 1 s, not a (tiny)
    jittered one."""
    server = servers.get("--fail-every", 2, "--retry-after", 1)
    r = run(onnxmap, "info", server.url("ok", "synth-ext.onnx"), "--json", *QUICK)
    fetched = json.loads(r.stdout)["fetch"]
    assert r.returncode == 0 and fetched["retries"] > 0
    assert fetched["retry_wait_ms"] == 1000 * fetched["retries"]


def test_retry_after_as_a_date_is_honoured(onnxmap, servers):
    server = servers.get("--fail-every", 2, "--retry-after", 4, "--retry-after-date")
    r = run(onnxmap, "info", server.url("ok", "synth-ext.onnx"), "--json", *QUICK)
    fetched = json.loads(r.stdout)["fetch"]
    assert r.returncode == 0 and fetched["retries"] > 0
    # An HTTP-date has whole seconds: 4 s ahead is 3 to 4 s from the server's clock, and at least
    # 1 s from the client's while the client reads the answer within 2 s (a tiny jittered wait,
    # the date ignored, is milliseconds).
    assert fetched["retry_wait_ms"] >= 1000 * fetched["retries"]


def test_retry_after_is_capped(onnxmap, servers):
    server = servers.get("--fail-every", 2, "--retry-after", 3600)
    r = run(onnxmap, "info", server.url("ok", "synth-ext.onnx"), "--json", *QUICK,
            "--http-retry-max-wait", 0.05)
    fetched = json.loads(r.stdout)["fetch"]
    assert r.returncode == 0 and fetched["retries"] > 0
    assert fetched["retry_wait_ms"] == 50 * fetched["retries"]


@pytest.mark.parametrize("scheme", ["http", "hf", "s3"])
def test_always_503_fails_naming_503_and_the_attempts(onnxmap, servers, scheme, request):
    url, env, server = endpoint(scheme, servers, ["--fail-every", 1], "synth.onnx", request)
    server.clear()
    r = run(onnxmap, "info", url, *QUICK, env=env)
    err = r.stderr.decode()
    assert r.returncode == 1 and "HTTP 503" in err and "(5 attempts over " in err and \
        len(err.strip().splitlines()) == 1, err
    assert len(server.log()) == 5


def test_the_total_wait_bounds_the_attempts(onnxmap, servers):
    """Retry-After 30 s, capped at 0.2 s a wait, 0.5 s in all: two waits, three attempts."""
    server = servers.get("--fail-every", 1, "--retry-after", 30)
    server.clear()
    r = run(onnxmap, "info", server.url("ok", "synth.onnx"), "--http-retry-max-wait", 0.2,
            "--http-retry-total-wait", 0.5)
    assert r.returncode == 1 and b"HTTP 503 (3 attempts over " in r.stderr, r.stderr
    assert len(server.log()) == 3


def test_one_attempt_means_no_retry(onnxmap, servers):
    server = servers.get("--fail-every", 1)
    server.clear()
    r = run(onnxmap, "info", server.url("ok", "synth.onnx"), "--http-attempts", 1)
    assert r.returncode == 1 and b"HTTP 503" in r.stderr and b"attempts" not in r.stderr
    assert len(server.log()) == 1


@pytest.mark.parametrize("status", [429, 500, 502, 504])
def test_every_transient_status_is_retried(onnxmap, servers, folder, status):
    server = servers.get("--fail-every", 2, "--fail-status", status)
    r = run(onnxmap, "info", server.url("ok", "synth-ext.onnx"), "--json", *QUICK)
    assert r.returncode == 0, r.stderr
    info, fetched = without_fetch(r.stdout)
    assert info == json.loads(run(onnxmap, "info", folder / "synth-ext.onnx", "--json").stdout)
    assert fetched["retries"] > 0


@pytest.mark.parametrize("path, status", [("/missing/synth.onnx", 404),
                                          ("/cdn/synth.onnx?X-Amz-Signature=forged", 403),
                                          ("/auth/synth.onnx", 401)])
def test_a_4xx_is_not_retried(onnxmap, servers, path, status):
    server = servers.get()
    server.clear()
    r = run(onnxmap, "info", "http://127.0.0.1:%d%s" % (server.port, path), *QUICK)
    assert r.returncode == 1 and b"HTTP %d" % status in r.stderr, r.stderr
    assert [e["status"] for e in server.log()] == [status]


def test_a_stall_past_the_timeout_is_retried(onnxmap, servers, folder, tmp_path):
    server = servers.get("--stall-every", 3, "--stall-seconds", 2)
    server.clear()
    url = server.url("ok", "synth-ext.onnx")
    tensor = tensor_names(onnxmap, folder / "synth-ext.onnx")[0]
    a = run(onnxmap, "get", folder / "synth-ext.onnx", tensor, "-o", tmp_path / "a.npy")
    b = run(onnxmap, "get", url, tensor, "-o", tmp_path / "b.npy", "--http-timeout", 1, *QUICK)
    assert a.returncode == b.returncode == 0, b.stderr
    assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()
    assert any(e.get("fault") == "stall" for e in server.log())


@pytest.mark.parametrize("scheme", ["http", "hf", "s3"])
def test_an_object_changed_mid_load_is_an_error(onnxmap, root, scheme, request, tmp_path):
    """The requests after the open's see another ETag and Last-Modified: the load stops, without
    retrying. (Fresh servers: their fault counters start at 1.)"""
    fresh = Servers(root, tmp_path)
    try:
        url, env, server = endpoint(scheme, fresh, [], "synth-ext.onnx", request)
        assert run(onnxmap, "ls", url, env=env).returncode == 0  # the open's requests
        flags = ["--change-after", len(server.log())]
        url, env, server = endpoint(scheme, fresh, flags, "synth-ext.onnx", request)
        r = run(onnxmap, "load", url, *QUICK, env=env)
        log = server.log()
    finally:
        fresh.stop()
    assert r.returncode == 1 and b"changed on the server" in r.stderr, r.stderr
    changed = [e for e in log if e.get("fault") == "changed"]
    assert changed and len(changed) <= 4, "refused at once, never retried"


def test_a_cut_body_resumed_from_a_changed_object_is_an_error(onnxmap, root, tmp_path):
    """The first answer is cut in half; its resumption comes from another version of the file:
    refused, never a mix of the two."""
    server = Server(root, tmp_path / "log", "--cut-every", 1, "--change-after", 1)
    try:
        r = run(onnxmap, "info", server.url("ok", "synth.onnx"), *QUICK)
        log = server.log()
    finally:
        server.stop()
    assert r.returncode == 1 and b"changed on the server" in r.stderr, r.stderr
    assert len(log) == 2 and log[1]["range"].startswith("bytes=%d-" % log[0]["sent"]), log
