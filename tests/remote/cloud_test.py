"""onnxmap on s3:// and hf:// URLs, against servers the tests start on loopback:
  - an S3-protocol server that checks AWS Signature Version 4 (s3server/s3_server.js,
    @20minutes/s3rver pinned in s3server/package-lock.json, installed with npm ci);
  - range_server.py's /hub/ and /cdn/, which answer like the Hugging Face Hub and its storage.
Every secret a test hands onnxmap (an AWS secret and session token, a Hub token, a URL's password
and signed query) is searched for in everything onnxmap printed and in every file under the
test's folder (caches, credential files aside): the `scan` fixture fails the test that leaks one.
"""
import fcntl
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import time
import urllib.request

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
BUCKET = "models"
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


def npm_modules(work):
    """WORK/s3-modules/node_modules from the pinned lock file (kept while the lock is the same).
    Skips, saying why, where node or npm is absent or the registry cannot be reached, unless CI
    is set: CI always runs these tests."""
    def unavailable(why):
        if os.environ.get("CI"):
            pytest.fail(why + " (CI must run the S3 tests)", pytrace=False)
        pytest.skip(why)
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        unavailable("the S3 tests need Node.js and npm (Debian: apt-get install nodejs npm; "
                    "tools/setup.sh installs them)")
    modules = work / "s3-modules"
    modules.mkdir(parents=True, exist_ok=True)
    with open(work / "s3-modules.lock", "w") as held:  # pytest-xdist's workers take turns
        fcntl.flock(held, fcntl.LOCK_EX)
        return node, install(npm, modules, unavailable)


def install(npm, modules, unavailable):
    lock = (HERE / "s3server" / "package-lock.json").read_bytes()
    stamp = modules / "node_modules" / ".onnxmap-lock-sha256"
    digest = hashlib.sha256(lock).hexdigest()
    if not (stamp.is_file() and stamp.read_text() == digest):
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(HERE / "s3server" / name, modules / name)
        r = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=modules,
                           capture_output=True, text=True)
        if r.returncode != 0:
            unavailable(f"npm ci of the S3 test server failed (is the npm registry reachable?): "
                        f"{r.stderr[-500:]}")
        stamp.write_text(digest)
    shutil.copyfile(HERE / "s3server" / "s3_server.js", modules / "s3_server.js")
    return modules


class S3Server:
    """s3_server.js with the models of `folder` PUT into BUCKET; log() returns the requests
    since the last clear()."""

    def __init__(self, node, modules, folder, work):
        self.log_path = work / "s3.log"
        env = dict(os.environ, S3_TEST_SECRET=SECRET, S3_TEST_LOG=str(self.log_path))
        self.process = subprocess.Popen(
            [node, str(modules / "s3_server.js"), str(work / "store"), KEY_ID, BUCKET],
            stdout=subprocess.PIPE, env=env)
        self.port = int(self.process.stdout.readline())
        self.endpoint = "http://127.0.0.1:%d" % self.port
        for path in folder.rglob("*"):
            if path.is_file():
                self.put(path.relative_to(folder).as_posix(), path.read_bytes())

    def put(self, key, data):
        """An anonymous PUT (s3rver allows it)."""
        url = "%s/%s/%s" % (self.endpoint, BUCKET, urllib.request.quote(key))
        request = urllib.request.Request(url, data=data, method="PUT")
        no_proxy = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        no_proxy.open(request, timeout=60).close()

    def clear(self):
        self.log_path.write_text("")

    def log(self):
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]

    def stop(self):
        self.process.kill()
        self.process.wait()


@pytest.fixture(scope="module")
def s3(folder, tmp_path_factory):
    work = pathlib.Path(os.environ.get("ONNXMAP_S3_WORK") or tmp_path_factory.mktemp("s3work"))
    node, modules = npm_modules(work)
    store = tmp_path_factory.mktemp("s3store")
    server = S3Server(node, modules, folder, store)
    yield server
    server.stop()


