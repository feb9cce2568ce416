"""Every tensor into GPU memory, against the limits of the same run (tools/gpu_check.sh runs it):

    python3 bench/gpu_bench.py --onnxmap build-release/tools/onnxmap/onnxmap --dir /tmp/w \\
        --gib 8 --device cuda:0 --out bench/gpu.md

One bf16 Llama-shaped checkpoint is written once as safetensors and once as an ONNX model whose
initializers are external data pointing into that same file, so both read the same bytes.
Measured, medians of --repeat runs: the bus (pinned host -> device copies of 1 GiB blocks), the
disk into pinned memory (O_DIRECT reads of 16 MiB into 2 pinned buffers per thread, async
copies), `onnxmap load --device` warm and cold (cold: posix_fadvise DONTNEED on the file first;
the machine is ours alone), and safetensors' load_file(device=...) when it is importable.
Writes a markdown table with each figure's ratio to its limit. --device host measures what runs
without a GPU (onnxmap's host engine, safetensors to the cpu), each against `onnxmap load`
into host memory as it was before the device path (the target: the host engine as fast)."""
import argparse
import json
import os
import statistics
import subprocess
import threading
import time

import numpy as np
import torch

# ---- the checkpoint: safetensors written by hand (the format is a JSON header and raw bytes),
# and an ONNX ModelProto encoded by hand (no onnx package needed on the GPU machine)


def varint(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, value):
    """A protobuf field: an int as a varint, bytes/str length-delimited."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    value = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(value)) + value


def onnx_over(tensors, data_file, data_start):
    """A ModelProto whose BFLOAT16 initializers are external data in `data_file`."""
    graph = field(2, "weights")
    for name, shape, begin, end in tensors:
        proto = b"".join(field(1, d) for d in shape) + field(2, 16) + field(8, name)
        for key, value in (("location", data_file), ("offset", str(data_start + begin)),
                           ("length", str(end - begin))):
            proto += field(13, field(1, key) + field(2, value))
        graph += field(5, proto + field(14, 1))
    return field(1, 8) + field(7, graph) + field(8, field(1, "") + field(2, 17))


def llama_shapes(gib):
    """(name, shape) of a bf16 Llama-shaped checkpoint of about `gib` GiB (hidden 4096; 1024
    under 4 GiB, for dry runs)."""
    hidden, ffn, kv, vocab = (4096, 14336, 1024, 32000) if gib >= 4 else (1024, 3584, 256, 32000)
    per_layer = 2 * (hidden * hidden * 2 + 2 * hidden * kv + 3 * hidden * ffn + 2 * hidden)
    layers = max(1, int((gib * 2**30 - 4 * vocab * hidden) // per_layer))
    shapes = [("model.embed_tokens.weight", [vocab, hidden])]
    for i in range(layers):
        p = f"model.layers.{i}."
        shapes += [(p + "self_attn.q_proj.weight", [hidden, hidden]),
                   (p + "self_attn.k_proj.weight", [kv, hidden]),
                   (p + "self_attn.v_proj.weight", [kv, hidden]),
                   (p + "self_attn.o_proj.weight", [hidden, hidden]),
                   (p + "mlp.gate_proj.weight", [ffn, hidden]),
                   (p + "mlp.up_proj.weight", [ffn, hidden]),
                   (p + "mlp.down_proj.weight", [hidden, ffn]),
                   (p + "input_layernorm.weight", [hidden]),
                   (p + "post_attention_layernorm.weight", [hidden])]
    return shapes + [("model.norm.weight", [hidden]), ("lm_head.weight", [vocab, hidden])]


def write_checkpoint(folder, gib):
    st_path = os.path.join(folder, "ckpt.safetensors")
    onnx_path = os.path.join(folder, "ckpt.onnx")
    tensors, at, header = [], 0, {}
    for name, shape in llama_shapes(gib):
        size = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [at, at + size]}
        tensors.append((name, shape, at, at + size))
        at += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    block = np.random.default_rng(44).integers(0, 256, 64 << 20, dtype=np.uint8).tobytes()
    with open(st_path, "wb") as out:
        out.write(len(text).to_bytes(8, "little") + text)
        left = at
        while left:
            left -= out.write(block[:min(left, len(block))])
    with open(onnx_path, "wb") as out:
        out.write(onnx_over(tensors, "ckpt.safetensors", 8 + len(text)))
    return st_path, onnx_path, at


# ---- measurements


def drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def fill_cache(path, block=64 << 20):
    """Reads the file through the page cache, so that the warm rows find it there (a direct
    load, `onnxmap load --device`'s default, leaves the page cache as it was)."""
    with open(path, "rb", buffering=0) as f:
        while f.read(block):
            pass


def pinned_copy(device, repeat):
    """GB/s of a pinned 1 GiB block copied to the device (the bus)."""
    src = torch.empty(1 << 30, dtype=torch.uint8, pin_memory=True)
    dst = torch.empty(1 << 30, dtype=torch.uint8, device=device)
    times = []
    for _ in range(repeat + 1):
        torch.cuda.synchronize(device)
        start = time.perf_counter()
        dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return (1 << 30) / statistics.median(times[1:]) / 1e9


def run_threads(worker, count):
    """Seconds for worker(0) ... worker(count - 1), each on its own thread, to all return."""
    start = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(k,)) for k in range(count)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return time.perf_counter() - start


