"""numpy's statistics of a tensor's values, which `onnxmap stats` and the viewer's statistics
are checked against, and a model holding a tensor of every dtype numpy knows (NaNs, infinities,
zeros, a constant, an all-NaN and an empty tensor, a typed-field tensor, bfloat16)."""
import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def problems(row, values, bins=32):
    """How `row` (onnxmap's, as `stats --json` has it) differs from numpy's statistics of
    `values` (float64): a list of strings, empty when they agree."""
    found = []
    finite = values[np.isfinite(values)]
    want = {"count": values.size, "zeros": int(np.count_nonzero(finite == 0)),
            "nans": int(np.isnan(values).sum()), "infinities": int(np.isinf(values).sum())}
    got = {k: row.get(k) for k in want}
    if got != want:
        found.append(f"counts: {got} != {want}")
    if finite.size == 0:
        if not (row["min"] is None and row["mean"] is None):
            found.append(f"no finite value must give nulls: {row}")
        return found
    numbers = {"min": finite.min(), "max": finite.max(), "mean": finite.mean(), "std": finite.std()}
    bad = {k: (row[k], float(v)) for k, v in numbers.items() if not close(row[k], float(v))}
    if bad:
        found.append(f"min, max, mean, std (got, numpy's): {bad}")
    histogram, _ = np.histogram(finite, bins=bins)
    off = int(np.abs(histogram - np.array(row["histogram"])).sum())
    # Values on a bin edge may land one bin apart through rounding; none may be lost.
    if not (sum(row["histogram"]) == finite.size and off <= 2):
        found.append(f"histogram: {row['histogram']} against {histogram.tolist()}")
    return found


def types_tensors():
    """(tensors, values): the TensorProtos of types_model in file order, and each one's values
    by name."""
    rng = np.random.default_rng(3)
    special = [0.0, -0.0, np.nan, np.inf, -np.inf, 1.0]
    arrays = {
        "f32": np.concatenate([rng.standard_normal(1000), special]).astype(np.float32),
        "f64": np.concatenate([rng.standard_normal(999) * 1e6, special]),
        "f16": np.concatenate([rng.standard_normal(500), special]).astype(np.float16),
        # Enough values to be counted by bit pattern rather than one by one.
        "f16-many": np.concatenate([rng.standard_normal(40000), special]).astype(np.float16),
        "i16-many": rng.integers(-30000, 30000, 20000).astype(np.int16),
        "i8": rng.integers(-128, 128, 300).astype(np.int8),
        "u8": rng.integers(0, 256, 300).astype(np.uint8),
        "i16": rng.integers(-30000, 30000, 300).astype(np.int16),
        "u16": rng.integers(0, 65535, 300).astype(np.uint16),
        "i32": rng.integers(-2**31, 2**31 - 1, 300).astype(np.int32),
        "u32": rng.integers(0, 2**32 - 1, 300, dtype=np.uint64).astype(np.uint32),
        "i64": rng.integers(-2**40, 2**40, 300).astype(np.int64),
        "u64": rng.integers(0, 2**40, 300).astype(np.uint64),
        "bool": rng.integers(0, 2, 300).astype(bool),
        "constant": np.full(64, 2.5, np.float32),
        "all-nan": np.full(8, np.nan, np.float32),
        "empty": np.zeros(0, np.float32),
    }
    tensors = [numpy_helper.from_array(a, n) for n, a in arrays.items()]
    # A typed-field tensor (float_data), decoded by the loader before its statistics.
    tensors.append(helper.make_tensor("typed", T.FLOAT, [4], [1.0, -3.0, 0.0, 7.5]))
    arrays["typed"] = np.array([1.0, -3.0, 0.0, 7.5])
    # bfloat16: the high half of float32s, which python3-onnx 1.12 cannot write raw.
    f = rng.standard_normal(200).astype(np.float32)
    high = (f.view(np.uint32) >> 16).astype(np.uint16)
    tensors.append(helper.make_tensor("bf16", T.BFLOAT16, [200], high.tobytes(), raw=True))
    arrays["bf16"] = (high.astype(np.uint32) << 16).view(np.float32)
    return tensors, arrays


# The tensors' names, for parametrizing tests over them.
TYPE_NAMES = tuple(types_tensors()[1])


def types_model(folder):
    """Writes folder/types.onnx; returns its path and each tensor's values by name."""
    tensors, arrays = types_tensors()
    path = folder / "types.onnx"
    onnx.save(helper.make_model(helper.make_graph([], "g", [], [], initializer=tensors)),
              str(path))
    return path, arrays
