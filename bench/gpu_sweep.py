"""Where the device loader's time goes on a GPU machine: each path at several thread counts and
in-flight budgets, the CPU it spends (user and system), and what registering mapped file pages
costs on 1 and on several threads. For tuning the defaults of load_to_device; gpu_bench.py
measures the defaults against the limits.

    python3 bench/gpu_sweep.py --module build-release/bench/libonnxmap_gpu_check.so \\
        --dir /tmp/w --gib 8 --device cuda:0 --out sweep.md

Writes the same checkpoint as gpu_bench.py (reusing it when it is there). Medians of --repeat
runs; cold runs drop the file from the page cache first (the machine is ours alone)."""
import argparse
import ctypes
import glob
import json
import os
import resource
import subprocess
import statistics
import time

import torch

from gpu_bench import (direct_into_pinned, drop_cache, fill_cache, pinned_copy, run_threads,
                       write_checkpoint, write_markdown)
from gpu_check import Plan, bind


def timed_load(plan, into, device, mode, path, threads, in_flight):
    """GB/s, CPU user s/GB, CPU system s/GB and the stats of one load (this process's CPU
    while it ran: the load's threads and the driver's)."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    tensors, stats = plan.load(device, mode, path, threads=threads, into=into,
                               max_in_flight=in_flight)
    after = resource.getrusage(resource.RUSAGE_SELF)
    if tensors is None:
        raise RuntimeError(stats)
    gb = stats["bytes"] / 1e9
    return (gb / stats["seconds"], (after.ru_utime - before.ru_utime) / gb,
            (after.ru_stime - before.ru_stime) / gb, stats)


def warm_row(plan, into, args, mode, path, threads, in_flight=0):
    """Medians of --repeat loads of the warm file in this process (threads 0: the default)."""
    runs = [timed_load(plan, into, args.device, mode, path, threads, in_flight)
            for _ in range(args.repeat)]
    row = {"mode": mode, "path": path, "threads": runs[-1][3].get("threads", threads),
           "in_flight_mib": (in_flight or 256 << 20) >> 20,
           "gb_per_s": statistics.median(r[0] for r in runs),
           "user_s_per_gb": statistics.median(r[1] for r in runs),
           "sys_s_per_gb": statistics.median(r[2] for r in runs), "taken": runs[-1][3]["path"]}
    print(json.dumps(row), flush=True)
    return row


def concurrent(lib, onnx_path, args, data, ways):
    """Aggregate GB/s of loads of a model's shards run at once, shard k of len(ways) by
    ways[k] = (path, threads): a registering load beside ring loads shows whether the two paths
    add up on the bus. Warm."""
    plans = [Plan(lib, onnx_path, k, len(ways)) for k in range(len(ways))]
    intos = [p.buffers(args.device) for p in plans]
    runs = []
    for _ in range(args.repeat):
        results = [None] * len(ways)

        def one(k):
            results[k] = plans[k].load(args.device, "read", ways[k][0], threads=ways[k][1],
                                       into=intos[k])

        torch.cuda.synchronize(args.device)
        before = resource.getrusage(resource.RUSAGE_SELF)
        seconds = run_threads(one, len(ways))
        after = resource.getrusage(resource.RUSAGE_SELF)
        if any(r[0] is None for r in results):
            raise RuntimeError([r[1] for r in results if r[0] is None])
        gb = sum(r[1]["bytes"] for r in results) / 1e9
        runs.append((gb / seconds, (after.ru_stime - before.ru_stime) / gb,
                     [round(r[1]["bytes"] / 1e9 / r[1]["seconds"], 2) for r in results]))
    for p in plans:
        p.close()
    row = {"concurrent": ways, "gb_per_s": statistics.median(r[0] for r in runs),
           "sys_s_per_gb": statistics.median(r[1] for r in runs), "each_gb_per_s": runs[-1][2]}
    print(json.dumps(row), flush=True)
    return row


def cli_cold(exe, onnx_path, data, device, threads, repeat):
    """`onnxmap load --device` (its defaults: direct mode; `threads` None: the automatic count) in
    a fresh process from a cold page cache: GB/s, the load's CPU seconds per GB, and the whole
    process's user and system CPU seconds per GB (CUDA's start included)."""
    runs = []
    for _ in range(repeat):
        drop_cache(data)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run([exe, "load", onnx_path, "--device",
                              "host" if device == "cpu" else device, "--json"]
                             + ([] if threads is None else ["--threads", str(threads)]),
                             check=True, capture_output=True, text=True).stdout
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        stats = json.loads(out)
        gb = stats["bytes"] / 1e9
        runs.append((stats["gb_per_s"], stats["cpu_seconds"] / gb,
                     (after.ru_utime - before.ru_utime) / gb,
                     (after.ru_stime - before.ru_stime) / gb, stats["path"]))
    row = {"threads": stats["threads"], "gb_per_s": statistics.median(r[0] for r in runs),
           "load_cpu_s_per_gb": statistics.median(r[1] for r in runs),
           "process_user_s_per_gb": statistics.median(r[2] for r in runs),
           "process_sys_s_per_gb": statistics.median(r[3] for r in runs), "path": runs[-1][4]}
    print(json.dumps(row), flush=True)
    return row


def direct_cpu(data, device):
    """CPU seconds per GB (user, system) of gpu_bench's O_DIRECT-into-pinned limit."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    gbps = direct_into_pinned(data, device)
    after = resource.getrusage(resource.RUSAGE_SELF)
    gb = os.path.getsize(data) / 1e9
    row = {"direct_limit_gb_per_s": gbps, "user_s_per_gb": (after.ru_utime - before.ru_utime) / gb,
           "sys_s_per_gb": (after.ru_stime - before.ru_stime) / gb}
    print(json.dumps(row), flush=True)
    return row