def direct_into_pinned(path, device, threads=4, block=16 << 20):
    """GB/s of O_DIRECT reads of the whole file into pinned buffers, copied to the device."""
    size = os.path.getsize(path) // block * block
    dst = torch.empty(size, dtype=torch.uint8, device=device)
    drop_cache(path)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    blocks = list(range(0, size, block))

    def worker(k):
        stream = torch.cuda.Stream(device)
        bufs = [torch.empty(block, dtype=torch.uint8, pin_memory=True) for _ in range(2)]
        events = [None, None]
        for n, at in enumerate(blocks[k::threads]):
            i = n % 2
            if events[i] is not None:
                events[i].synchronize()
            os.preadv(fd, [memoryview(bufs[i].numpy())], at)
            with torch.cuda.stream(stream):
                dst[at:at + block].copy_(bufs[i], non_blocking=True)
                events[i] = torch.cuda.Event()
                events[i].record(stream)
        stream.synchronize()

    seconds = run_threads(worker, threads)
    os.close(fd)
    return size / seconds / 1e9


def onnxmap_load(exe, onnx_path, data_path, device, cold):
    """`onnxmap load` (into `device`; None: the plain loader into host memory) as --json says."""
    if cold:
        drop_cache(data_path)
    out = subprocess.run([exe, "load", onnx_path, "--json"]
                         + ([] if device is None else ["--device", device]), check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def plain_load(exe, onnx_path, data_path, cold, repeat):
    """GB/s of the plain loader into host memory: the anchor of the host engine's figures."""
    onnxmap_load(exe, onnx_path, data_path, None, False)
    return median_of([onnxmap_load(exe, onnx_path, data_path, None, cold)["gb_per_s"]
                      for _ in range(repeat)])


def safetensors_load(path, device, cold):
    from safetensors.torch import load_file
    if cold:
        drop_cache(path)
    start = time.perf_counter()
    tensors = load_file(path, device=device)
    if device != "cpu":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    nbytes = sum(t.numel() * t.element_size() for t in tensors.values())
    del tensors
    return nbytes / seconds / 1e9


def median_of(runs):
    return statistics.median(runs) if runs else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnxmap", required=True, help="the onnxmap binary")
    parser.add_argument("--dir", required=True, help="a folder for the checkpoint")
    parser.add_argument("--gib", type=float, default=8)
    parser.add_argument("--device", default="cuda:0", help="cuda:N, or host (a dry run)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", required=True, help="the markdown file to write")
    args = parser.parse_args()
    gpu = args.device != "host"
    torch_device = args.device if gpu else "cpu"
    st_path, onnx_path, nbytes = write_checkpoint(args.dir, args.gib)
    rows = []  # (what, warm GB/s, cold GB/s, CPU s per GB, note)
    limits = {"warm": None, "cold": None}
    if gpu:
        limits["warm"] = pinned_copy(args.device, args.repeat)
        limits["cold"] = median_of([direct_into_pinned(st_path, args.device)
                                    for _ in range(args.repeat)])
        rows.append(("pinned host -> device copy, 1 GiB blocks (the bus)", limits["warm"], None,
                     None, "limit, warm"))
        rows.append(("O_DIRECT 16 MiB reads into pinned buffers, 4 threads, async copies", None,
                     limits["cold"], None, "limit, cold"))
    else:
        limits["warm"] = plain_load(args.onnxmap, onnx_path, st_path, False, args.repeat)
        limits["cold"] = plain_load(args.onnxmap, onnx_path, st_path, True, args.repeat)
        rows.append(("onnxmap load into host memory (no device: the anchor)", limits["warm"],
                     limits["cold"], None, "anchor"))
    for cold in (False, True):
        fill_cache(st_path)
        onnxmap_load(args.onnxmap, onnx_path, st_path, args.device, False)  # checks
        runs = [onnxmap_load(args.onnxmap, onnx_path, st_path, args.device, cold)
                for _ in range(args.repeat)]
        gbps = median_of([r["gb_per_s"] for r in runs])
        cpu = median_of([r["cpu_seconds"] / (r["bytes"] / 1e9) for r in runs])
        paths = sorted({r["path"] for r in runs})
        rows.append((f"onnxmap load --device {args.device} ({'cold' if cold else 'warm'})",
                     None if cold else gbps, gbps if cold else None, cpu,
                     "path " + ", ".join(paths)))
    try:
        import safetensors  # noqa: F401
        for cold in (False, True):
            fill_cache(st_path)
            safetensors_load(st_path, torch_device, False)
            gbps = median_of([safetensors_load(st_path, torch_device, cold)
                              for _ in range(args.repeat)])
            rows.append((f"safetensors load_file(device={torch_device!r}) "
                         f"({'cold' if cold else 'warm'})", None if cold else gbps,
                         gbps if cold else None, None, ""))
    except ImportError:
        rows.append(("safetensors", None, None, None, "not importable: not measured"))
    write_table(args, nbytes, rows, limits, gpu)


def cell(value, limit=None):
    if value is None:
        return "-"
    text = f"{value:.2f}"
    return text + (f" ({value / limit:.2f}x)" if limit else "")


def write_table(args, nbytes, rows, limits, gpu):
    name = torch.cuda.get_device_name(args.device) if gpu else "none (host engine: a dry run)"
    lines = [f"# Weights into device memory: {args.device}", "",
             f"Written by bench/gpu_bench.py (tools/gpu_check.sh) on "
             f"{time.strftime('%Y-%m-%d')}: device {name}, {os.cpu_count()} cores, torch "
             f"{torch.__version__}; a {nbytes / 1e9:.2f} GB bf16 checkpoint, medians of "
             f"{args.repeat} runs. GB/s, and in parentheses the ratio to the limit of this run "
             + ("(warm: the pinned copy; cold: O_DIRECT into pinned memory)." if gpu else
                "(here: `onnxmap load` into host memory, warm and cold)."), "",
             "| path | warm GB/s | cold GB/s | CPU s/GB | note |", "|---|---|---|---|---|"]
    for what, warm, cold, cpu, note in rows:
        lines.append(f"| {what} | {cell(warm, limits['warm'])} | {cell(cold, limits['cold'])} | "
                     f"{'-' if cpu is None else f'{cpu:.3f}'} | {note} |")
    if not gpu:
        lines += ["", "No GPU: these are host-memory figures, not GPU ones; the ratios say how the "
                  "device pipeline with the host engine compares with the plain loader."]
    write_markdown(args.out, lines)


def write_markdown(path, lines):
    """The table's lines into `path`, and on standard output."""
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
