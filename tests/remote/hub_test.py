"""onnxmap on hf:// URLs against range_server.py's /hub/ (HF_ENDPOINT), which answers like the
Hugging Face Hub: a redirect with a signed query to /cdn/ on another host name ("localhost"), 401
for a private repository without the token, 404 RevisionNotFound. Every secret is searched for in
every output and file (cloud_support.scan). Also: malformed s3:// and hf:// URLs.
"""
import shutil

import pytest

from cloud_support import (assert_same_output, HOME, HUB_TOKEN, NAMES, Server, folder, run, scan,  # noqa: F401
                           write_secret)


@pytest.fixture(scope="module")
def hub(folder, tmp_path_factory):
    root = tmp_path_factory.mktemp("hub")
    for org in ("org", "private"):
        (root / org).mkdir()
        shutil.copytree(folder, root / org / "repo")
    server = Server(root, tmp_path_factory.mktemp("hublog") / "requests.log", "--token",
                    HUB_TOKEN, "--revision", "v1.0")
    server.endpoint = "http://127.0.0.1:%d/hub" % server.port
    yield server
    server.stop()


@pytest.mark.parametrize("verb", [["info", "--json"], ["ls", "--json"], ["dump", "--omit-data"]],
                         ids=" ".join)
@pytest.mark.parametrize("name", NAMES)
def test_hf_outputs_equal_the_local_ones(onnxmap, hub, folder, name, verb):
    url = "hf://org/repo/" + name
    a = run(onnxmap, verb[0], folder / name, *verb[1:])
    b = run(onnxmap, verb[0], url, *verb[1:], env={"HF_ENDPOINT": hub.endpoint})
    assert b.returncode == a.returncode == 0, b.stderr[-300:]
    b_out = b.stdout.replace(url.encode(), str(folder / name).encode())
    assert_same_output(verb, a.stdout, b_out)


def test_hf_token_goes_to_the_hub_only(onnxmap, hub, folder, tmp_path):
    hub.clear()
    r = run(onnxmap, "get", "hf://private/repo/synth-ext.onnx",
            "model.layers.0.mlp.up_proj.weight", "-o", tmp_path / "b.npy",
            env={"HF_ENDPOINT": hub.endpoint, "HF_TOKEN": HUB_TOKEN})
    log = hub.log()
    assert r.returncode == 0, r.stderr[-300:]
    hub_requests = [e for e in log if e["path"].startswith("/hub/")]
    storage = [e for e in log if e["path"].startswith("/cdn/")]
    assert hub_requests and all(e["auth"] and e["status"] == 302 for e in hub_requests)
    assert storage and all(not e["auth"] and e["host"].startswith("localhost:") and
                           e["status"] == 206 for e in storage), storage
    run(onnxmap, "get", folder / "synth-ext.onnx", "model.layers.0.mlp.up_proj.weight", "-o",
        tmp_path / "a.npy")
    assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()


def test_hf_private_repo_without_a_token_is_refused(onnxmap, hub):
    r = run(onnxmap, "info", "hf://private/repo/synth.onnx", env={"HF_ENDPOINT": hub.endpoint})
    assert r.returncode == 1 and b"401" in r.stderr and b"access denied" in r.stderr, r.stderr


@pytest.mark.parametrize("where", ["HF_TOKEN_PATH", "HF_HOME"])
def test_hf_token_from_the_token_file(onnxmap, hub, tmp_path, where):
    token = write_secret(tmp_path / "token.secret", HUB_TOKEN + "\n")
    if where == "HF_HOME":
        (tmp_path / "home").mkdir()
        token = write_secret(tmp_path / "home" / "token", HUB_TOKEN + "\n")
    env = {"HF_ENDPOINT": hub.endpoint,
           where: str(token if where == "HF_TOKEN_PATH" else tmp_path / "home")}
    r = run(onnxmap, "info", "hf://private/repo/synth.onnx", env=env)
    token.unlink()  # the one file allowed to hold the token
    assert r.returncode == 0, r.stderr[-300:]


@pytest.mark.parametrize("url, ok", [("hf://org/repo/synth.onnx@main", True),
                                     ("hf://org/repo/synth.onnx@v1.0", True),
                                     ("hf://org/repo@v1.0/synth.onnx", True),
                                     ("hf://org/repo/synth.onnx@v2", False)])
def test_hf_revisions(onnxmap, hub, url, ok):
    r = run(onnxmap, "info", url, env={"HF_ENDPOINT": hub.endpoint})
    assert (r.returncode == 0) == ok and (ok or b"HTTP 404 RevisionNotFound" in r.stderr), \
        r.stderr[-300:]


def test_hf_cache_revalidates_with_one_request_to_the_hub(onnxmap, hub, tmp_path):
    env = {"HF_ENDPOINT": hub.endpoint}
    first = run(onnxmap, "ls", "hf://org/repo/synth-ext.onnx", "--cache", tmp_path / "c", env=env)
    hub.clear()
    second = run(onnxmap, "ls", "hf://org/repo/synth-ext.onnx", "--cache", tmp_path / "c", env=env)
    paths = [e["path"].split("?")[0] for e in hub.log()]
    assert second.returncode == 0 and second.stdout == first.stdout
    assert paths == ["/hub/org/repo/resolve/main/synth-ext.onnx", "/cdn/org/repo/synth-ext.onnx"]




@pytest.mark.parametrize("url, phrase", [
    ("s3://models", b"the key is missing"), ("s3://models/", b"the key is missing"),
    ("s3:///k.onnx", b"the bucket is"), ("s3://bad*bucket/k.onnx", b"the bucket is"),
    ("hf://org", b"hf://ORG/REPO/PATH"), ("hf://org/repo", b"hf://ORG/REPO/PATH"),
    ("hf://org/repo/", b"hf://ORG/REPO/PATH"), ("hf://org/repo/m.onnx@", b"empty revision"),
    ("hf://org/repo/../m.onnx", b"'..'"),
])
def test_malformed_urls_are_clear_errors(onnxmap, url, phrase):
    r = run(onnxmap, "info", url)
    assert r.returncode == 1 and phrase in r.stderr and b"invalid_argument" in r.stderr, r.stderr


