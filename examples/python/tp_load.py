#!/usr/bin/python3
"""Tensor-parallel loading with torch.distributed: N processes (gloo backend, loopback), each
opening the same ONNX model and loading only its row shard of every 2-D weight, in one of two
ways:

- without --device: onnxmap.safe_open(...).get_slice(name)[begin:end], as with safetensors;
- with --device cuda: model.load_to_torch(f"cuda:{rank}", rank=rank, ranks=N), each rank's
  shard read and copied straight into its own GPU's memory (--device cpu: the same pipeline
  into host memory, for machines without a GPU).

    tp_load.py MODEL [--world-size N] [--device cpu|cuda] [--json]

Each rank reports the bytes it loaded and how much of the model file it read to load them: with
get_slice the resident part of its mappings of the file (from /proc/self/smaps), with
load_to_torch the bytes the loader read. Rank 0 gathers every shard and checks that they rebuild
the full tensors. With --json the summary is one JSON object on stdout.
"""
import argparse
import json
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import onnxmap


def shard_rows(rows, rank, world_size):
    """Rows [begin, end) of `rank`, as onnxmap's shard plans cut them."""
    return rows * rank // world_size, rows * (rank + 1) // world_size


def resident_bytes_of(path):
    """Bytes of `path` resident in this process's mappings (its pages that this rank touched),
    from /proc/self/smaps."""
    target, total, inside = os.path.realpath(path), 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if fields and "-" in fields[0] and len(fields) >= 5:  # a mapping's header line
                inside = len(fields) >= 6 and os.path.realpath(fields[5]) == target
            elif inside and fields[0] == "Rss:":
                total += int(fields[1]) * 1024
    return total


def load_shards_to(device, path, rank, world_size):
    """This rank's row shard of every 2-D tensor loaded into `device`'s memory by load_to_torch,
    the bytes loaded, and the bytes of the file the loader read."""
    with onnxmap.open(path) as model:
        names = [name for name in model.keys() if len(model[name].shape) == 2]
        stats = {}
        shards = model.load_to_torch(device, names=names, rank=rank, ranks=world_size,
                                     stats=stats)
    return shards, stats["bytes"], stats["bytes_read"]


def load_shards(path, rank, world_size):
    """This rank's row shard of every 2-D tensor, copied into memory the rank owns (as an engine
    copies weights to its device), the bytes loaded, and the bytes of the file mapped in to load
    them (measured before the file is closed, which unmaps it)."""
    shards, loaded = {}, 0
    with onnxmap.safe_open(path, framework="pt") as f:
        for name in f.keys():
            part = f.get_slice(name)
            if len(part.get_shape()) != 2:
                continue
            begin, end = shard_rows(part.get_shape()[0], rank, world_size)
            shards[name] = part[begin:end].clone()
            loaded += shards[name].numel() * shards[name].element_size()
        mapped = resident_bytes_of(path)
    return shards, loaded, mapped


def gather(shard, world_size, rows):
    """Every rank's shard of one tensor, concatenated on every rank (as bytes: gloo moves bytes of
    any dtype, in host memory). Shards are padded to the longest so that all_gather sees equal
    sizes."""
    row_bytes = shard.shape[1] * shard.element_size()
    flat = shard.cpu().contiguous().view(-1).view(torch.uint8)
    padded = torch.zeros(-(-rows // world_size) * row_bytes, dtype=torch.uint8)
    padded[:flat.numel()] = flat
    parts = [torch.empty_like(padded) for _ in range(world_size)]
    dist.all_gather(parts, padded)
    pieces = []
    for r, part in enumerate(parts):
        begin, end = shard_rows(rows, r, world_size)
        pieces.append(part[:(end - begin) * row_bytes])
    return torch.cat(pieces)


def run(rank, world_size, path, work, device):
    # The ranks meet through a file in a private folder: no port to pick, none another program
    # can take first.
    dist.init_process_group("gloo", init_method=f"file://{work}/rendezvous", rank=rank,
                            world_size=world_size)
    if device is None:
        shards, loaded, read = load_shards(path, rank, world_size)
    else:
        target = f"cuda:{rank}" if device == "cuda" else device
        shards, loaded, read = load_shards_to(target, path, rank, world_size)
    stats = [None] * world_size
    dist.all_gather_object(stats, {"rank": rank, "loaded": loaded, "read": read,
                                   "device": str(next(iter(shards.values())).device)})
    equal = True
    with onnxmap.open(path) as model:
        for name, shard in shards.items():
            whole = gather(shard, world_size, model[name].shape[0])
            if rank == 0:
                equal &= whole.numpy().tobytes() == model[name].numpy().tobytes()
        total = sum(model[name].nbytes for name in shards)
    if rank == 0:
        with open(os.path.join(work, "summary.json"), "w") as f:
            json.dump({"world_size": world_size, "tensors": len(shards), "total_bytes": total,
                       "gathered_equal": bool(equal), "ranks": stats}, f)
    dist.destroy_process_group()


def evict(path):
    """Drops the model's pages from the page cache, so each rank's reads are its own."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--device", choices=["cpu", "cuda"],
                        help="load with load_to_torch into this device (cuda: rank r on cuda:r)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.device == "cuda" and torch.cuda.device_count() < args.world_size:
        parser.error(f"--device cuda needs a GPU per rank: {args.world_size} ranks, "
                     f"{torch.cuda.device_count()} GPUs")
    evict(args.model)
    with tempfile.TemporaryDirectory(prefix="tp_load-") as work:
        mp.spawn(run, args=(args.world_size, args.model, work, args.device),
                 nprocs=args.world_size)
        with open(os.path.join(work, "summary.json")) as f:
            summary = json.load(f)
    if args.json:
        print(json.dumps(summary))
    else:
        total = summary["total_bytes"]
        for r in summary["ranks"]:
            print(f"rank {r['rank']} on {r['device']}: loaded {r['loaded']} bytes "
                  f"({r['loaded'] / total:.3f} of {total}), read {r['read']} of the file "
                  f"({r['read'] / total:.3f})")
        print("gathered shards equal the full tensors:", summary["gathered_equal"])
    return 0 if summary["gathered_equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
