#!/usr/bin/python3
"""The onnxmap command from the outside: exit codes, one-line errors, and info/ls/get output
checked against python3-onnx on models it builds.

    cli_test.py PATH/TO/onnxmap
"""
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ONNXMAP = sys.argv[1]
results = {"passed": 0, "failed": 0}


def run(*args):
    return subprocess.run([ONNXMAP, *map(str, args)], capture_output=True, text=False)


def check(name, condition, detail=""):
    results["passed" if condition else "failed"] += 1
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else ": " + detail))


def make_model(folder):
    """A model with a float initializer, a string initializer and a Constant node."""
    weights = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "w")
    names = helper.make_tensor("names", TensorProto.STRING, [2], [b"a", b"bc"])
    const = helper.make_node("Constant", [], ["c"],
                             value=numpy_helper.from_array(np.array([5, 6], dtype=np.int64), ""))
    node = helper.make_node("MatMul", ["x", "w"], ["y"])
    graph = helper.make_graph([const, node], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])],
                              initializer=[weights, names])
    model = helper.make_model(graph, producer_name="cli-test", opset_imports=[helper.make_opsetid("", 17)])
    model.model_version = 3
    path = folder / "m.onnx"
    onnx.save(model, str(path))
    return path, model


def check_load(folder):
    """onnxmap load in every mode reads every tensor's bytes, inline and external; get in every
    --load-mode equals numpy_helper."""
    arrays = {f"t{i}": np.arange(i * 1000 + 1, dtype=np.float32) for i in range(5)}
    graph = helper.make_graph([], "g", [], [], initializer=[
        numpy_helper.from_array(a, name) for name, a in arrays.items()])
    model = helper.make_model(graph)
    total = sum(a.nbytes for a in arrays.values())
    inline = folder / "inline.onnx"
    onnx.save(model, str(inline))
    external = folder / "external.onnx"
    onnx.save(model, str(external), save_as_external_data=True, location="external.onnx.data",
              size_threshold=0)
    for path in (inline, external):
        for mode in ("map", "read", "direct"):
            r = run("load", path, "--mode", mode, "--json")
            out = json.loads(r.stdout) if r.returncode == 0 else {}
            check(f"load {path.name} --mode {mode}", out.get("tensors") == len(arrays)
                  and out.get("bytes") == total and out.get("seconds", -1) >= 0
                  and 0 <= out.get("bytes_copied", -1) <= total
                  and min(out.get("cpu_user_seconds", -1), out.get("cpu_system_seconds", -1)) >= 0,
                  str(out))
            r = run("get", path, "t3", "--load-mode", mode, "-o", folder / "t3.npy")
            check(f"get {path.name} --load-mode {mode}", r.returncode == 0 and
                  np.array_equal(np.load(folder / "t3.npy"), arrays["t3"]), r.stderr.decode())
        r = run("load", path, "--filter", "t[12]", "--threads", 1)
        check(f"load {path.name} --filter", r.returncode == 0 and r.stdout.startswith(b"2 tensors"),
              r.stdout.decode())
    check("load --mode mmap exits 2", run("load", inline, "--mode", "mmap").returncode == 2)
    check("--no-mmap and --load-mode together exit 2",
          run("ls", inline, "--no-mmap", "--load-mode", "direct").returncode == 2)
    check("load of a missing file exits 1", run("load", folder / "nope.onnx").returncode == 1)


