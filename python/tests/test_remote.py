"""onnxmap.open, safe_open, peek, check and save on http:// URLs, against the Range server the
C++ remote tests use (tests/remote/range_server.py) on loopback: the same arrays as
numpy_helper gives for the local file, only the rows asked for fetched, server failures as
onnxmap.Error with kind "http"."""
import json
import pathlib
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request

import numpy as np
import onnx
import pytest

import onnxmap
from conftest import FIXTURE_MODELS, SOURCE_ROOT, judge_array


class RangeServer:
    def __init__(self, root, log, *faults):
        self.log_path = log
        self.process = subprocess.Popen(
            [sys.executable, str(SOURCE_ROOT / "tests/remote/range_server.py"), "--root",
             str(root), "--log", str(log), *map(str, faults)], stdout=subprocess.PIPE)
        self.port = int(self.process.stdout.readline())

    def url(self, name, mode="ok"):
        return "http://127.0.0.1:%d/%s/%s" % (self.port, mode, urllib.parse.quote(name))

    def wait_quiet(self):
        """Until every request the server is answering is logged (it logs after answering)."""
        no_proxy = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        no_proxy.open(f"http://127.0.0.1:{self.port}/quiet/", timeout=60).close()

    def requests(self):
        self.wait_quiet()
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]

    def clear(self):
        self.wait_quiet()
        self.log_path.write_text("")


@pytest.fixture(scope="module")
def server(fixtures, tmp_path_factory):
    s = RangeServer(fixtures, tmp_path_factory.mktemp("server") / "log")
    yield s
    s.process.kill()
    s.process.wait()


@pytest.mark.parametrize("name", FIXTURE_MODELS)
def test_open_url_equals_local(server, fixtures, name):
    local = onnx.load(str(fixtures / name))
    folder = str((fixtures / name).parent)
    with onnxmap.open(server.url(name)) as model, onnxmap.open(fixtures / name) as on_disk:
        assert list(model.keys()) == list(on_disk.keys())
        assert model.producer_name == local.producer_name
        for proto in local.graph.initializer:
            expected = judge_array(proto, folder)
            if expected is None:
                continue
            got = model[proto.name].numpy()
            assert got.dtype == expected.dtype and got.shape == expected.shape, proto.name
            assert got.tobytes() == expected.tobytes(), proto.name


def test_safe_open_slice_fetches_rows_only(server, fixtures):
    name = "external_one_file.onnx"
    local = onnx.load(str(fixtures / name))
    folder = str(fixtures)
    proto = max((t for t in local.graph.initializer if len(t.dims) >= 1 and t.dims[0] >= 4),
                key=lambda t: np.prod(t.dims))
    expected = judge_array(proto, folder)
    server.clear()
    with onnxmap.safe_open(server.url(name), framework="np") as f:
        opened = sum(e["sent"] for e in server.requests())
        server.clear()
        rows = f.get_slice(proto.name)[1:3]
        fetched = sum(e["sent"] for e in server.requests())
    assert rows.tobytes() == expected[1:3].tobytes()
    row_bytes = expected[1:3].nbytes
    assert fetched == row_bytes, (fetched, row_bytes, opened)


def test_peek_check_save_on_url(server, fixtures, tmp_path):
    name = "features.onnx"
    summary = onnxmap.peek(server.url(name))
    assert summary.producer_name == onnx.load(str(fixtures / name)).producer_name
    assert onnxmap.check(server.url(name)) == onnxmap.check(fixtures / name)
    with onnxmap.open(server.url(name)) as remote, onnxmap.open(fixtures / name) as local:
        onnxmap.save(remote, tmp_path / "remote.onnx")
        onnxmap.save(local, tmp_path / "local.onnx")
    assert (tmp_path / "remote.onnx").read_bytes() == (tmp_path / "local.onnx").read_bytes()


@pytest.mark.parametrize("mode, phrase", [("missing", "HTTP 404"),
                                          ("ignore-range", "whole file")])
def test_server_failures_are_http_errors(server, mode, phrase):
    url = server.url("features.onnx", mode)
    with pytest.raises(onnxmap.Error) as error:
        onnxmap.open(url)
    assert error.value.kind == "http" and error.value.file == url
    assert phrase in str(error.value)


def test_cache_makes_the_second_open_one_request(server, tmp_path):
    url = server.url("external_one_file.onnx")
    with onnxmap.open(url, cache_dir=tmp_path / "cache") as first:
        keys = list(first.keys())
    server.clear()
    with onnxmap.open(url, cache_dir=tmp_path / "cache", timeout_seconds=5) as second:
        assert list(second.keys()) == keys
    assert len(server.requests()) == 1


SECRET = "py-secret-Zq81vXwT0"
HUB_TOKEN = "hf_pyTokenQ7r2m"


