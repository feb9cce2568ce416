"""The onnxmap command on hostile files and in copy mode: invalid models exit 1 with one line
naming the file, never a crash; --no-mmap and a model read from standard input ("-") give the same
output as the mapped file. python/tests/test_errors.py imports this file for hostile_files()."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper


def varint(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, payload):
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def deep_graphs(levels):
    """graph.node[0].attribute[0].g... `levels` deep, lengths computed inside out."""
    chain = [7] + [1, 5, 6] * levels  # ModelProto.graph, then GraphProto.node, .attribute, .g
    sizes = [0] * (len(chain) + 1)
    for i in reversed(range(len(chain))):
        sizes[i] = len(varint(chain[i] << 3 | 2)) + len(varint(sizes[i + 1])) + sizes[i + 1]
    return b"".join(varint(n << 3 | 2) + varint(sizes[i + 1]) for i, n in enumerate(chain))


def hostile_contents():
    """name -> (bytes, text the one-line error must contain); "external-escape" names
    ../outside.bin."""
    node = lambda body: field(7, field(1, body))  # graph.node[0] holding `body`
    escape = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    escape.data_location = TensorProto.EXTERNAL
    escape.external_data.add(key="location", value="../outside.bin")
    escape_model = helper.make_model(helper.make_graph([], "g", [], [], initializer=[escape]))
    negative = TensorProto(name="n", data_type=TensorProto.FLOAT, dims=[-2])
    negative_model = helper.make_model(helper.make_graph([], "g", [], [], initializer=[negative]))
    return {
        "eleven-byte-varint": (node(b"\xf8\x06" + b"\xff" * 10 + b"\x01"), "graph.node[0]"),
        "wire-type-7": (node(b"\x27\x00"), "bad_wire_type"),
        "field-number-0": (node(b"\x02\x00"), "bad_field_number"),
        "open-group": (node(b"\x2b\x08\x01"), "truncated"),
        "length-past-end": (b"\x3a\x7f\x00", "out_of_bounds"),
        "nested-100000": (deep_graphs(100000), "max_depth 64"),
        "negative-dims": (negative_model.SerializeToString(), "graph.initializer[0].dims"),
        "external-escape": (escape_model.SerializeToString(), "unsafe_path"),
    }


HOSTILE = hostile_contents()


def hostile_files(folder):
    """name -> (bytes, text the one-line error must contain), for model files written in a
    subfolder of `folder`: writes folder/outside.bin, which "external-escape" points at."""
    (folder / "outside.bin").write_bytes(b"\0" * 16)
    return dict(HOSTILE)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """name -> (path, text the one-line error must contain)."""
    folder = tmp_path_factory.mktemp("hostile")
    models = folder / "models"
    models.mkdir()
    paths = {}
    for name, (content, expected) in hostile_files(folder).items():
        path = models / (name + ".onnx")
        path.write_bytes(content)
        paths[name] = (path, expected)
    return paths


@pytest.mark.parametrize("verb", [
    ["ls"], ["ls", "--no-mmap"], ["ls", "--load-mode", "direct"], ["info", "--stats"],
    ["info", "--stats", "--load-mode", "direct"]], ids=" ".join)
@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_file_exits_1_with_one_line(onnxmap, hostile, name, verb):
    path, expected = hostile[name]
    r = onnxmap(*verb, path, timeout=60)
    lines = r.stderr.decode().strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1 and str(path) in lines[0] \
        and expected in lines[0], f"{r.returncode} {lines!r}"


# dump does not resolve tensors: the two files whose fault is in a tensor dump fine.
@pytest.mark.parametrize("name", [n for n in HOSTILE if n not in ("negative-dims",
                                                                   "external-escape")])
def test_hostile_file_dump_exits_1(onnxmap, hostile, name):
    r = onnxmap("dump", hostile[name][0], timeout=60)
    assert r.returncode == 1, r.stderr.decode()


def full_model():
    weights = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    graph = helper.make_graph([helper.make_node("Relu", ["w"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              initializer=[weights])
    return helper.make_model(graph).SerializeToString()


def test_every_truncation_exits_0_or_1(onnxmap, tmp_path):
    """A cut at a field boundary is a smaller model (exit 0); any other is one line (exit 1);
    never a crash."""
    full = full_model()
    cut_path = tmp_path / "cut.onnx"
    codes = set()
    for cut in range(len(full)):
        cut_path.write_bytes(full[:cut])
        codes.add(onnxmap("ls", cut_path, timeout=60).returncode)
    assert codes <= {0, 1}, codes


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    path = tmp_path_factory.mktemp("good") / "good.onnx"
    path.write_bytes(full_model())
    return path


VERBS = {  # name -> the arguments, given the model argument
    "ls": lambda m: ["ls", "--json", m],
    "dump": lambda m: ["dump", m],
    "info": lambda m: ["info", "--json", m],
    "info --stats": lambda m: ["info", "--stats", "--json", m],
    "get": lambda m: ["get", m, "w", "-o", "-"],
}


@pytest.mark.parametrize("way", ["mapped", "--no-mmap", "--load-mode direct", "standard input"])
@pytest.mark.parametrize("verb", VERBS)
def test_copy_modes_and_standard_input_agree(onnxmap, good, verb, way):
    """Copy mode, direct reads and standard input print what the mapped file prints."""
    mapped = onnxmap(*VERBS[verb](good), timeout=60)
    assert mapped.returncode == 0 and mapped.stdout, mapped.stderr.decode()
    if way == "standard input":
        other = onnxmap(*VERBS[verb]("-"), input=good.read_bytes(), timeout=60)
        assert other.returncode == 0, other.stderr.decode()
    elif way != "mapped":
        other = onnxmap(*VERBS[verb](good), *way.split(), timeout=60)
    if way != "mapped":
        assert other.stdout == mapped.stdout, other.stderr.decode()


def test_convert_no_mmap_writes_what_mapped_convert_writes(onnxmap, good, tmp_path):
    outputs = {}
    for flag in ([], ["--no-mmap"]):
        (tmp_path / f"convert{len(flag)}").mkdir()
        out = tmp_path / f"convert{len(flag)}" / "converted.onnx"
        result = onnxmap("convert", good, out, "--external-data", "--size-threshold", "0", *flag,
                         timeout=60)
        assert result.returncode == 0, f"convert {flag}: {result.stderr.decode()}"
        outputs[len(flag)] = (out.read_bytes(), (out.parent / (out.name + ".data")).read_bytes())
    assert outputs[0] == outputs[1]
