"""Shared by s3_test.py and hub_test.py (onnxmap on s3:// and hf:// URLs): the secrets the tests
hand onnxmap (an AWS secret and session token, a Hub token, a URL's password and signed query),
`run` (onnxmap in a clean environment, its output recorded), the `scan` fixture (autouse in both:
it fails the test whose output, or any file under its tmp_path but the credential files it wrote,
holds a secret), the served models and range_server.py as a hostile endpoint. The test modules
import the fixtures by name.
"""
import json
import os
import pathlib

import pytest

from remote_test import Server, fixture_models, synth_models

HERE = pathlib.Path(__file__).resolve().parent
KEY_ID = "AKIDONNXMAPTEST"
SECRET = "wJalrXUtnFEMI-secret-K7MDENGbPxRfiCY"
SESSION_TOKEN = "FwoGZXIvYXdzEXAMPLE-session-token"
HUB_TOKEN = "hf_onnxmapTestTokenAbcdef0123"
URL_PASSWORD = "p4ssw0rd-in-the-url"
QUERY_SIGNATURE = "a1b2c3-signature-in-the-query"
SECRETS = [SECRET, SESSION_TOKEN, HUB_TOKEN, URL_PASSWORD, QUERY_SIGNATURE]
NAMES = ["fixture.onnx", "ext/fixture ext.onnx", "synth.onnx", "synth-ext.onnx", "sparse.onnx"]

OUTPUTS = []  # what onnxmap printed in the running test


def run(onnxmap, *args, env=None):
    """onnxmap ARGS with `env` added to a clean environment (no AWS or HF variable of the
    caller's, HOME a folder without credentials); records the output for `scan`."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("AWS_", "HF_", "ONNXMAP_HTTP_TOKEN", "HUGGING_FACE"))}
    r = onnxmap(*args, env={**base, "HOME": str(HOME), **(env or {})})
    OUTPUTS.append(r.stdout + r.stderr)
    return r


HOME = pathlib.Path("/nonexistent-onnxmap-home")


def assert_same_output(verb, local, remote):
    """`remote` (stdout by URL, the URL replaced by the local path) is `local`'s stdout; by URL,
    info --json also says what the requests came to ("fetch"): none retried on a good server."""
    if verb == ["info", "--json"]:
        answer = json.loads(remote)
        assert answer.pop("fetch")["retries"] == 0
        assert answer == json.loads(local)
    else:
        assert remote == local


@pytest.fixture(autouse=True)
def scan(tmp_path):
    """After each test: no secret in what onnxmap printed nor in any file under tmp_path but the
    credential files the test wrote (named *.secret)."""
    OUTPUTS.clear()
    yield
    leaks = [f"output {i}: {s}" for i, out in enumerate(OUTPUTS) for s in SECRETS
             if s.encode() in out]
    for path in tmp_path.rglob("*"):
        if path.is_file() and not path.name.endswith(".secret"):
            data = path.read_bytes()
            leaks += [f"{path}: {s}" for s in SECRETS if s.encode() in data]
    assert not leaks, f"secrets shown: {leaks}"


@pytest.fixture(scope="module")
def folder(onnxmap, tmp_path_factory):
    folder = tmp_path_factory.mktemp("served")
    fixture_models(folder)
    synth_models(onnxmap, folder)
    return folder


def write_secret(path, text):
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def hostile(folder, tmp_path_factory):
    server = Server(folder, tmp_path_factory.mktemp("hostile") / "requests.log")
    yield server
    server.stop()


