#!/usr/bin/python3
"""Models over HTTP: requests, bytes and wall time of onnxmap against tests/remote/range_server.py
on loopback, with and without added latency per request. Prints Markdown tables: the first over
http://, the second (--far) `info` of both layouts with 25 ms added to every answer (a far
region), over http:// and over s3:// (the server as an S3-compatible endpoint, requests signed;
range_server.py does not check signatures: tests/remote/cloud_test.py does that).

    remote_bench.py PATH/TO/onnxmap [RUNS] [--far]

Models (made with `onnxmap synth` in a temporary folder, removed at the end): llm-320g (Llama-70B
shapes, float32, one 282 GB sparse file), llm-7b-ext (Llama-7B shapes, float16, sparse external
data), llm-2g-ext (1.9 GB of float16 weights in sparse external data: the --far table's other
layout), typed-int64 (--far: 120 tensors of 32768 int64 in int64_data, 40 MB) and read-270m (270 MB of real bytes inline, for read-all throughput).
"""
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
ONNXMAP = ARGS[0]
RUNS = int(ARGS[1]) if len(ARGS) > 1 else 3
FAR = "--far" in sys.argv
# What s3:// requests are signed with in --far (range_server.py takes any signature).
S3_ENV = {"AWS_ACCESS_KEY_ID": "AKIDBENCH", "AWS_SECRET_ACCESS_KEY": "bench-secret",
          "AWS_REGION": "us-east-1"}
SERVER = pathlib.Path(__file__).resolve().parent.parent / "tests" / "remote" / "range_server.py"


def onnxmap(*args, env=None):
    r = subprocess.run([ONNXMAP, *map(str, args)], capture_output=True,
                       env=None if env is None else {**os.environ, **env})
    if r.returncode != 0:
        raise RuntimeError(r.stderr.decode())
    return r.stdout


class Server:
    def __init__(self, root, latency_ms):
        self.log = pathlib.Path(tempfile.mkstemp(suffix=".log")[1])
        self.process = subprocess.Popen(
            ["/usr/bin/python3", str(SERVER), "--root", str(root), "--log", str(self.log),
             "--latency-ms", str(latency_ms)], stdout=subprocess.PIPE)
        self.port = int(self.process.stdout.readline())

    def url(self, name):
        return "http://127.0.0.1:%d/ok/%s" % (self.port, name)

    def measure(self, *args, env=None):
        """Median wall ms over RUNS, and the requests and bytes of the last run."""
        times, requests, sent = self.runs(*args, env=env)
        return statistics.median(times), requests, sent

    def runs(self, *args, env=None):
        """Every run's wall ms, and the requests and bytes of the last run."""
        times = []
        for _ in range(RUNS):
            self.log.write_text("")
            start = time.perf_counter()
            onnxmap(*args, env=env)
            times.append((time.perf_counter() - start) * 1000)
        time.sleep(0.1)
        entries = [json.loads(line) for line in self.log.read_text().splitlines()]
        return times, len(entries), sum(e["sent"] for e in entries)

    def stop(self):
        self.process.kill()
        self.process.wait()
        self.log.unlink()


def local_ms(*args):
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        onnxmap(*args)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def row(*cells):
    print("| " + " | ".join(str(c) for c in cells) + " |")


def mb(n):
    return "%.2f" % (n / 1e6)


def typed_model(path, tensors=120, elements=32768):
    """Tensors in typed varint fields (int64_data, as onnx.helper.make_tensor writes them
    without raw=True), which the metadata fetch reads: payload-free fields off the chain."""
    import numpy as np
    from onnx import TensorProto, helper
    rng = np.random.default_rng(7)
    initializers = []
    for i in range(tensors):
        t = TensorProto(name="t%d" % i, data_type=TensorProto.INT64, dims=[elements])
        t.int64_data.extend(rng.integers(0, 1 << 40, elements).tolist())
        initializers.append(t)
    graph = helper.make_graph([], "typed", [], [], initializer=initializers)
    import onnx
    onnx.save(helper.make_model(graph), str(path))


