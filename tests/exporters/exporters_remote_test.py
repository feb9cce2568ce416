"""The exporters' corpus (make_corpus.py) read remotely and loaded onto the host engine: each
model served by range_server.py on loopback (tests/remote/), by http:// and as a Hugging Face
Hub repository (hf://, HF_ENDPOINT at its /hub/), must read as it does from disk: `info --json`
(less what the requests came to), `ls --json` and `dump --omit-data` the same; `load` by URL
the same tensors and bytes as from disk (but past 2 GB: 2.2 GB through a Python server is not
worth the suite's minutes, its metadata is judged by URL all the same); and `load --device host`
(the device path through the host engine) every tensor and byte that `load` reads.

By s3:// from the S3 server of tests/remote/s3_test.py (s3rver from npm, requests signed), every
model but the one past 2 GB (2.2 GB put through a JavaScript server): info, ls and load the same
as from disk."""
import json
import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "remote"))
sys.path.insert(0, str(HERE))

import make_corpus  # noqa: E402
from corpus_names import PAST_2GB, params  # noqa: E402
from remote_test import Server  # noqa: E402
from s3_test import BUCKET, S3Server, npm_modules, signed  # noqa: E402

ORG = "exporters"  # the corpus as the Hub's organisation, each model a repository


@pytest.fixture(scope="session")
def corpus():
    folder = make_corpus.corpus_folder()
    make_corpus.make_all(folder)
    return folder


@pytest.fixture(scope="module")
def server(corpus, tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    (root / ORG).symlink_to(corpus, target_is_directory=True)
    s = Server(root, tmp_path_factory.mktemp("log") / "requests.log")
    yield s
    s.stop()


def made(corpus, name):
    """`name`; skipped, saying why, where it is Optimum's and not made here."""
    if name in make_corpus.OPTIMUM and not (corpus / name).is_dir():
        pytest.skip(f"{name} is Optimum's, not made here: {make_corpus.WHY_NO_OPTIMUM}")
    return name


@pytest.fixture(params=params(make_corpus.NAMES, pytest.mark.slow))
def name(request, corpus):
    return made(corpus, request.param)


@pytest.fixture(params=[n for n in make_corpus.NAMES if n != PAST_2GB])
def s3_name(request, corpus):
    return made(corpus, request.param)


@pytest.fixture(scope="module")
def s3(corpus, tmp_path_factory):
    """The S3 server with every model but PAST_2GB put into BUCKET as ORG/NAME/FILE."""
    served = tmp_path_factory.mktemp("s3-served")
    for model in corpus.iterdir():
        if model.name != PAST_2GB and (model / "made.json").is_file():
            (served / ORG / model.name).mkdir(parents=True)
            for f in model.iterdir():
                (served / ORG / model.name / f.name).symlink_to(f)
    work = pathlib.Path(os.environ.get("ONNXMAP_S3_WORK") or tmp_path_factory.mktemp("s3work"))
    node, modules = npm_modules(work)
    server = S3Server(node, modules, served, tmp_path_factory.mktemp("s3store"))
    yield server
    server.stop()


def output(onnxmap, *args, env=None):
    r = onnxmap(*args, text=True, env=env)
    assert r.returncode == 0 and not r.stderr, (args, r.returncode, r.stderr[-2000:])
    return r.stdout


def same(verb, local, remote):
    if verb[0] == "info":
        local, remote = json.loads(local), json.loads(remote)
        assert remote.pop("fetch")["retries"] == 0
        local.pop("genai_config", None)  # a local model's neighbour only (docs/cli.md)
    assert remote == local


VERBS = [["info", "--json"], ["ls", "--json"], ["dump", "--omit-data"]]


@pytest.mark.parametrize("verb", VERBS, ids=" ".join)
def test_by_http_as_on_disk(onnxmap, corpus, server, name, verb):
    local = output(onnxmap, verb[0], corpus / name / "model.onnx", *verb[1:])
    url = server.url("ok", f"{ORG}/{name}/model.onnx")
    same(verb, local, output(onnxmap, verb[0], url, *verb[1:]))


@pytest.mark.parametrize("verb", VERBS[:2], ids=" ".join)
def test_from_the_hub_as_on_disk(onnxmap, corpus, server, name, verb):
    local = output(onnxmap, verb[0], corpus / name / "model.onnx", *verb[1:])
    env = {"HF_ENDPOINT": "http://127.0.0.1:%d/hub" % server.port, "HOME": "/nonexistent"}
    same(verb, local, output(onnxmap, verb[0], f"hf://{ORG}/{name}/model.onnx", *verb[1:],
                             env=env))


def counts(text):
    answer = json.loads(text)
    return answer["tensors"], answer["bytes"]


def test_load_by_url_and_onto_the_host_engine(onnxmap, corpus, server, name):
    path = corpus / name / "model.onnx"
    local = counts(output(onnxmap, "load", path, "--json"))
    assert local[0] > 0
    assert counts(output(onnxmap, "load", path, "--json", "--device", "host")) == local
    if sum(p.stat().st_size for p in path.parent.iterdir()) < 2**31:
        url = server.url("ok", f"{ORG}/{name}/model.onnx")
        assert counts(output(onnxmap, "load", url, "--json")) == local


def from_s3(onnxmap, s3, name, *args):
    """onnxmap VERB s3://BUCKET/ORG/NAME/model.onnx ARGS, signed, with no credentials of the
    caller's home."""
    verb, rest = args[0], args[1:]
    url = f"s3://{BUCKET}/{ORG}/{name}/model.onnx"
    return output(onnxmap, verb, url, *rest, env={**signed(s3), "HOME": "/nonexistent"})


@pytest.mark.parametrize("verb", VERBS[:2], ids=" ".join)
def test_from_s3_as_on_disk(onnxmap, corpus, s3, s3_name, verb):
    local = output(onnxmap, verb[0], corpus / s3_name / "model.onnx", *verb[1:])
    same(verb, local, from_s3(onnxmap, s3, s3_name, *verb))


def test_load_from_s3(onnxmap, corpus, s3, s3_name):
    local = counts(output(onnxmap, "load", corpus / s3_name / "model.onnx", "--json"))
    assert counts(from_s3(onnxmap, s3, s3_name, "load", "--json")) == local