def check_hints(folder):
    """An error at the top of a file says what to do: a file cut short, a bare TensorProto."""
    whole = (folder / "inline.onnx").read_bytes()
    (folder / "cut.onnx").write_bytes(whole[:len(whole) // 2])
    r = run("info", folder / "cut.onnx")
    check("a cut file: exit 1 and a hint", r.returncode == 1
          and b"; the file ends before a field it declares: it may be cut short" in r.stderr, r.stderr.decode())
    tensor = numpy_helper.from_array(np.array(["a", "bc"], dtype=object), "s")
    (folder / "tensor.pb").write_bytes(tensor.SerializeToString())
    r = run("info", folder / "tensor.pb")
    check("a TensorProto read as a model: a hint to dump it", r.returncode == 1
          and b"dump --message TensorProto" in r.stderr, r.stderr.decode())
    for name in ("cut.onnx", "tensor.pb"):
        (folder / name).unlink()


def run_example(line, folder, env):
    """Runs one example line; `onnxmap view`, a server, until it prints its URL, then Ctrl-C."""
    if not line.startswith("onnxmap view "):
        return subprocess.run(["bash", "-c", line], cwd=folder, env=env, capture_output=True)
    p = subprocess.Popen(["bash", "-c", "exec " + line], cwd=folder, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.readline()
    if b" at http://127.0.0.1:" in first:
        p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return subprocess.CompletedProcess(line, p.returncode if first else 1, first + out, err)


def check_help_examples(folder):
    """`onnxmap --help` and every verb's --help show examples, and each example without a URL
    runs as written (bash, this build's onnxmap first on PATH), in the order a newcomer would try
    them, in one empty folder."""
    top = run("--help").stdout.decode()
    check("--help shows an example", "Example:\n  onnxmap " in top, top)
    folder.mkdir()
    env = dict(os.environ, PATH=str(pathlib.Path(ONNXMAP).resolve().parent) + os.pathsep
               + os.environ["PATH"])
    env.pop("DISPLAY", None), env.pop("WAYLAND_DISPLAY", None)  # no browser opened by `view`
    for verb in ("synth", "info", "ls", "graph", "dump", "get", "convert", "check", "diff",
                 "load", "stats", "view"):
        text = run(verb, "--help").stdout.decode()
        lines = re.search(r"^Examples:\n((?:  .*\n)+)", text, re.M)
        check(f"{verb} --help shows examples", lines is not None, text)
        for line in (lines.group(1).splitlines() if lines else []):
            if "://" in line:
                continue
            r = run_example(line.strip(), folder, env)
            check(f"the example runs: {line.strip()}", r.returncode == 0, r.stderr.decode())
    shutil.rmtree(folder)
    check_hints(folder.parent)
    r = run("frob", "model.onnx")
    check("an unknown verb is named, exit 2", r.returncode == 2
          and b"unknown verb 'frob'" in r.stderr, r.stderr.decode())


def check_dims_spelling(path):
    """A shape is spelled one way, "[4, 3]", by every verb that shows one: ls, graph and info."""
    text = {verb: run(verb, path).stdout.decode() for verb in ("ls", "graph", "info")}
    ls_w = next((line.split() for line in text["ls"].splitlines() if line.startswith("w ")), [])
    check("ls spells dims [4, 3]", "[4," in ls_w and "3]" in ls_w, text["ls"])
    check("graph spells an initializer FLOAT[4, 3]", "init   w: FLOAT[4, 3]" in text["graph"],
          text["graph"])
    check("graph spells an input FLOAT[n, 4]", "input  x: FLOAT[n, 4]" in text["graph"],
          text["graph"])
    check("info spells an input FLOAT[n, 4]", "x  FLOAT[n, 4]" in text["info"], text["info"])


def main():
    folder = pathlib.Path(tempfile.mkdtemp())
    path, model = make_model(folder)

    # Usage errors exit 2; invalid models exit 1 with one line naming the file and byte.
    check("no verb exits 2", run().returncode == 2)
    check("unknown verb exits 2", run("frobnicate").returncode == 2)
    check("get without a tensor exits 2", run("get", path).returncode == 2)
    garbage = folder / "garbage.onnx"
    garbage.write_bytes(b"\x0a\xff\xff\xff\xff\x0f")
    r = run("ls", garbage)
    lines = r.stderr.decode().strip().splitlines()
    check("garbage exits 1", r.returncode == 1, str(r.returncode))
    check("garbage gives one line with file and byte",
          len(lines) == 1 and "garbage.onnx" in lines[0] and "byte" in lines[0], repr(lines))
    check("missing file exits 1", run("info", folder / "nope.onnx").returncode == 1)
    check("unknown tensor exits 1", run("get", path, "nope", "-o", folder / "x.npy").returncode == 1)

    # info --json against the reference reader.
    r = run("info", "--json", path)
    info = json.loads(r.stdout)
    check("info ir_version", info["ir_version"] == model.ir_version)
    check("info producer", info["producer_name"] == "cli-test")
    check("info model_version", info["model_version"] == "3")
    check("info opsets", info["opset_import"] == {"ai.onnx": 17}, str(info["opset_import"]))
    check("info inputs", info["inputs"] == [{"name": "x", "type": "FLOAT[n, 4]"}], str(info["inputs"]))
    r = run("info", "--stats", "--json", path)
    stats = json.loads(r.stdout)["stats"]
    check("info --stats ops", stats["nodes_by_op_type"] == {"Constant": 1, "MatMul": 1}, str(stats))

    # ls --json: every tensor breadth-first (outer graph first), the Constant's by its output name.
    rows = json.loads(run("ls", "--json", path).stdout)
    check("ls names", [r["name"] for r in rows] == ["w", "names", "c"], str(rows))
    check("ls constant path", rows[2]["path"] == "graph.node[0].attribute[0].t", rows[2]["path"])
    check_dims_spelling(path)

    # get: .npy equal to numpy_helper; rows; STRING refused with a pointer to --raw; no partial files.
    out = folder / "w.npy"
    r = run("get", path, "w", "-o", out)
    expected = numpy_helper.to_array(model.graph.initializer[0])
    check("get w", r.returncode == 0 and np.array_equal(np.load(out), expected))
    r = run("get", path, "w", "--rows", "1:3", "-o", out)
    check("get --rows", r.returncode == 0 and np.array_equal(np.load(out), expected[1:3]))
    r = run("get", path, "c", "-o", out)
    check("get constant", r.returncode == 0 and np.load(out).tolist() == [5, 6])
    r = run("get", path, "names", "-o", folder / "s.npy")
    check("get STRING exits 2 and names --raw", r.returncode == 2 and b"--raw" in r.stderr)
    check("no partial .npy", not (folder / "s.npy").exists())
    r = run("get", path, "names", "--raw", folder / "s.bin")
    parsed = TensorProto()
    parsed.ParseFromString((folder / "s.bin").read_bytes())
    check("get --raw of STRING writes string_data fields", list(parsed.string_data) == [b"a", b"bc"])
    r = run("get", path, "w", "-o", folder / "no" / "such" / "dir.npy")
    check("unwritable output exits 1", r.returncode == 1, str(r.returncode))
    r = run("get", path, "w", "--raw", folder / "w.bin")
    check("get --raw", (folder / "w.bin").read_bytes() == expected.tobytes())

    # synth: python3-onnx loads what it writes, inline and external, and the pattern holds.
    for extra in ([], ["--external-data"]):
        out = folder / "synth.onnx"
        r = run("synth", out, "--layers", 2, "--hidden", 32, "--vocab", 50, *extra)
        m = onnx.load(str(out))
        onnx.checker.check_model(m)
        t = m.graph.initializer[4]
        got = numpy_helper.to_array(t).view(np.uint8).ravel()
        want = np.array([(i * 131 + 4 * 17 + (i >> 12)) & 0xFF for i in range(got.size)], np.uint8)
        check("synth " + " ".join(extra), r.returncode == 0 and np.array_equal(got, want))
        check("synth ls agrees", [x["name"] for x in json.loads(run("ls", "--json", out).stdout)]
              == [i.name for i in m.graph.initializer])
    # Past 4 GB in one file (sparse: holes take no disk): offsets, lookups and row slices hold.
    big = folder / "big.onnx"
    r = run("synth", big, "--layers", 2, "--hidden", 8192, "--ffn", 28672, "--vocab", 1000,
            "--dtype", "float32", "--sparse")
    rows = json.loads(run("ls", "--json", big).stdout)
    last = rows[-1]
    check("a 6.8 GB single file opens", r.returncode == 0 and big.stat().st_size > 6 * 2**30
          and last["offset"] > 2**32, str(last))
    r = run("get", big, last["name"], "--rows", "999:1000", "-o", folder / "row.npy")
    row = np.load(folder / "row.npy") if r.returncode == 0 else None
    check("get --rows past 4 GB", row is not None and row.shape == (1, 8192) and not row.any())
    big.unlink()
    (folder / "row.npy").unlink()
    # One tensor of more than 4 GiB: its message's length does not fit 32 bits.
    r = run("synth", big, "--layers", 1, "--hidden", 8192, "--ffn", 16, "--vocab", 140000,
            "--dtype", "float32", "--sparse")
    embed = json.loads(run("ls", "--json", big).stdout)[0]
    check("a tensor over 4 GiB opens", r.returncode == 0 and embed["bytes"] > 2**32, str(embed))
    r = run("get", big, embed["name"], "--rows", "139999:140000", "-o", folder / "row.npy")
    row = np.load(folder / "row.npy") if r.returncode == 0 else None
    check("get --rows of a tensor over 4 GiB", row is not None and row.shape == (1, 8192))
    big.unlink()
    (folder / "row.npy").unlink()
    r = run("synth", folder / "bad.onnx", "--layers", 1, "--hidden", 0)
    check("synth --hidden 0 exits 2", r.returncode == 2 and not (folder / "bad.onnx").exists())

    check_load(folder)
    check_help_examples(folder / "examples")

    for f in folder.iterdir():
        f.unlink()
    folder.rmdir()
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
