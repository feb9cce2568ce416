"""onnxmap stats against numpy: every numeric dtype's min, max, mean, std, zeros, NaN and
infinity counts and histogram, on tensors made by python3-onnx with NaNs, infinities and zeros
in them; the float8 and 4-bit types (which python3-onnx 1.12 cannot decode) on every bit pattern,
against the values their definitions in onnx.proto give."""
import json

import numpy as np
import onnx
import pytest

import numpy_stats


def stats(onnxmap, path, *args):
    r = onnxmap("stats", path, "--json", *args)
    assert r.returncode == 0, r.stderr.decode()
    return {row["name"]: row for row in json.loads(r.stdout)}


@pytest.fixture(scope="module")
def types(tmp_path_factory):
    """(path, values by name) of numpy_stats.types_model."""
    return numpy_stats.types_model(tmp_path_factory.mktemp("types"))


@pytest.fixture(scope="module")
def types_rows(onnxmap, types):
    return stats(onnxmap, types[0])


@pytest.mark.parametrize("name", numpy_stats.TYPE_NAMES)
def test_stats_as_numpy(types, types_rows, name):
    values = np.asarray(types[1][name], dtype=np.float64)
    problems = numpy_stats.problems(types_rows[name], values)
    assert not problems, "\n".join(problems)


def test_name_picks_one_tensor_bins(onnxmap, types):
    path, arrays = types
    rows = stats(onnxmap, path, "f32", "--bins", "7")
    assert list(rows) == ["f32"] and len(rows["f32"]["histogram"]) == 7, rows
    problems = numpy_stats.problems(rows["f32"], arrays["f32"].astype(np.float64), bins=7)
    assert not problems, "f32 in 7 bins:\n" + "\n".join(problems)


def test_name_may_be_a_path_as_ls_shows_it(onnxmap, types):
    assert list(stats(onnxmap, types[0], "graph.initializer[0]")) == ["f32"]


def test_text_a_header_and_one_row(onnxmap, types):
    r = onnxmap("stats", types[0], "f32", text=True)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 2 and \
        lines[0].split()[:4] == ["NAME", "DTYPE", "COUNT", "MIN"] and \
        lines[1].startswith("f32 "), r.stdout


def test_unknown_name_exits_1_naming_it(onnxmap, types):
    r = onnxmap("stats", types[0], "nope", text=True)
    assert r.returncode == 1 and "nope" in r.stderr, r.stderr


# Every bit pattern of each 8-bit float type: (NaNs, infinities, zeros, largest finite value).
FLOAT8 = {
    17: ("FLOAT8E4M3FN", 2, 0, 2, 448.0),
    18: ("FLOAT8E4M3FNUZ", 1, 0, 1, 240.0),
    19: ("FLOAT8E5M2", 6, 2, 2, 57344.0),
    20: ("FLOAT8E5M2FNUZ", 1, 0, 1, 57344.0),
    24: ("FLOAT8E8M0", 1, 0, 0, 2.0 ** 127),
}


def raw_tensor(name, data_type, dims, raw):
    t = onnx.TensorProto()
    t.name = name
    t.data_type = data_type
    t.dims.extend(dims)
    t.raw_data = raw
    return t


@pytest.fixture(scope="module")
def small_rows(onnxmap, tmp_path_factory):
    """stats of every pattern of the 8-bit floats and of the 4-bit types, by tensor name."""
    tensors = [raw_tensor(f"t{k}", k, [256], bytes(range(256))) for k in FLOAT8]
    # 4-bit types, two to a byte: every pattern once.
    nibbles = bytes(lo | hi << 4 for lo, hi in zip(range(0, 16, 2), range(1, 16, 2)))
    tensors += [raw_tensor("int4", 22, [16], nibbles), raw_tensor("uint4", 21, [16], nibbles),
                raw_tensor("fp4", 23, [16], nibbles)]
    model = onnx.ModelProto()
    model.ir_version = 14
    model.graph.name = "g"
    model.graph.initializer.extend(tensors)
    path = tmp_path_factory.mktemp("small") / "small.onnx"
    path.write_bytes(model.SerializeToString())
    return stats(onnxmap, path)


@pytest.mark.parametrize("k", FLOAT8, ids=[v[0] for v in FLOAT8.values()])
def test_float8_every_pattern(small_rows, k):
    name, nans, infinities, zeros, largest = FLOAT8[k]
    row = small_rows[f"t{k}"]
    got = (row["nans"], row["infinities"], row["zeros"], row["max"])
    assert got == (nans, infinities, zeros, largest) and row["count"] == 256, row
    if k != 24:  # FLOAT8E8M0 has no sign
        assert row["min"] == -largest and numpy_stats.close(row["mean"], 0.0), \
            f"{name} is symmetric: {row}"


def test_int4_every_value(small_rows):
    row = small_rows["int4"]
    assert (row["min"], row["max"]) == (-8, 7) and numpy_stats.close(row["mean"], -0.5), row


def test_uint4_every_value(small_rows):
    row = small_rows["uint4"]
    assert (row["min"], row["max"]) == (0, 15), row


def test_float4e2m1_every_value(small_rows):
    fp4 = small_rows["fp4"]
    assert (fp4["min"], fp4["max"], fp4["zeros"]) == (-6, 6, 2) and \
        numpy_stats.close(fp4["mean"], 0.0), fp4
