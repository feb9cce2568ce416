"""`onnxmap check`, `graph` and `ls --sort/--filter` from the outside, on models python3-onnx
builds, with onnx.checker as a second opinion: a model it accepts must get no topological,
undefined-input or SSA problem from us; each planted problem must be found at its field path.
The cases marked `corpus` check every .onnx of the backend corpus (meson test check-corpus)."""
import hashlib
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper, numpy_helper

GRAPH_KINDS = {"undefined_input", "out_of_order", "ssa"}
DATA = bytes(range(256)) * 4
GOOD_SHA1 = hashlib.sha1(DATA).hexdigest()


def vi(name, elem=T.FLOAT, shape=(1,)):
    return helper.make_tensor_value_info(name, elem, list(shape))


def make(nodes, inputs=("x",), outputs=("y",), initializer=(), opsets=(("", 17),), ir=8):
    graph = helper.make_graph(nodes, "g", [vi(i) for i in inputs], [vi(o) for o in outputs],
                              initializer=list(initializer))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    model.ir_version = ir
    return model


def checker_accepts(path):
    try:
        onnx.checker.check_model(str(path))
        return True
    except Exception:  # noqa: BLE001 - any refusal counts
        return False


def problems_of(onnxmap, path, *extra):
    r = onnxmap("check", "--json", *extra, path, text=True)
    report = json.loads(r.stdout) if r.stdout else {"problems": [], "ok": False}
    return r.returncode, report


def found_in(report):
    return [(p["kind"], p["path"]) for p in report["problems"]]


def save(model, folder, name):
    path = folder / name
    onnx.save(model, str(path))
    return path


def weights(name, n=4, start=0.0):
    return numpy_helper.from_array(np.arange(start, start + n, dtype=np.float32), name)


def identity():
    return helper.make_node("Identity", ["x"], ["y"])


