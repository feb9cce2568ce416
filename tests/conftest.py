r"""Shared by the pytest files under tests/ (each one a meson test of tests/meson.build, with its
own JUnit report that tools/test_summary.py counts case by case).

What they get here:
  - `onnxmap`: the command under test (ONNXMAP_EXE), callable: onnxmap("ls", path) runs it;
  - `corpus`: the onnx backend corpus (ONNXMAP_CORPUS, else ../shared/corpus/onnx-backend beside
    the checkout); a case that needs it is skipped, with the reason, where it is absent;
  - `corpus_model` (every .onnx of the corpus) and `corpus_file` (every .onnx and .pb): a test
    taking one is run once per file, marked `corpus`; sanitized builds take every Nth file
    (ONNXMAP_CORPUS_SAMPLE=N, tests/conformance/corpus_sample.py);
  - `fixture_dir`: the models of tests/conformance/make_fixtures.py, written once per process;
    `fixture_model` (every fixture .onnx) and `fixture_file` (and the .pb tensors) parametrize;
  - the helper modules beside the tests (corpus_sample, make_fixtures, numpy_stats,
    golden_model, viewer) import by name.

Run by hand from a build folder's parent, for example:

    ONNXMAP_EXE=build/tools/onnxmap/onnxmap python3 -m pytest -p no:cacheprovider \
        tests/cli/cli_test.py
"""
import os
import pathlib
import subprocess
import sys

import pytest

TESTS = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(TESTS / folder) for folder in ("conformance", "cli", "view")]

import corpus_sample  # noqa: E402  (tests/conformance, on the path just above)
import make_fixtures  # noqa: E402

CORPUS = pathlib.Path(os.environ.get("ONNXMAP_CORPUS")
                      or TESTS.parent.parent / "shared" / "corpus" / "onnx-backend")
CORPUS_PATTERNS = {"corpus_model": ("*.onnx",), "corpus_file": ("*.onnx", "*.pb")}
# What make_fixtures.write_models writes; `fixture_dir` fails every case using it when the two
# disagree, so a new fixture cannot go untested.
FIXTURE_MODELS = ("all_dtypes.onnx", "external_one_file.onnx", "features.onnx",
                  "per_tensor/external_per_tensor.onnx")
FIXTURE_TENSORS = tuple(f"tensor_{kind}_{dtype}.pb" for dtype in ("float", "int8", "uint8")
                        for kind in ("raw", "typed"))
FIXTURE_PARAMS = {"fixture_model": FIXTURE_MODELS,
                  "fixture_file": FIXTURE_MODELS + tuple(sorted(FIXTURE_TENSORS))}


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="text_output_test.py: rewrite tests/cli/golden/ instead of comparing")


def pytest_configure(config):
    config.addinivalue_line("markers", "corpus: a case over the onnx backend corpus (skipped, "
                            "with the reason, where the corpus is absent)")
    config.addinivalue_line("markers", "slow: a case over a model of hundreds of thousands of "
                            "nodes or past 2 GB (deselect with -m 'not slow' for a quick run; "
                            "the sanitized builds do)")


def pytest_report_header(config):
    lines = [f"onnxmap: {os.environ.get('ONNXMAP_EXE') or '(ONNXMAP_EXE not set)'}"]
    if CORPUS.is_dir():
        step = corpus_sample.step()
        lines.append(f"corpus: {CORPUS}" + (f", every {step}th file (ONNXMAP_CORPUS_SAMPLE)"
                                            if step > 1 else ""))
    else:
        lines.append(f"corpus: {CORPUS} absent: its cases are skipped")
    return lines


def corpus_params(patterns):
    """One parameter per corpus file matching `patterns` (sampled), each marked `corpus`; one
    that skips when the corpus is absent."""
    if not CORPUS.is_dir():
        return [pytest.param(None, id="no-corpus", marks=pytest.mark.corpus)]
    files = sorted({p for pattern in patterns for p in CORPUS.rglob(pattern)})
    return [pytest.param(p.relative_to(CORPUS), id=str(p.relative_to(CORPUS)),
                         marks=pytest.mark.corpus) for p in corpus_sample.sample(files)]


def pytest_generate_tests(metafunc):
    for name, patterns in CORPUS_PATTERNS.items():
        if name in metafunc.fixturenames:
            metafunc.parametrize(name, corpus_params(patterns), indirect=True)
    for name, files in FIXTURE_PARAMS.items():
        if name in metafunc.fixturenames:
            metafunc.parametrize(name, files, indirect=True)


class Command:
    """The onnxmap command: str() and os.fspath() give its path; calling it runs it with the
    arguments (each passed through str) and returns the CompletedProcess, output captured."""

    def __init__(self, path):
        self.path = path

    def __str__(self):
        return self.path

    def __fspath__(self):
        return self.path

    def __call__(self, *args, text=False, **kwargs):
        return subprocess.run([self.path, *map(str, args)], capture_output=True, text=text,
                              **kwargs)


@pytest.fixture(scope="session")
def onnxmap():
    path = os.environ.get("ONNXMAP_EXE")
    if not path:
        pytest.fail("ONNXMAP_EXE is not set: it names the onnxmap command under test "
                    "(tests/meson.build sets it)", pytrace=False)
    if not os.access(path, os.X_OK):
        pytest.fail(f"ONNXMAP_EXE={path} is not an executable file", pytrace=False)
    return Command(os.path.abspath(path))


@pytest.fixture(scope="session")
def corpus():
    """The corpus folder; skips the case where it is absent."""
    if not CORPUS.is_dir():
        pytest.skip(f"corpus {CORPUS} not found (it lives in ../shared beside the checkout, "
                    "absent from a user's clone; -Dcorpus_dir or ONNXMAP_CORPUS names another)")
    return CORPUS


@pytest.fixture
def corpus_model(request, corpus):
    return corpus / request.param


@pytest.fixture
def corpus_file(request, corpus):
    return corpus / request.param


@pytest.fixture(scope="session")
def fixture_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fixtures")
    make_fixtures.write_models(folder)
    written = {str(p.relative_to(folder)) for p in folder.rglob("*")
               if p.suffix in (".onnx", ".pb")}
    listed = set(FIXTURE_MODELS + FIXTURE_TENSORS)
    if written != listed:
        pytest.fail(f"make_fixtures.py writes {sorted(written - listed)} that tests/conftest.py "
                    f"does not list, and not {sorted(listed - written)} that it lists",
                    pytrace=False)
    return folder


@pytest.fixture
def fixture_model(request, fixture_dir):
    return fixture_dir / request.param


@pytest.fixture
def fixture_file(request, fixture_dir):
    return fixture_dir / request.param


# A run whose every case was skipped (a corpus-only selection without the corpus, the browser
# test without Chromium) exits 77, so that meson reports the test as skipped, not passed.
_outcomes = {"passed": 0, "skipped": 0}


def pytest_runtest_logreport(report):
    if report.skipped:
        _outcomes["skipped"] += 1
    elif report.passed and report.when == "call":
        _outcomes["passed"] += 1


def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput"):  # a pytest-xdist worker: the controller decides
        return
    if exitstatus == 0 and _outcomes["skipped"] and not _outcomes["passed"]:
        session.exitstatus = 77