def cudart():
    """The CUDA runtime torch loaded, by its usual places; None when not found."""
    here = os.path.dirname(torch.__file__)
    for path in (glob.glob(os.path.join(here, "..", "nvidia", "cu*", "lib", "libcudart.so.1*"))
                 + glob.glob(os.path.join(here, "lib", "libcudart*.so*"))
                 + glob.glob("/usr/local/cuda/lib64/libcudart.so.1*")):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def registration_cost(data, threads, chunk=64 << 20, limit=8 << 30):
    """GB/s of cudaHostRegister(read-only) + cudaHostUnregister of the mapped file, in chunks,
    on `threads` threads; the file's pages warm."""
    rt = cudart()
    if rt is None:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    size = min(os.path.getsize(data), limit) // chunk * chunk
    fd = os.open(data, os.O_RDONLY)
    base = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
    torch.cuda.init()
    chunks = list(range(0, size, chunk))
    failures = []

    def worker(k):
        for at in chunks[k::threads]:
            ptr = ctypes.c_void_p(base + at)
            status = rt.cudaHostRegister(ptr, ctypes.c_size_t(chunk), ctypes.c_uint(8))  # ReadOnly
            if status != 0:
                failures.append(status)
                return
            rt.cudaHostUnregister(ptr)

    seconds = run_threads(worker, threads)
    libc.munmap(ctypes.c_void_p(base), ctypes.c_size_t(size))
    os.close(fd)
    return f"cudaHostRegister failed: {failures[0]}" if failures else size / seconds / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", required=True, help="libonnxmap_gpu_check.so")
    parser.add_argument("--onnxmap", required=True, help="the onnxmap binary: the cold rows")
    parser.add_argument("--dir", required=True)
    parser.add_argument("--gib", type=float, default=8)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    data, onnx_path = (os.path.join(args.dir, n) for n in ("ckpt.safetensors", "ckpt.onnx"))
    if not (os.path.exists(data) and os.path.exists(onnx_path)):
        data, onnx_path, _ = write_checkpoint(args.dir, args.gib)
    bus = pinned_copy(args.device, args.repeat)
    plan = Plan(bind(args.module), onnx_path)
    into = plan.buffers(args.device)
    fill_cache(data)
    warm = [warm_row(plan, into, args, "read", "pinned", 16)]
    warm += [warm_row(plan, into, args, "direct", "automatic", t) for t in (0, 4, 8)]
    warm += [warm_row(plan, into, args, "direct", "automatic", 16, 512 << 20)]
    warm += [warm_row(plan, into, args, "read", "registered", t) for t in (1, 4, 16)]
    warm += [warm_row(plan, into, args, "map", "automatic", 0)]
    plan.close()
    registering = {t: registration_cost(data, t) for t in (1, 4, 16)}
    print(json.dumps({"register_unregister_gb_per_s": registering}), flush=True)
    together = [concurrent(plan.lib, onnx_path, args, data, ways) for ways in (
        [("pinned", 8), ("pinned", 8)], [("registered", 2), ("pinned", 14)],
        [("registered", 4), ("pinned", 12), ("pinned", 12)])]
    cold = [cli_cold(args.onnxmap, onnx_path, data, args.device, t, args.repeat)
            for t in (None, 16)]
    limit = direct_cpu(data, args.device)
    write_sweep(args, bus, warm, registering, together, cold, limit)