def external_model(folder, name, ranges, checksums=None):
    """Initializers w0.. with FLOAT data at the (offset, length) `ranges` of name.bin."""
    (folder / f"{name}.bin").write_bytes(DATA)
    tensors = []
    for i, (offset, length) in enumerate(ranges):
        t = T()
        t.name, t.data_type = f"w{i}", T.FLOAT
        t.dims.append(length // 4)
        entries = {"location": f"{name}.bin", "offset": offset, "length": length}
        if (checksums or {}).get(i):
            entries["checksum"] = checksums[i]
        for key, value in entries.items():
            entry = t.external_data.add()
            entry.key, entry.value = key, str(value)
        t.data_location = T.EXTERNAL
        tensors.append(t)
    return save(make([identity()], initializer=tensors), folder, f"{name}.onnx")


def float8_model(folder):
    float8 = helper.make_tensor("f8", T.UINT8, [2], vals=b"\x38\x40", raw=True)
    float8.data_type = 17  # FLOAT8E4M3FN, which python3-onnx 1.12 cannot name
    return save(make([identity()], initializer=[float8]), folder, "float8.onnx")


def short_raw_model(folder):
    short = weights("w")
    short.raw_data = short.raw_data[:12]
    return save(make([identity()], initializer=[short]), folder, "short.onnx")


def missing_external_model(folder):
    path = external_model(folder, "missing", [(0, 16)])
    (folder / "missing.bin").unlink()
    return path


# name -> (writes the model into a folder, the problem's kind, its field path, check's options)
PLANTED = {
    "an undefined input": (
        lambda f: save(make([helper.make_node("Add", ["x", "nope"], ["y"])]), f, "undefined.onnx"),
        "undefined_input", "graph.node[0].input[1]", ()),
    "out-of-order nodes": (
        lambda f: save(make([helper.make_node("Relu", ["a"], ["y"]),
                             helper.make_node("Relu", ["x"], ["a"])]), f, "order.onnx"),
        "out_of_order", "graph.node[0].input[0]", ()),
    "a duplicate initializer": (
        lambda f: save(make([identity()], initializer=[weights("w"), weights("w")]), f,
                       "dup.onnx"),
        "duplicate_name", "graph.initializer[1]", ()),
    "a missing opset": (
        lambda f: save(make([helper.make_node("Foo", ["x"], ["y"], domain="com.example")]), f,
                       "opset.onnx"),
        "missing_opset", "graph.node[0].domain", ()),
    "FLOAT8 in an IR 8 model": (float8_model, "ir_version", "graph.initializer[0].data_type", ()),
    "raw_data of the wrong size": (short_raw_model, "payload", "graph.initializer[0].raw_data", ()),
    "overlapping external ranges": (
        lambda f: external_model(f, "overlap", [(0, 64), (32, 64)]),
        "overlapping_data", "graph.initializer[1].external_data", ()),
    "a missing external file": (missing_external_model, "external_data",
                                "graph.initializer[0].external_data", ()),
    "a bad checksum with --data": (
        lambda f: external_model(f, "sums", [(0, 16), (16, 16)], {0: GOOD_SHA1, 1: "0" * 40}),
        "checksum", "graph.initializer[1].external_data", ("--data",)),
}


@pytest.mark.parametrize("name", PLANTED)
def test_check_finds_planted_problem(onnxmap, tmp_path, name):
    write, kind, where, extra = PLANTED[name]
    path = write(tmp_path)
    code, report = problems_of(onnxmap, path, *extra)
    found = found_in(report)
    assert code == 1 and (kind, where) in found, f"{code} {found}"
    if checker_accepts(path):
        assert not any(k in GRAPH_KINDS for k, _ in found), \
            f"onnx.checker accepts it, so no graph problem: {found}"


def test_check_passes_a_clean_model(onnxmap, tmp_path):
    path = save(make([identity()], initializer=[weights("w")]), tmp_path, "clean.onnx")
    code, report = problems_of(onnxmap, path)
    assert code == 0 and report["ok"], report["problems"]


def test_good_checksum_passes_and_without_data_none_is_read(onnxmap, tmp_path):
    sums = external_model(tmp_path, "sums", [(0, 16), (16, 16)], {0: GOOD_SHA1, 1: "0" * 40})
    _, report = problems_of(onnxmap, sums, "--data")
    assert len(report["problems"]) == 1, f"the good checksum passes: {report['problems']}"
    assert problems_of(onnxmap, sums)[0] == 0, "without --data checksums are not read"


def test_good_checksum_with_data(onnxmap, tmp_path):
    clean_data = external_model(tmp_path, "cleandata", [(0, 16)], {0: GOOD_SHA1})
    code, report = problems_of(onnxmap, clean_data, "--data")
    assert code == 0 and report["ok"], report["problems"]
    assert report["bytes_read"] == 1024, f"--data reports what it read: {report}"
    r = onnxmap("check", "--data", clean_data, text=True)
    assert "\r" not in r.stderr, f"no progress bar when stderr is not a terminal: {r.stderr!r}"


def test_text_output_is_file_path_what(onnxmap, tmp_path):
    path = PLANTED["an undefined input"][0](tmp_path)
    r = onnxmap("check", path, text=True)
    lines = r.stdout.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1 and \
        lines[0].startswith(f"{path}: graph.node[0].input[1]: 'nope'"), lines


def test_clean_model_says_ok(onnxmap, tmp_path):
    path = save(make([identity()], initializer=[weights("w")]), tmp_path, "clean.onnx")
    r = onnxmap("check", path, text=True)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok (1 node, 1 tensor)"), r.stdout


def test_unreadable_file_is_one_structure_problem(onnxmap, tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x0a\xff\xff\xff\xff\x0f")
    code, report = problems_of(onnxmap, garbage)
    assert code == 1 and not report["opened"] and \
        [p["kind"] for p in report["problems"]] == ["structure"], report


def test_check_with_no_model_exits_2(onnxmap):
    assert onnxmap("check").returncode == 2


def test_fixture(onnxmap, fixture_model):
    """The conformance fixtures (odd on purpose: they cover fields, not valid graphs) open and
    are checked; where onnx.checker accepts one, we must not find graph-order problems in it."""
    _, report = problems_of(onnxmap, fixture_model)
    found = found_in(report)
    assert report["opened"], found
    if checker_accepts(fixture_model):
        assert not any(k in GRAPH_KINDS for k, _ in found), \
            f"onnx.checker accepts it, so no graph problem: {found}"


@pytest.fixture(scope="module")
def control(tmp_path_factory):
    """A model with an If inside a Loop, a Constant, an attribute of each kind."""
    then_branch = helper.make_graph([helper.make_node("Add", ["x", "k"], ["t"])], "then", [],
                                    [vi("t")])
    else_branch = helper.make_graph([helper.make_node("Neg", ["x"], ["t"])], "else", [], [vi("t")])
    body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"]),
                              helper.make_node("If", ["c_in"], ["v"], then_branch=then_branch,
                                               else_branch=else_branch)],
                             "body", [vi("i", T.INT64, ()), vi("c_in", T.BOOL, ())],
                             [vi("c_out", T.BOOL, ()), vi("v")])
    nodes = [helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(
                 np.array([[123456, 654321]], np.int64), "")),
             helper.make_node("Loop", ["m", "c"], ["y"], body=body),
             helper.make_node("LeakyRelu", ["y"], ["z"], alpha=0.25),
             helper.make_node("Custom", ["z"], ["out"], domain="com.example", names=["a", "b"])]
    graph = helper.make_graph(nodes, "main", [vi("x"), vi("m", T.INT64, ()), vi("c", T.BOOL, ())],
                              [vi("out")], initializer=[weights("w", 6)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.example", 1)])
    return save(model, tmp_path_factory.mktemp("graph"), "control.onnx")


def test_check_passes_if_inside_loop(onnxmap, control):
    code, report = problems_of(onnxmap, control)
    assert code == 0 and report["ok"], report["problems"]


GRAPH_LINES = [
    "model: ir_version 8, opset_import ai.onnx 17, com.example 1", "graph main",
    "  input  x: FLOAT[1]", "  init   w: FLOAT[6]", "  k = Constant() {value=INT64[1, 2]}",
    "  y = Loop(m, c) {body=<graph body: 2 nodes>}", "    body:", "      graph body",
    "        v = If(c_in) {else_branch=<graph else: 1 node>, then_branch=<graph then: 1 node>}",
    "          then_branch:", "            graph then", "              t = Add(x, k)",
    "              t = Neg(x)", "  z = LeakyRelu(y) {alpha=0.25}",
    '  out = Custom[com.example](z) {names=["a", "b"]}', "  output out: FLOAT[1]"]


def test_graph_shows_every_line(onnxmap, control):
    r = onnxmap("graph", control, text=True)
    assert r.returncode == 0, r.stderr
    missing = [line for line in GRAPH_LINES if line not in r.stdout.splitlines()]
    assert not missing, f"graph does not show {missing} in:\n{r.stdout}"
    assert "123456" not in r.stdout and "654321" not in r.stdout, "graph printed tensor values"


def test_graph_depth_1_shows_the_loop_body_not_the_if_branches(onnxmap, control):
    shallow = onnxmap("graph", "--depth", "1", control, text=True).stdout
    assert "      graph body" in shallow.splitlines() and "Add(x, k)" not in shallow, shallow


def test_graph_depth_0_shows_the_main_graph_only(onnxmap, control):
    top = onnxmap("graph", "--depth", "0", control, text=True).stdout
    assert "    body:" not in top.splitlines() and "Loop(m, c)" in top, top


def test_graph_depth_negative_is_a_usage_error(onnxmap, control):
    assert onnxmap("graph", "--depth", "-1", control).returncode == 2


@pytest.fixture(scope="module")
def ls_model(tmp_path_factory):
    tensors = [weights("b.bias", 2), weights("a.weight", 8), weights("c.weight", 4)]
    return save(make([identity()], initializer=tensors), tmp_path_factory.mktemp("ls"), "ls.onnx")


@pytest.mark.parametrize("args, names", [
    ((), ["b.bias", "a.weight", "c.weight"]),
    (("--sort", "name"), ["a.weight", "b.bias", "c.weight"]),
    (("--sort", "size"), ["a.weight", "c.weight", "b.bias"]),
    (("--filter", "*.weight"), ["a.weight", "c.weight"]),
    (("--filter", "?.weight", "--sort", "size"), ["a.weight", "c.weight"]),
    (("--filter", "zzz*"), []),
], ids=["file order", "sort name", "sort size (largest first)", "filter glob",
        "filter with sort", "filter matching nothing"])
def test_ls_sort_and_filter(onnxmap, ls_model, args, names):
    rows = json.loads(onnxmap("ls", "--json", *args, ls_model).stdout)
    assert [r["name"] for r in rows] == names


def test_ls_sort_offset(onnxmap, ls_model):
    rows = json.loads(onnxmap("ls", "--json", "--sort", "offset", ls_model).stdout)
    offsets = [r["offset"] for r in rows]
    assert offsets == sorted(offsets) and [r["name"] for r in rows] == \
        ["b.bias", "a.weight", "c.weight"], rows


def test_ls_sort_bogus_exits_2(onnxmap, ls_model):
    assert onnxmap("ls", "--sort", "bogus", ls_model).returncode == 2


def test_ls_table_shows_human_sizes(onnxmap, ls_model):
    table = onnxmap("ls", "--sort", "size", ls_model, text=True).stdout.splitlines()
    assert "32 B" in table[1] and table[1].startswith("a.weight"), table


def test_corpus_model_passes_check(onnxmap, corpus_model):
    code, report = problems_of(onnxmap, corpus_model)
    assert code == 0, f"{found_in(report)} (onnx.checker accepts: {checker_accepts(corpus_model)})"
