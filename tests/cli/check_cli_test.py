#!/usr/bin/python3
"""`onnxmap check`, `graph` and `ls --sort/--filter` from the outside, on models python3-onnx
builds, with onnx.checker as a second opinion: a model it accepts must get no topological,
undefined-input or SSA problem from us; each planted problem must be found at its field path.

    check_cli_test.py PATH/TO/onnxmap [--corpus DIR]

With --corpus, checks every .onnx of the backend corpus instead (exit 77, meson's skip, when the
folder is absent).
"""
import hashlib
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper

ONNXMAP = sys.argv[1]
results = {"passed": 0, "failed": 0}
GRAPH_KINDS = {"undefined_input", "out_of_order", "ssa"}


def run(*args):
    return subprocess.run([ONNXMAP, *map(str, args)], capture_output=True, text=True)


def check(name, condition, detail=""):
    results["passed" if condition else "failed"] += 1
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else ": " + detail))


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


def problems_of(path, *extra):
    r = run("check", "--json", *extra, path)
    report = json.loads(r.stdout) if r.stdout else {"problems": [], "ok": False}
    return r.returncode, report


def expect_found(name, path, kind, where, *extra):
    code, report = problems_of(path, *extra)
    found = [(p["kind"], p["path"]) for p in report["problems"]]
    check(f"check finds {name}", code == 1 and (kind, where) in found, f"{code} {found}")
    if checker_accepts(path):
        check(f"{name}: onnx.checker accepts, so no graph problem", not any(
            k in GRAPH_KINDS for k, _ in found), str(found))


def expect_clean(name, path, *extra):
    code, report = problems_of(path, *extra)
    check(f"check passes {name}", code == 0 and report["ok"], str(report["problems"]))
    return report


def save(model, folder, name):
    path = folder / name
    onnx.save(model, str(path))
    return path


def weights(name, n=4, start=0.0):
    return numpy_helper.from_array(np.arange(start, start + n, dtype=np.float32), name)


def external_model(folder, name, ranges, checksums=None):
    """Initializers w0.. with FLOAT data at the (offset, length) `ranges` of name.bin."""
    data = bytes(range(256)) * 4
    (folder / f"{name}.bin").write_bytes(data)
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
    return save(make([helper.make_node("Identity", ["x"], ["y"])], initializer=tensors), folder,
                f"{name}.onnx")


def planted(folder):
    identity = helper.make_node("Identity", ["x"], ["y"])
    expect_clean("a clean model", save(make([identity], initializer=[weights("w")]), folder, "clean.onnx"))
    expect_found("an undefined input", save(make([helper.make_node("Add", ["x", "nope"], ["y"])]),
                                             folder, "undefined.onnx"),
                 "undefined_input", "graph.node[0].input[1]")
    expect_found("out-of-order nodes", save(make([helper.make_node("Relu", ["a"], ["y"]),
                                                  helper.make_node("Relu", ["x"], ["a"])]),
                                             folder, "order.onnx"),
                 "out_of_order", "graph.node[0].input[0]")
    expect_found("a duplicate initializer", save(make([identity], initializer=[weights("w"),
                                                                                weights("w")]),
                                                  folder, "dup.onnx"),
                 "duplicate_name", "graph.initializer[1]")
    expect_found("a missing opset", save(make([helper.make_node("Foo", ["x"], ["y"],
                                                                domain="com.example")]),
                                          folder, "opset.onnx"),
                 "missing_opset", "graph.node[0].domain")
    float8 = helper.make_tensor("f8", T.UINT8, [2], vals=b"\x38\x40", raw=True)
    float8.data_type = 17  # FLOAT8E4M3FN, which python3-onnx 1.12 cannot name
    expect_found("FLOAT8 in an IR 8 model", save(make([identity], initializer=[float8]), folder,
                                                  "float8.onnx"),
                 "ir_version", "graph.initializer[0].data_type")
    short = weights("w")
    short.raw_data = short.raw_data[:12]
    expect_found("raw_data of the wrong size", save(make([identity], initializer=[short]), folder,
                                                     "short.onnx"),
                 "payload", "graph.initializer[0].raw_data")
    expect_found("overlapping external ranges", external_model(folder, "overlap", [(0, 64), (32, 64)]),
                 "overlapping_data", "graph.initializer[1].external_data")
    missing = external_model(folder, "missing", [(0, 16)])
    (folder / "missing.bin").unlink()
    expect_found("a missing external file", missing, "external_data",
                 "graph.initializer[0].external_data")
    good = hashlib.sha1((bytes(range(256)) * 4)).hexdigest()
    sums = external_model(folder, "sums", [(0, 16), (16, 16)], {0: good, 1: "0" * 40})
    expect_found("a bad checksum with --data", sums, "checksum",
                 "graph.initializer[1].external_data", "--data")
    code, report = problems_of(sums, "--data")
    check("the good checksum passes", len(report["problems"]) == 1, str(report["problems"]))
    check("without --data checksums are not read", problems_of(sums)[0] == 0)
    clean_data = external_model(folder, "cleandata", [(0, 16)], {0: good})
    report = expect_clean("a good checksum with --data", clean_data, "--data")
    r = run("check", "--data", clean_data)
    check("no progress bar when stderr is not a terminal", "\r" not in r.stderr, repr(r.stderr))
    check("--data reports what it read", report["bytes_read"] == 1024, str(report))

    # Text output: one line per problem, FILE: PATH: what.
    r = run("check", folder / "undefined.onnx")
    lines = r.stdout.strip().splitlines()
    check("text output is FILE: PATH: what", r.returncode == 1 and len(lines) == 1 and
          lines[0].startswith(f"{folder / 'undefined.onnx'}: graph.node[0].input[1]: 'nope'"),
          repr(lines))
    r = run("check", folder / "clean.onnx")
    check("a clean model says ok", r.returncode == 0 and r.stdout.strip().endswith(
        "ok (1 node, 1 tensor)"), r.stdout)
    garbage = folder / "garbage.onnx"
    garbage.write_bytes(b"\x0a\xff\xff\xff\xff\x0f")
    code, report = problems_of(garbage)
    check("an unreadable file is one structure problem", code == 1 and not report["opened"] and
          [p["kind"] for p in report["problems"]] == ["structure"], str(report))
    check("check with no model exits 2", run("check").returncode == 2)


