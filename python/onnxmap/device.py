"""Model.load_to_torch: a model's tensors into torch tensors on a device, through the library's
load_to_device (C++'s onnxmap/device.hpp). torch allocates every tensor (on a GPU its caching
allocator owns them); onnxmap copies the file's bytes into them, registered mappings or a
pinned ring, with the GIL released. device="cpu" runs the same pipeline into host memory."""
from . import _onnxmap

# ONNX type names to torch dtype names, as safe_open gives them: BFLOAT16 as torch.bfloat16,
# the 8-bit floats as their bit patterns (uint8, as Tensor.numpy() gives them). UINT16, UINT32
# and UINT64 where torch has them (2.3 and later); safe_open widens the first two on the host.
TORCH_DTYPES = {
    "BOOL": "bool", "UINT8": "uint8", "INT8": "int8", "INT16": "int16", "INT32": "int32",
    "INT64": "int64", "FLOAT16": "float16", "BFLOAT16": "bfloat16", "FLOAT": "float32",
    "DOUBLE": "float64", "COMPLEX64": "complex64", "COMPLEX128": "complex128",
    "FLOAT8E4M3FN": "uint8", "FLOAT8E4M3FNUZ": "uint8", "FLOAT8E5M2": "uint8",
    "FLOAT8E5M2FNUZ": "uint8", "FLOAT8E8M0": "uint8",
    "UINT16": "uint16", "UINT32": "uint32", "UINT64": "uint64",
}


def torch_dtype(torch, onnx_dtype, name):
    """The torch dtype a tensor of `onnx_dtype` is loaded as; TypeError naming the tensor where
    torch has none (STRING, the 4- and 2-bit types, unsigned types before torch 2.3)."""
    dtype = getattr(torch, TORCH_DTYPES.get(onnx_dtype, ""), None)
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"tensor {name!r} is {onnx_dtype}: torch {torch.__version__} has no "
                        f"tensors of that type to load it into")
    return dtype


def engine_device(torch, device):
    """(onnxmap's device name, torch's device) for `device` ("cpu", "cuda", "cuda:N" or a
    torch.device): "cpu" is onnxmap's "host" engine; "cuda" is torch's current CUDA device.
    An onnxmap.Error (kind invalid_argument, or device where the device is not there) before
    anything is allocated."""
    text = str(device)
    if text == "cpu":
        return "host", torch.device("cpu")
    if text != "cuda" and not text.startswith("cuda:"):
        error = _onnxmap.Error(f"device {text!r}: expected cpu, cuda or cuda:N")
        error.kind, error.detail = "invalid_argument", error.args[0]
        error.file, error.path, error.offset = "", "", None
        raise error
    _onnxmap._check_device(text)  # "cuda:x", no runtime, no such device
    if text == "cuda":
        text = f"cuda:{torch.cuda.current_device()}"
    return text, torch.device(text)


def load_to_torch(self, device="cuda:0", names=None, filter=None, rank=None, ranks=None, *,
                  stats=None, path=None, mode=None, threads=None, max_in_flight_bytes=None,
                  progress=None, verify=None):
    """A dict of name -> torch tensor on `device`, in plan order, for the tensors keys() names
    (or those matching the glob `filter`, or those in `names`); with rank and ranks, that
    rank's rows of each tensor as Model.load(shard=(rank, ranks)) cuts them, the others whole.

    Each tensor is made by torch.empty(shape, dtype=..., device=device) before anything is
    read, then filled by onnxmap's load_to_device with the GIL released: on "cuda:N" read into
    a pinned ring of at most max_in_flight_bytes (from the page cache where the pages are
    there, else as mode says: "direct", the default, is O_DIRECT), or with mode="map" from the
    mapped file registered with the driver; "cpu" is the same pipeline into host memory. path
    "automatic" (the default), "registered" or "pinned" forces the way; threads workers overlap
    reads and copies (default: 4, or one per core, at most 16, where most bytes are in the page
    cache). progress(bytes_done, bytes_total) is called on this thread; an exception in it, or
    Ctrl-C, stops the load and is raised once the copies in flight have ended.

    stats: a dict to fill with the load's figures: those of every load, as Model.load returns
    them (tensors, bytes, seconds, cpu_seconds, bytes_read, requests, fresh_buffer_bytes,
    bytes_copied, direct, retries, retry_wait_ms), then the device's (bytes_staged,
    bytes_registered, pinned_bytes, registrations, registrations_refused, threads, path). Raises onnxmap.Error (kind "device" where no CUDA runtime or
    device is found, "invalid_argument" for a device name that is not cpu, cuda or cuda:N) and
    TypeError naming a tensor whose type torch cannot hold.

    verify: a Manifest (Model.hash, Manifest.read) or a path to one: each whole tensor is
    hashed from its bytes as they are read, before they reach the device, and one that differs
    from its digest stops the load with an onnxmap.Error (kind bad_tensor) naming it, its file
    and both digests; no tensor is returned. stats then also holds verified and not_verified
    (a rank's row slices, verified where the manifest has their digests: Model.hash(ranks=))."""
    import torch
    if (rank is None) != (ranks is None):
        raise TypeError("rank and ranks go together")
    engine, target = engine_device(torch, device)
    plan = self._device_plan(filter=filter, names=names,
                              shard=None if rank is None else (rank, ranks))
    items = plan.items
    dtypes = [torch_dtype(torch, onnx_dtype, name) for name, onnx_dtype, _, _ in items]
    tensors = {}
    pointers = []
    for (name, _, shape, nbytes), dtype in zip(items, dtypes):
        tensor = torch.empty(shape, dtype=dtype, device=target)
        if tensor.numel() * tensor.element_size() != nbytes:
            raise TypeError(f"tensor {name!r}: {nbytes} bytes do not fill {dtype} {shape}")
        tensors[name] = tensor
        pointers.append(tensor.data_ptr() if nbytes else 0)
    if target.type == "cuda":
        # Blocks the caching allocator hands out again may still be read or written by work
        # queued on torch's streams; onnxmap's streams do not wait for it.
        torch.cuda.synchronize(target)
    figures = plan.load(pointers, device=engine, path=path, mode=mode, threads=threads,
                        max_in_flight_bytes=max_in_flight_bytes, progress=progress,
                        verify=verify)
    if stats is not None:
        stats.update(figures)
    return tensors


setattr(_onnxmap.Model, "load_to_torch", load_to_torch)  # the stub declares it
