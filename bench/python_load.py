#!/usr/bin/python3
"""onnx.load of one model in this fresh process: prints "ms peak_rss_kib", or "cannot-open -".

    python_load.py MODEL [--materialise]

The load does not read external data (load_external_data=False), as a runtime that maps it would
do. With --materialise the same process then materialises the tensors reader_bench's
onnxmap_read_all_* read: the leading graph initializers whose bytes add up to at most
READ_BUDGET_BYTES (all of them in a model under 2 GiB). For each it does what onnx.load does by
default, loads its external data (onnx.external_data_helper.load_external_data_for_tensor), then
turns it into a numpy array (numpy_helper.to_array), dropped once made. Three more columns
follow: ms and peak RSS KiB from the start of the load to the last array, and the bytes
materialised. The first two columns mean the same with or without --materialise."""
import os
import resource
import sys
import time

import onnx
from onnx import external_data_helper, helper, numpy_helper

# The same budget as bench/read_all_bench.cpp's kReadBudgetBytes.
READ_BUDGET_BYTES = 2 << 30


def peak_rss_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def numpy_type(data_type):
    # onnx.mapping, Debian's onnx 1.12 has; newer releases moved it into onnx.helper.
    if hasattr(helper, "tensor_dtype_to_np_dtype"):
        return helper.tensor_dtype_to_np_dtype(data_type)
    return onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[data_type]


def tensor_bytes(tensor):
    elements = 1
    for dim in tensor.dims:
        elements *= dim
    return elements * numpy_type(tensor.data_type).itemsize


def materialise(model, folder):
    """Arrays of the leading initializers within the budget; returns the bytes materialised."""
    total = 0
    for initializer in model.graph.initializer:
        size = tensor_bytes(initializer)
        if total + size > READ_BUDGET_BYTES:
            break
        if external_data_helper.uses_external_data(initializer):
            # As load_external_data_for_model does: the bytes in raw_data, the reference gone.
            external_data_helper.load_external_data_for_tensor(initializer, folder)
            initializer.data_location = onnx.TensorProto.DEFAULT
            del initializer.external_data[:]
        total += numpy_helper.to_array(initializer).nbytes
    return total


def main():
    path = sys.argv[1]
    if os.path.getsize(path) >= 2 ** 31:
        print("cannot-open -")  # protobuf's Python and C++ parsers stop at 2 GB
        return 0
    start = time.perf_counter()
    model = onnx.load(path, load_external_data=False)
    load_ms = (time.perf_counter() - start) * 1000
    columns = [f"{load_ms:.3f}", str(peak_rss_kib())]
    if "--materialise" in sys.argv[2:]:
        materialised = materialise(model, os.path.dirname(path))
        total_ms = (time.perf_counter() - start) * 1000
        columns += [f"{total_ms:.3f}", str(peak_rss_kib()), str(materialised)]
    print(" ".join(columns))
    return 0


if __name__ == "__main__":
    sys.exit(main())
