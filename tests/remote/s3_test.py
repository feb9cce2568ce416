"""onnxmap on s3:// URLs against an S3-protocol server on loopback that checks AWS Signature
Version 4 (s3server/s3_server.js: @20minutes/s3rver pinned in s3server/package-lock.json,
installed with npm ci), and against range_server.py as a hostile S3 endpoint. Every secret is
searched for in every output and file (cloud_support.scan). Also: URLs with a password and a
signed query, and the viewer of an s3:// model, show no secret.
"""
import fcntl
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import urllib.request

import pytest

from cloud_support import (assert_same_output, HERE, HOME, KEY_ID, NAMES, OUTPUTS, QUERY_SIGNATURE, SECRET,  # noqa: F401
                           SESSION_TOKEN, URL_PASSWORD, folder, hostile, run, scan, write_secret)

BUCKET = "models"


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
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    major = version.lstrip("v").split(".")[0]
    if not major.isdigit() or int(major) < 20:
        unavailable(f"the S3 test server (@20minutes/s3rver) needs Node.js 20 or later, "
                    f"not {version or 'an unknown version'} (Debian 12's nodejs is 18: NodeSource "
                    f"has newer)")
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
    # Replaced whole (a new file renamed over the old one): another worker's server may be
    # starting from it.
    fresh = modules / f"s3_server.js.{os.getpid()}"
    shutil.copyfile(HERE / "s3server" / "s3_server.js", fresh)
    os.replace(fresh, modules / "s3_server.js")
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
    b_out = b.stdout.replace(s3_url(name).encode(), str(folder / name).encode())
    assert_same_output(verb, a.stdout, b_out)


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
    onnxmap says access was denied after one request (not retried)."""
    s3.clear()
    r = run(onnxmap, "info", s3_url("synth.onnx"),
            env={**signed(s3), "AWS_SECRET_ACCESS_KEY": "wrong-" + SECRET})
    log = s3.log()
    assert r.returncode == 1 and b"access denied" in r.stderr and b"403" in r.stderr, r.stderr
    assert len(log) == 1 and log[0]["status"] == 403, log


def test_s3_no_credentials_for_a_private_bucket_is_refused_in_one_request(onnxmap, hostile):
    """range_server.py's /auth/ as a private bucket: an unsigned request is refused (401) after
    one request (not retried)."""
    hostile.clear()
    r = run(onnxmap, "info", "s3://auth/synth.onnx",
            env={"AWS_ENDPOINT_URL": "http://127.0.0.1:%d" % hostile.port})
    assert r.returncode == 1 and b"access denied" in r.stderr and len(hostile.log()) == 1, \
        (r.stderr, hostile.log())


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


@pytest.mark.parametrize("mode, phrase", [("ignore-range", "whole file"),
                                          ("wrong-range", "a different range"),
                                          ("short", "short body"), ("etag", "changed on the server")])
def test_s3_hostile_answers_are_refused_alike(onnxmap, hostile, mode, phrase):
    """range_server.py as the S3 endpoint: the bucket is its behaviour (path-style)."""
    hostile.clear()
    r = run(onnxmap, "ls", "s3://%s/synth.onnx" % mode, "--http-retry-base", "0.01",
            env={"AWS_ENDPOINT_URL": "http://127.0.0.1:%d" % hostile.port,
                 "AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET})
    assert r.returncode == 1 and phrase.encode() in r.stderr, r.stderr
    assert all(e["auth"] for e in hostile.log())


def test_s3_signed_requests_follow_no_redirect(onnxmap, hostile):
    """range_server.py's /hop/ redirects to another host name: a signed request (its session
    token a header libcurl would carry along) stops at the redirect."""
    hostile.clear()
    r = run(onnxmap, "ls", "s3://hop/synth.onnx",
            env={"AWS_ENDPOINT_URL": "http://127.0.0.1:%d" % hostile.port,
                 "AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET,
                 "AWS_SESSION_TOKEN": SESSION_TOKEN})
    log = hostile.log()
    assert r.returncode == 1 and b"HTTP 302" in r.stderr, r.stderr
    assert len(log) == 1 and log[0]["host"].startswith("127.0.0.1:"), log


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


def test_viewer_of_an_s3_model_shows_no_secret(onnxmap, s3, monkeypatch):
    from viewer import Viewer  # tests/view, on the path by tests/conftest.py
    for k, v in {**signed(s3), "AWS_SESSION_TOKEN": SESSION_TOKEN, "HOME": str(HOME)}.items():
        monkeypatch.setenv(k, v)
    with Viewer(onnxmap.path, s3_url("synth.onnx")) as v:
        answers = [v.request("GET", path)[1] for path in
                   ("/", "/api/summary", "/api/tensors", "/api/warnings", "/api/graph")]
    OUTPUTS.extend(answers)
    assert b"s3://models/synth.onnx" in answers[1]

