"""Which corpus files a sweep of command runs takes: every one, or every Nth with
ONNXMAP_CORPUS_SAMPLE=N, which the sanitizer builds set (tests/meson.build): there each process
starts about 20 times slower, the plain build already sweeps every file, and tools/fuzz.sh runs
every one through the sanitized fuzz targets as seeds (cut at 64 KiB). Fixtures are never
sampled, nor the pytest suite, which reads the corpus in one process."""
import os


def sample(paths):
    """`paths` (sorted), or every Nth of them; says so on stdout when it samples."""
    step = int(os.environ.get("ONNXMAP_CORPUS_SAMPLE") or 1)
    if step > 1:
        print(f"sample: every {step}th of {len(paths)} corpus files (ONNXMAP_CORPUS_SAMPLE; the "
              "plain build takes them all)")
    return list(paths)[::max(step, 1)]