def signed(s3):
    """The environment of a signed s3:// request to the test server."""
    return {"AWS_ENDPOINT_URL": s3.endpoint, "AWS_ACCESS_KEY_ID": KEY_ID,
            "AWS_SECRET_ACCESS_KEY": SECRET}


def s3_url(name):
    return "s3://%s/%s" % (BUCKET, name)


@pytest.mark.parametrize("verb", [["info"], ["info", "--json"], ["ls", "--json"],
                                  ["dump", "--omit-data"], ["check", "--data"]], ids=" ".join)
@pytest.mark.parametrize("name", NAMES)
def test_s3_outputs_equal_the_local_ones(onnxmap, s3, folder, name, verb):
    a = run(onnxmap, verb[0], folder / name, *verb[1:])
    b = run(onnxmap, verb[0], s3_url(name), *verb[1:], env=signed(s3))
    assert b.returncode == a.returncode and b"internal error" not in b.stderr, b.stderr[-300:]
    assert b.stdout.replace(s3_url(name).encode(), str(folder / name).encode()) == a.stdout


@pytest.mark.parametrize("name", ["synth-ext.onnx", "sparse.onnx"])
def test_s3_get_and_convert_equal_the_local_bytes(onnxmap, s3, folder, name, tmp_path):
    tensor = json.loads(run(onnxmap, "ls", folder / name, "--json").stdout)[-1]["name"]
    for source, out in ((folder / name, "a"), (s3_url(name), "b")):
        (tmp_path / out).mkdir()
        r = run(onnxmap, "get", source, tensor, "-o", tmp_path / out / "t.npy", env=signed(s3))
        assert r.returncode == 0, r.stderr[-300:]
        r = run(onnxmap, "convert", source, tmp_path / out / "c.onnx", env=signed(s3))
        assert r.returncode == 0, r.stderr[-300:]
    for file in ("t.npy", "c.onnx"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes()


def test_s3_requests_are_signed_with_the_region(onnxmap, s3):
    s3.clear()
    r = run(onnxmap, "info", s3_url("synth-ext.onnx"), env={**signed(s3), "AWS_REGION": "eu-west-3"})
    log = s3.log()
    assert r.returncode == 0 and len(log) == 2, (r.stderr[-300:], log)
    assert all(e["credential"].startswith(KEY_ID + "/") and "/eu-west-3/s3/" in e["credential"]
               and "x-amz-content-sha256" in e["signed"] for e in log), log


def test_s3_a_wrong_secret_is_refused_in_one_request(onnxmap, s3):
    """The server checks the signature: a request signed with another secret is refused (403),
    onnxmap says access was denied, after one request, in under a second."""
    s3.clear()
    start = time.monotonic()
    r = run(onnxmap, "info", s3_url("synth.onnx"),
            env={**signed(s3), "AWS_SECRET_ACCESS_KEY": "wrong-" + SECRET})
    elapsed = time.monotonic() - start
    log = s3.log()
    assert r.returncode == 1 and b"access denied" in r.stderr and b"403" in r.stderr, r.stderr
    assert len(log) == 1 and log[0]["status"] == 403 and elapsed < 1.0, (log, elapsed)


def test_s3_an_unknown_key_is_refused(onnxmap, s3):
    r = run(onnxmap, "info", s3_url("synth.onnx"), env={**signed(s3), "AWS_ACCESS_KEY_ID": "AKIDNOBODY"})
    assert r.returncode == 1 and b"access denied" in r.stderr, r.stderr


def test_s3_without_credentials_reads_anonymously(onnxmap, s3, folder):
    s3.clear()
    r = run(onnxmap, "ls", s3_url("synth-ext.onnx"), env={"AWS_ENDPOINT_URL": s3.endpoint})
    assert r.returncode == 0 and r.stdout == run(onnxmap, "ls", folder / "synth-ext.onnx").stdout
    assert s3.log() and not any(e["auth"] for e in s3.log())


def test_s3_session_token_is_sent_and_signed(onnxmap, s3):
    s3.clear()
    r = run(onnxmap, "info", s3_url("synth.onnx"),
            env={**signed(s3), "AWS_SESSION_TOKEN": SESSION_TOKEN})
    log = s3.log()
    assert r.returncode == 0 and log, r.stderr[-300:]
    assert all(e["token"] == SESSION_TOKEN and "x-amz-security-token" in e["signed"] for e in log)


def write_secret(path, text):
    path.write_text(text)
    return path


def test_s3_credentials_and_region_from_the_profile_files(onnxmap, s3, tmp_path):
    """AWS_PROFILE picks a profile of the credentials file; its region comes from the config
    file's "[profile NAME]"; the environment's keys would win, so none is set."""
    credentials = write_secret(tmp_path / "credentials.secret",
                               f"[default]\naws_access_key_id = AKIDOTHER\n"
                               f"aws_secret_access_key = other\n\n[ci]\n"
                               f"aws_access_key_id = {KEY_ID}\naws_secret_access_key = {SECRET}\n")
    config = write_secret(tmp_path / "config.secret",
                          "[default]\nregion = us-west-1\n\n[profile ci]\nregion = ap-south-2\n"
                          "s3 =\n  addressing_style = path\n")
    env = {"AWS_ENDPOINT_URL": s3.endpoint, "AWS_PROFILE": "ci",
           "AWS_SHARED_CREDENTIALS_FILE": str(credentials), "AWS_CONFIG_FILE": str(config)}
    s3.clear()
    r = run(onnxmap, "info", s3_url("synth.onnx"), env=env)
    assert r.returncode == 0, r.stderr[-300:]
    assert all("/ap-south-2/s3/" in e["credential"] for e in s3.log()), s3.log()


def test_s3_credentials_from_the_home_folder(onnxmap, s3, tmp_path):
    """Without AWS_SHARED_CREDENTIALS_FILE: ~/.aws/credentials, profile default."""
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials").write_text(
        f"[default]\naws_access_key_id={KEY_ID}\naws_secret_access_key={SECRET}\n")
    r = run(onnxmap, "info", s3_url("synth.onnx"),
            env={"AWS_ENDPOINT_URL": s3.endpoint, "HOME": str(tmp_path)})
    (tmp_path / ".aws" / "credentials").unlink()  # the one file allowed to hold the secret
    assert r.returncode == 0, r.stderr[-300:]


