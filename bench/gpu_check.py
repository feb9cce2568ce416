"""Correctness of load_to_device on a device (tools/gpu_check.sh): every tensor's device bytes
equal the file's, for each path, mode, a shard and a cancelled load.

    python3 bench/gpu_check.py --module build-release/bench/libonnxmap_gpu_check.so \\
        --device cuda:0 MODEL.onnx ...

Needs only torch (no onnxmap package: the library comes as a C module through ctypes, so the
Python of the GPU machine need not be the one it was built with). torch allocates each
destination (flat uint8 tensors) on the device and copies it back; the expected bytes are those
onnxmap's plain loader reads into host memory. --device host runs the same checks into host
memory, on any machine. Prints one JSON line per load and exits non-zero on any mismatch."""
import argparse
import ctypes
import json
import sys

import torch

CASES = [  # (mode, path): every way bytes can travel
    ("direct", "automatic"), ("direct", "pinned"), ("read", "pinned"), ("map", "automatic"),
    ("map", "registered"), ("read", "registered"),
]
CHUNK = 64 << 20  # the loader's chunk: max_in_flight_bytes / threads, by default


def bind(module):
    lib = ctypes.CDLL(module)
    lib.ogc_open.restype = ctypes.c_void_p
    lib.ogc_open.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_char_p,
                             ctypes.c_size_t]
    lib.ogc_close.argtypes = [ctypes.c_void_p]
    lib.ogc_count.restype = ctypes.c_size_t
    lib.ogc_count.argtypes = [ctypes.c_void_p]
    lib.ogc_bytes.restype = ctypes.c_uint64
    lib.ogc_bytes.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.ogc_name.restype = ctypes.c_char_p
    lib.ogc_name.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.ogc_load.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                             ctypes.c_uint, ctypes.c_uint64, ctypes.POINTER(ctypes.c_void_p),
                             ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t]
    lib.ogc_expected.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                 ctypes.c_char_p, ctypes.c_size_t]
    return lib


class Plan:
    """A model's plan (a rank's rows with ranks > 1) in the C module."""

    def __init__(self, lib, model, rank=0, ranks=1):
        self.lib = lib
        err = ctypes.create_string_buffer(4096)
        self.handle = lib.ogc_open(model.encode(), rank, ranks, err, len(err))
        if not self.handle:
            raise RuntimeError(err.value.decode())
        count = lib.ogc_count(self.handle)
        self.names = [lib.ogc_name(self.handle, i).decode() for i in range(count)]
        self.sizes = [lib.ogc_bytes(self.handle, i) for i in range(count)]

    def buffers(self, device):
        return [torch.empty(n, dtype=torch.uint8, device=device) for n in self.sizes]

    @staticmethod
    def pointers(tensors):
        return (ctypes.c_void_p * len(tensors))(*[t.data_ptr() if t.numel() else None
                                                   for t in tensors])

    def expected(self):
        host = self.buffers("cpu")
        out = ctypes.create_string_buffer(4096)
        if self.lib.ogc_expected(self.handle, self.pointers(host), out, len(out)) != 0:
            raise RuntimeError(out.value.decode())
        return host

    def load(self, device, mode, path, threads=4, cancel_after=0, into=None, max_in_flight=0):
        """(tensors, stats) or (None, the error's text). `into`: destinations to reuse;
        max_in_flight 0: the loader's default."""
        engine = "host" if device == "cpu" else device
        tensors = self.buffers(device) if into is None else into
        if device != "cpu":
            torch.cuda.synchronize(device)
        out = ctypes.create_string_buffer(1 << 16)
        rc = self.lib.ogc_load(self.handle, engine.encode(), mode.encode(), path.encode(),
                               threads, max_in_flight, self.pointers(tensors), cancel_after, out,
                               len(out))
        if rc != 0:
            return None, out.value.decode()
        return tensors, json.loads(out.value.decode())

    def close(self):
        self.lib.ogc_close(self.handle)


def compare(plan, tensors, expected):
    """Names of the tensors whose bytes differ from the expected ones."""
    return [name for name, got, want in zip(plan.names, tensors, expected)
            if not torch.equal(got.cpu(), want)]


def check_model(lib, model, device, report):
    failures = 0
    for rank, ranks in [(0, 1), (1, 2)]:
        plan = Plan(lib, model, rank, ranks)
        expected = plan.expected()
        for mode, path in CASES if ranks == 1 else CASES[:2]:
            tensors, stats = plan.load(device, mode, path)
            wrong = ["(load failed)"] if tensors is None else compare(plan, tensors, expected)
            failures += bool(wrong)
            report({"model": model, "shard": f"{rank}/{ranks}", "mode": mode, "path": path,
                    "ok": not wrong, "wrong": wrong[:5], "stats": stats})
        if ranks == 1 and sum(plan.sizes) > 2 * CHUNK:
            # cancelled once half the bytes are there (models of several of the loader's
            # chunks: a small one is done before it is asked): an error naming the cancel,
            # then a complete load again (nothing left pinned or registered in the way)
            tensors, text = plan.load(device, "direct", "automatic", threads=4,
                                      cancel_after=max(1, sum(plan.sizes) // 2))
            cancelled = tensors is None and text.startswith("cancelled")
            tensors, stats = plan.load(device, "direct", "automatic")
            ok = cancelled and tensors is not None and not compare(plan, tensors, expected)
            failures += not ok
            report({"model": model, "case": "cancelled, then again", "ok": ok,
                    "error": text if isinstance(text, str) else None})
        plan.close()
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", required=True, help="libonnxmap_gpu_check.so")
    parser.add_argument("--device", default="cuda:0", help="cuda:N, or cpu (the host engine)")
    parser.add_argument("models", nargs="+")
    args = parser.parse_args()
    device = "cpu" if args.device == "host" else args.device
    lib = bind(args.module)
    failures = sum(check_model(lib, m, device, lambda r: print(json.dumps(r), flush=True))
                   for m in args.models)
    print(json.dumps({"failures": failures}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