def far_table(folder):
    """info of the single file, of the external-data layout and of typed int64 tensors, 25 ms
    added to every answer."""
    onnxmap("synth", folder / "llm-2g-ext.onnx", "--layers", 16, "--hidden", 2048, "--ffn", 6656,
            "--vocab", 32000, "--external-data", "--sparse")
    typed_model(folder / "typed-int64.onnx")
    print("Machine: %s, %d cores (shared with other jobs). 25 ms added to every answer. Medians "
          "of %d runs; requests and bytes are the server's log of one run.\n"
          % (os.uname().machine, os.cpu_count(), RUNS))
    row("info of", "scheme", "requests", "bytes sent", "wall ms", "runs (ms)")
    row(*["---"] * 6)
    server = Server(folder, 25)
    s3 = dict(S3_ENV, AWS_ENDPOINT_URL="http://127.0.0.1:%d" % server.port)
    try:
        for name in ("llm-2g-ext.onnx", "typed-int64.onnx", "llm-320g.onnx"):
            for scheme, url, env in (("http", server.url(name), None),
                                     ("s3", "s3://ok/" + name, s3)):
                times, n, sent = server.runs("info", url, env=env)
                row(name, scheme, n, mb(sent) + " MB", "%.0f" % statistics.median(times),
                    " ".join("%.0f" % t for t in times))
            cache = folder / "cache"
            onnxmap("info", "s3://ok/" + name, "--cache", cache, env=s3)
            times, n, sent = server.runs("info", "s3://ok/" + name, "--cache", cache, env=s3)
            row(name + ", cached", "s3", n, mb(sent) + " MB", "%.0f" % statistics.median(times),
                " ".join("%.0f" % t for t in times))
            shutil.rmtree(cache)
    finally:
        server.stop()


def main():
    folder = pathlib.Path(tempfile.mkdtemp())
    if FAR:
        try:
            onnxmap("synth", folder / "llm-320g.onnx", "--layers", 80, "--hidden", 8192, "--ffn",
                    28672, "--vocab", 128256, "--dtype", "float32", "--sparse")
            far_table(folder)
        finally:
            shutil.rmtree(folder)
        return
    try:
        onnxmap("synth", folder / "llm-320g.onnx", "--layers", 80, "--hidden", 8192, "--ffn",
                28672, "--vocab", 128256, "--dtype", "float32", "--sparse")
        onnxmap("synth", folder / "llm-7b-ext.onnx", "--layers", 32, "--hidden", 4096, "--ffn",
                11008, "--vocab", 32000, "--kv-dim", 4096, "--external-data", "--sparse")
        onnxmap("synth", folder / "read-270m.onnx", "--layers", 2, "--hidden", 2048, "--ffn",
                5632, "--vocab", 8000)
        tensors = len(json.loads(onnxmap("ls", folder / "llm-320g.onnx", "--json")))
        print("Machine: %s, %d cores (shared with other jobs). Medians of %d runs; requests and "
              "bytes are the server's log of one run.\n" % (os.uname().machine, os.cpu_count(),
                                                           RUNS))
        row("what", "added latency", "requests", "target", "bytes sent", "target", "wall ms",
            "local ms")
        row(*["---"] * 8)
        for latency in (0, 5):
            server = Server(folder, latency)
            try:
                ms, n, sent = server.measure("info", server.url("llm-320g.onnx"))
                row("info llm-320g (282 GB, %d tensors)" % tensors, "%d ms" % latency, n,
                    "<= %d" % int(1.1 * tensors + 10), mb(sent) + " MB", "<= 8 MB", "%.0f" % ms,
                    "%.1f" % local_ms("info", folder / "llm-320g.onnx"))
                ms, n, sent = server.measure("info", server.url("llm-7b-ext.onnx"))
                row("info llm-7b-ext (external data)", "%d ms" % latency, n, "<= 3",
                    mb(sent) + " MB", "-", "%.0f" % ms,
                    "%.1f" % local_ms("info", folder / "llm-7b-ext.onnx"))
                _, _, info_sent = server.measure("ls", server.url("llm-7b-ext.onnx"))
                name = "model.layers.16.mlp.up_proj.weight"
                size = 4096 * 11008 * 2
                ms, n, sent = server.measure("get", server.url("llm-7b-ext.onnx"), name, "--raw",
                                             folder / "out.raw")
                row("get %s (%s MB)" % (name, mb(size)), "%d ms" % latency, n, "-",
                    mb(sent) + " MB", "<= %s MB" % mb(size + info_sent), "%.0f" % ms,
                    "%.1f" % local_ms("get", folder / "llm-7b-ext.onnx", name, "--raw",
                                      folder / "out.raw"))
                (folder / "out.raw").unlink()
                cache = folder / "cache"
                onnxmap("info", server.url("llm-320g.onnx"), "--cache", cache)
                ms, n, sent = server.measure("info", server.url("llm-320g.onnx"), "--cache", cache)
                row("info llm-320g, cached", "%d ms" % latency, n, "<= 1", mb(sent) + " MB", "-",
                    "%.0f" % ms, "-")
                shutil.rmtree(cache)
                size = (folder / "read-270m.onnx").stat().st_size
                ms, n, sent = server.measure("load", server.url("read-270m.onnx"))
                local = local_ms("load", folder / "read-270m.onnx")
                row("read every tensor (load, %s MB): %.2f GB/s, local %.2f GB/s"
                    % (mb(size), size / ms / 1e6, size / local / 1e6), "%d ms" % latency, n, "-",
                    mb(sent) + " MB", "-", "%.0f" % ms, "%.0f" % local)
            finally:
                server.stop()
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