def fixtures(folder):
    """The conformance fixtures (odd on purpose: they cover fields, not valid graphs): where
    onnx.checker accepts one, we must not find graph-order problems in it."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "conformance"))
    import make_fixtures  # noqa: E402 - found through the path set just above
    out = folder / "fixtures"
    out.mkdir()
    make_fixtures.write_models(out)
    for path in sorted(out.rglob("*.onnx")):
        code, report = problems_of(path)
        found = [(p["kind"], p["path"]) for p in report["problems"]]
        if checker_accepts(path):
            check(f"fixture {path.name}: no graph problem where onnx.checker accepts",
                  report["opened"] and not any(k in GRAPH_KINDS for k, _ in found), str(found))
        else:
            check(f"fixture {path.name}: opens and is checked", report["opened"], str(found))


def graph_verb(folder):
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
    path = save(model, folder, "control.onnx")
    expect_clean("a model with If inside Loop", path)
    r = run("graph", path)
    out = r.stdout
    check("graph exits 0", r.returncode == 0, r.stderr)
    for line in ["model: ir_version 8, opset_import ai.onnx 17, com.example 1", "graph main",
                 "  input  x: FLOAT[1]", "  init   w: FLOAT[6]",
                 "  k = Constant() {value=INT64[1, 2]}",
                 "  y = Loop(m, c) {body=<graph body: 2 nodes>}", "    body:", "      graph body",
                 "        v = If(c_in) {else_branch=<graph else: 1 node>, "
                 "then_branch=<graph then: 1 node>}",
                 "          then_branch:", "            graph then",
                 "              t = Add(x, k)", "              t = Neg(x)",
                 "  z = LeakyRelu(y) {alpha=0.25}",
                 '  out = Custom[com.example](z) {names=["a", "b"]}', "  output out: FLOAT[1]"]:
        check(f"graph shows {line.strip()[:40]!r}", line in out.splitlines(), out)
    check("graph never prints tensor values", "123456" not in out and "654321" not in out)
    shallow = run("graph", "--depth", "1", path).stdout
    check("--depth 1 shows the Loop body, not the If branches",
          "      graph body" in shallow.splitlines() and "Add(x, k)" not in shallow, shallow)
    top = run("graph", "--depth", "0", path).stdout
    check("--depth 0 shows the main graph only",
          "    body:" not in top.splitlines() and "Loop(m, c)" in top, top)
    check("--depth -1 is a usage error", run("graph", "--depth", "-1", path).returncode == 2)


def ls_verb(folder):
    tensors = [weights("b.bias", 2), weights("a.weight", 8), weights("c.weight", 4)]
    path = save(make([helper.make_node("Identity", ["x"], ["y"])], initializer=tensors), folder,
                "ls.onnx")
    names = lambda *args: [r["name"] for r in json.loads(run("ls", "--json", *args, path).stdout)]
    check("ls keeps file order", names() == ["b.bias", "a.weight", "c.weight"])
    check("ls --sort name", names("--sort", "name") == ["a.weight", "b.bias", "c.weight"])
    check("ls --sort size (largest first)",
          names("--sort", "size") == ["a.weight", "c.weight", "b.bias"])
    rows = json.loads(run("ls", "--json", "--sort", "offset", path).stdout)
    offsets = [r["offset"] for r in rows]
    check("ls --sort offset", offsets == sorted(offsets) and [r["name"] for r in rows] ==
          ["b.bias", "a.weight", "c.weight"], str(rows))
    check("ls --filter glob", names("--filter", "*.weight") == ["a.weight", "c.weight"])
    check("ls --filter with sort", names("--filter", "?.weight", "--sort", "size") ==
          ["a.weight", "c.weight"])
    check("ls --filter matching nothing", names("--filter", "zzz*") == [])
    check("ls --sort bogus exits 2", run("ls", "--sort", "bogus", path).returncode == 2)
    table = run("ls", "--sort", "size", path).stdout.splitlines()
    check("ls table shows human sizes", "32 B" in table[1] and table[1].startswith("a.weight"),
          str(table))


def corpus(folder):
    if not folder.is_dir():
        print(f"SKIP: corpus {folder} not found (it lives in ../shared, absent from a clone)")
        return 77
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "conformance"))
    from corpus_sample import sample
    files = sample(sorted(folder.rglob("*.onnx")))
    for path in files:
        code, report = problems_of(path)
        found = [(p["kind"], p["path"]) for p in report["problems"]]
        check(f"check {path.relative_to(folder)} (onnx.checker accepts: {checker_accepts(path)})",
              code == 0, str(found))
    print(f"{len(files)} corpus models checked")
    return None


def main():
    if len(sys.argv) > 3 and sys.argv[2] == "--corpus":
        skipped = corpus(pathlib.Path(sys.argv[3]))
        if skipped is not None:
            return skipped
    else:
        with tempfile.TemporaryDirectory() as tmp:
            folder = pathlib.Path(tmp)
            planted(folder)
            fixtures(folder)
            graph_verb(folder)
            ls_verb(folder)
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