@pytest.mark.parametrize("text, phrase", [
    ("[default]\naws_access_key_id = K\nthis line has no equals sign\n", b"line 3"),
    ("[default]\naws_access_key_id = K\n", b"no aws_secret_access_key"),
    ("[default]\naws_access_key_id = K\naws_access_key_id = L\n", b"line 3"),
], ids=["no equals", "no secret", "key twice"])
def test_s3_a_bad_credentials_file_is_a_clear_error(onnxmap, s3, tmp_path, text, phrase):
    credentials = write_secret(tmp_path / "credentials.secret", text + SECRET + "=x\n")
    r = run(onnxmap, "info", s3_url("synth.onnx"),
            env={"AWS_ENDPOINT_URL": s3.endpoint, "AWS_SHARED_CREDENTIALS_FILE": str(credentials)})
    assert r.returncode == 1 and phrase in r.stderr and str(credentials).encode() in r.stderr \
        and b"invalid_argument" in r.stderr, r.stderr


def test_s3_an_unknown_profile_is_a_clear_error(onnxmap, s3):
    r = run(onnxmap, "info", s3_url("synth.onnx"),
            env={"AWS_ENDPOINT_URL": s3.endpoint, "AWS_PROFILE": "nobody"})
    assert r.returncode == 1 and b"profile 'nobody'" in r.stderr, r.stderr


