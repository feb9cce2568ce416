#!/usr/bin/python3
"""Two onnxmap builds compared on remote_bench.py's models over a perfect server
(tests/remote/range_server.py on loopback), run by run: each of N rounds runs both commands,
alternating which goes first, so that a machine shared with other jobs slows both alike. Prints
the median wall ms and the median CPU ms (user + system) of each, and after/before.

    remote_paired.py BEFORE/onnxmap AFTER/onnxmap [N] [--latency-ms MS]
"""
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
BEFORE, AFTER = ARGS[0], ARGS[1]
N = int(ARGS[2]) if len(ARGS) > 2 else 21
LATENCY = float(sys.argv[sys.argv.index("--latency-ms") + 1]) if "--latency-ms" in sys.argv else 0
sys.argv = [sys.argv[0], AFTER]  # remote_bench reads its command from there
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import remote_bench  # noqa: E402


def timed(exe, args):
    """(wall ms, CPU ms) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    r = subprocess.run([exe, *map(str, args)], capture_output=True)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.decode())
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def main():
    folder = pathlib.Path(tempfile.mkdtemp())
    try:
        remote_bench.onnxmap("synth", folder / "llm-320g.onnx", "--layers", 80, "--hidden", 8192,
                             "--ffn", 28672, "--vocab", 128256, "--dtype", "float32", "--sparse")
        remote_bench.onnxmap("synth", folder / "llm-7b-ext.onnx", "--layers", 32, "--hidden",
                             4096, "--ffn", 11008, "--vocab", 32000, "--kv-dim", 4096,
                             "--external-data", "--sparse")
        remote_bench.onnxmap("synth", folder / "read-270m.onnx", "--layers", 2, "--hidden", 2048,
                             "--ffn", 5632, "--vocab", 8000)
        server = remote_bench.Server(folder, LATENCY)
        rows = [("info llm-320g (724 requests in sequence)", ["info", server.url("llm-320g.onnx")]),
                ("info llm-7b-ext", ["info", server.url("llm-7b-ext.onnx")]),
                ("get a 90 MB tensor", ["get", server.url("llm-7b-ext.onnx"),
                                        "model.layers.16.mlp.up_proj.weight", "--raw",
                                        folder / "out.raw"]),
                ("load read-270m (270 MB)", ["load", server.url("read-270m.onnx")])]
        print("%d rounds, %g ms added to every answer.\n" % (N, LATENCY))
        print("| what | wall ms before | after | after/before | CPU ms before | after | "
              "after/before |")
        print("|---|---|---|---|---|---|---|")
        try:
            for name, args in rows:
                runs = {BEFORE: [], AFTER: []}
                for i in range(N):
                    for exe in (BEFORE, AFTER) if i % 2 == 0 else (AFTER, BEFORE):
                        runs[exe].append(timed(exe, args))
                wall = [statistics.median(w for w, _ in runs[e]) for e in (BEFORE, AFTER)]
                cpu = [statistics.median(c for _, c in runs[e]) for e in (BEFORE, AFTER)]
                print("| %s | %.0f | %.0f | %.3f | %.0f | %.0f | %.3f |"
                      % (name, wall[0], wall[1], wall[1] / wall[0], cpu[0], cpu[1],
                         cpu[1] / cpu[0]), flush=True)
        finally:
            server.stop()
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