def write_sweep(args, bus, warm, registering, together, cold, limit):
    speeds = ", ".join(f"{t} thread{'s' * (t > 1)} {v:.1f}" if isinstance(v, float) else
                       f"{t}: {v}" for t, v in registering.items())
    lines = [f"# Device loader sweep: {torch.cuda.get_device_name(args.device)}", "",
             f"Written by bench/gpu_sweep.py on {time.strftime('%Y-%m-%d')}: {os.cpu_count()} "
             f"cores, torch {torch.__version__}, the checkpoint of bench/gpu_bench.py, medians of "
             f"{args.repeat} runs. The bus (pinned 1 GiB copies) ran at {bus:.1f} GB/s; ratios "
             "are to it. CPU: this process's, per GB.", "",
             "## Warm: the file in the page cache, one process", "",
             "| mode | path asked | threads | in flight MiB | GB/s | of the bus | user s/GB "
             "| system s/GB | path taken |", "|---|---|---|---|---|---|---|---|---|"]
    for r in warm:
        lines.append(f"| {r['mode']} | {r['path']} | {r['threads']} | {r['in_flight_mib']} | "
                     f"{r['gb_per_s']:.2f} | {r['gb_per_s'] / bus:.2f}x | "
                     f"{r['user_s_per_gb']:.3f} | {r['sys_s_per_gb']:.3f} | {r['taken']} |")
    lines += ["", "Registering the mapped file read-only and unregistering it, 64 MiB at a time, "
              f"alone (GB/s): {speeds}.", "",
              "## Warm: loads of a model's shards at once, each by its own way", "",
              "| loads (path, threads) | GB/s together | of the bus | each load's GB/s "
              "| system s/GB |", "|---|---|---|---|---|"]
    for r in together:
        ways = " + ".join(f"{p} {t}" for p, t in r["concurrent"])
        lines.append(f"| {ways} | {r['gb_per_s']:.2f} | {r['gb_per_s'] / bus:.2f}x | "
                     f"{r['each_gb_per_s']} | {r['sys_s_per_gb']:.3f} |")
    lines += ["", "## Cold: `onnxmap load --device` in a fresh process, the file evicted first", "",
              "| threads | GB/s | of the O_DIRECT limit | load's CPU s/GB | process user s/GB "
              "| process system s/GB | path |", "|---|---|---|---|---|---|---|"]
    for r in cold:
        lines.append(f"| {r['threads']} | {r['gb_per_s']:.2f} | "
                     f"{r['gb_per_s'] / limit['direct_limit_gb_per_s']:.2f}x | "
                     f"{r['load_cpu_s_per_gb']:.3f} | {r['process_user_s_per_gb']:.3f} | "
                     f"{r['process_sys_s_per_gb']:.3f} | {r['path']} |")
    lines += ["", f"The O_DIRECT limit (16 MiB reads into pinned buffers, 4 threads, async copies) "
              f"ran at {limit['direct_limit_gb_per_s']:.2f} GB/s, with "
              f"{limit['user_s_per_gb']:.3f} s/GB user and {limit['sys_s_per_gb']:.3f} s/GB "
              "system CPU."]
    write_markdown(args.out, lines)


if __name__ == "__main__":
    main()