def test_s3_virtual_hosted_addressing(onnxmap, s3, folder):
    """BUCKET.s3.localhost: s3rver takes the bucket from the host name. Anonymous: s3rver 4.0.4
    signs a virtual-hosted request's path with the bucket in it, which S3 does not."""
    s3.clear()
    env = {"AWS_ENDPOINT_URL": "http://s3.localhost:%d" % s3.port,
           "ONNXMAP_S3_ADDRESSING_STYLE": "virtual"}
    r = run(onnxmap, "ls", s3_url("synth.onnx"), env=env)
    assert r.returncode == 0 and r.stdout == run(onnxmap, "ls", folder / "synth.onnx").stdout
    assert {e["host"] for e in s3.log()} == {"%s.s3.localhost:%d" % (BUCKET, s3.port)}


def test_s3_cache_revalidates_in_one_request(onnxmap, s3, tmp_path):
    cache = tmp_path / "cache"
    first = run(onnxmap, "ls", s3_url("synth-ext.onnx"), "--cache", cache, env=signed(s3))
    s3.clear()
    second = run(onnxmap, "ls", s3_url("synth-ext.onnx"), "--cache", cache, env=signed(s3))
    assert second.returncode == 0 and second.stdout == first.stdout and len(s3.log()) == 1


def test_s3_a_missing_key_is_a_404(onnxmap, s3):
    r = run(onnxmap, "info", s3_url("nothing.onnx"), env=signed(s3))
    assert r.returncode == 1 and b"HTTP 404" in r.stderr and b"s3://models/nothing.onnx" in r.stderr


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


@pytest.fixture(scope="module")
def hostile(folder, tmp_path_factory):
    server = Server(folder, tmp_path_factory.mktemp("hostile") / "requests.log")
    yield server
    server.stop()


@pytest.mark.parametrize("mode, phrase", [("ignore-range", "whole file"),
                                          ("wrong-range", "a different range"),
                                          ("short", "short body"), ("etag", "changed on the server")])
def test_s3_hostile_answers_are_refused_alike(onnxmap, hostile, mode, phrase):
    """range_server.py as the S3 endpoint: the bucket is its behaviour (path-style)."""
    hostile.clear()
    r = run(onnxmap, "ls", "s3://%s/synth.onnx" % mode,
            env={"AWS_ENDPOINT_URL": "http://127.0.0.1:%d" % hostile.port,
                 "AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET})
    assert r.returncode == 1 and phrase.encode() in r.stderr, r.stderr
    assert all(e["auth"] for e in hostile.log())


def test_a_url_password_and_signed_query_are_never_shown(onnxmap, hostile, folder, tmp_path):
    base = "http://user:%s@127.0.0.1:%d" % (URL_PASSWORD, hostile.port)
    query = "?X-Amz-Signature=%s&X-Amz-Credential=k" % QUERY_SIGNATURE
    for mode in ("ok", "missing", "wrong-range"):
        for verb in (["info"], ["info", "--json"], ["ls", "--json"], ["check", "--json"]):
            run(onnxmap, verb[0], base + "/%s/synth-ext.onnx%s" % (mode, query), *verb[1:],
                "--cache", tmp_path / "cache")
    ok = run(onnxmap, "check", base + "/ok/synth.onnx" + query)
    assert ok.returncode == 0 and b"http://127.0.0.1:%d/ok/synth.onnx" % hostile.port in ok.stdout, \
        ok.stdout
    assert list((tmp_path / "cache").rglob("record"))


# The Hub: range_server.py's /hub/ (HF_ENDPOINT) redirects to /cdn/ on "localhost".

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
    assert b.stdout.replace(url.encode(), str(folder / name).encode()) == a.stdout


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


def test_viewer_of_an_s3_model_shows_no_secret(onnxmap, s3, monkeypatch):
    from viewer import Viewer  # tests/view, on the path by tests/conftest.py
    for k, v in {**signed(s3), "AWS_SESSION_TOKEN": SESSION_TOKEN, "HOME": str(HOME)}.items():
        monkeypatch.setenv(k, v)
    with Viewer(onnxmap.path, s3_url("synth.onnx")) as v:
        answers = [v.request("GET", path)[1] for path in
                   ("/", "/api/summary", "/api/tensors", "/api/warnings", "/api/graph")]
    OUTPUTS.extend(answers)
    assert b"s3://models/synth.onnx" in answers[1]
