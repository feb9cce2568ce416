#!/usr/bin/python3
"""onnx.load of one model in this fresh process: prints "ms peak_rss_kib", or "cannot-open -".
External data is not loaded (load_external_data=False), as a runtime that maps it would do."""
import os
import resource
import sys
import time

import onnx

path = sys.argv[1]
if os.path.getsize(path) >= 2 ** 31:
    print("cannot-open -")  # protobuf's Python and C++ parsers stop at 2 GB
    sys.exit(0)
start = time.perf_counter()
model = onnx.load(path, load_external_data=False)
ms = (time.perf_counter() - start) * 1000
print(f"{ms:.3f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}")