def serve_clouds(server, monkeypatch, home):
    """`server` as the S3 endpoint (bucket "ok": its plain mode) and as the Hub (its /hub/), with
    the test's credentials in the environment and `home` as HOME (no file of the user's)."""
    base = "http://127.0.0.1:%d" % server.port
    monkeypatch.setenv("HOME", str(home))
    for k, v in {"AWS_ENDPOINT_URL": base, "AWS_ACCESS_KEY_ID": "AKIDPY",
                 "AWS_SECRET_ACCESS_KEY": SECRET, "HF_ENDPOINT": base + "/hub",
                 "HF_TOKEN": HUB_TOKEN}.items():
        monkeypatch.setenv(k, v)


@pytest.mark.parametrize("scheme", ["s3", "hf"])
def test_s3_and_hub_urls_equal_local(fixtures, scheme, monkeypatch, tmp_path):
    """s3:// with range_server.py as the S3 endpoint (bucket "ok": its plain mode; requests
    signed, which range_server.py does not check: tests/remote/cloud_test.py does) and hf://
    with its /hub/ as HF_ENDPOINT (the fixtures as repository org/repo). Neither the secret nor
    the token shows in an exception."""
    shutil.copytree(fixtures, tmp_path / "root" / "org" / "repo")
    server = RangeServer(tmp_path / "root", tmp_path / "log")
    try:
        serve_clouds(server, monkeypatch, tmp_path)
        name = "external_one_file.onnx"
        url = ("s3://ok/org/repo/%s" if scheme == "s3" else "hf://org/repo/%s@main") % name
        with onnxmap.open(url) as model, onnxmap.open(fixtures / name) as on_disk:
            assert list(model.keys()) == list(on_disk.keys())
            for key in on_disk.keys():
                assert model[key].numpy().tobytes() == on_disk[key].numpy().tobytes(), key
        log = server.requests()
        assert log and all(e["auth"] for e in log if "/cdn/" not in e["path"])
        assert not any(e["auth"] for e in log if "/cdn/" in e["path"])
        with pytest.raises(onnxmap.Error) as raised:
            onnxmap.open(url.replace(name, "nothing.onnx"))
        text = str(raised.value) + raised.value.detail + str(raised.value.file)
        assert raised.value.kind == "http" and SECRET not in text and HUB_TOKEN not in text
    finally:
        server.process.kill()
        server.process.wait()


def test_a_server_answering_503_every_third_request_is_survived(fixtures, tmp_path):
    """Every array equals the local one; the retries are counted, in the model and the load."""
    server = RangeServer(fixtures, tmp_path / "log", "--fail-every", 3)
    name = "external_one_file.onnx"
    try:
        with onnxmap.open(server.url(name), retry_base_seconds=0.01) as remote, \
                onnxmap.open(fixtures / name) as local:
            stats = remote.load(lambda *_: None)
            for key in local.keys():
                assert remote[key].numpy().tobytes() == local[key].numpy().tobytes(), key
            fetched = remote.fetch_stats
            assert local.fetch_stats is None
        faults = [e for e in server.requests() if e.get("fault")]
    finally:
        server.process.kill()
        server.process.wait()
    # Each 503 cost one retry, the load's among them.
    assert faults and fetched["retries"] == len(faults)
    assert fetched["requests"] > fetched["retries"] >= stats["retries"]
    assert stats["retry_wait_ms"] <= fetched["retry_wait_ms"]


def test_loads_report_their_own_retries_into_memory_and_to_a_device(fixtures, tmp_path):
    """Both loads count the retries of their own fetch: what the model's count grew by."""
    pytest.importorskip("torch")
    server = RangeServer(fixtures, tmp_path / "log", "--fail-every", 2)
    name = "external_one_file.onnx"
    seen = []
    try:
        for to_device in (False, True):
            with onnxmap.open(server.url(name), retry_base_seconds=0.01) as remote:
                before = remote.fetch_stats["retries"]
                if to_device:
                    stats = {}
                    remote.load_to_torch("cpu", stats=stats)
                else:
                    stats = remote.load(lambda *_: None)
                seen.append((remote.fetch_stats["retries"] - before, stats["retries"]))
    finally:
        server.process.kill()
        server.process.wait()
    assert all(grew == counted for grew, counted in seen), seen


def test_retry_attempts_bound_the_requests(fixtures, tmp_path):
    server = RangeServer(fixtures, tmp_path / "log", "--fail-every", 1)
    try:
        with pytest.raises(onnxmap.Error) as raised:
            onnxmap.open(server.url("features.onnx"), retry_attempts=2, retry_base_seconds=0.01)
        requests = server.requests()
    finally:
        server.process.kill()
        server.process.wait()
    assert raised.value.kind == "http" and "HTTP 503 (2 attempts over " in str(raised.value)
    assert len(requests) == 2
