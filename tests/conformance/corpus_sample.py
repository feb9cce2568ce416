"""Which corpus files a sweep of command runs takes: every one, or every Nth with
ONNXMAP_CORPUS_SAMPLE=N, which the sanitizer builds set (tests/meson.build): there each process
starts about 20 times slower, the plain build already sweeps every file, and tools/fuzz.sh runs
every one through the sanitized fuzz targets as seeds (cut at 64 KiB). Fixtures are never
sampled, nor the Python package's suite, which reads the corpus in one process. tests/conftest.py
names the step in pytest's header."""
import os


def step():
    """N of ONNXMAP_CORPUS_SAMPLE, 1 when it is unset."""
    return max(int(os.environ.get("ONNXMAP_CORPUS_SAMPLE") or 1), 1)


def sample(paths):
    """`paths` (sorted), or every Nth of them."""
    return list(paths)[::step()]
