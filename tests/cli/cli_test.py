"""The onnxmap command from the outside: exit codes, one-line errors, and info/ls/get output
checked against python3-onnx on models it builds."""
import json
import os
import pathlib
import re
import signal
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

# Every verb whose --help shows examples, in the order a newcomer would try them.
EXAMPLE_VERBS = ("synth", "info", "ls", "graph", "dump", "get", "convert", "check", "hash",
                 "verify", "diff", "load", "stats", "view")


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """(folder, path, model): a float initializer, a string initializer and a Constant node."""
    folder = tmp_path_factory.mktemp("small")
    weights = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "w")
    names = helper.make_tensor("names", TensorProto.STRING, [2], [b"a", b"bc"])
    const = helper.make_node("Constant", [], ["c"],
                             value=numpy_helper.from_array(np.array([5, 6], dtype=np.int64), ""))
    node = helper.make_node("MatMul", ["x", "w"], ["y"])
    graph = helper.make_graph([const, node], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])],
                              initializer=[weights, names])
    model = helper.make_model(graph, producer_name="cli-test",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.model_version = 3
    path = folder / "m.onnx"
    onnx.save(model, str(path))
    return folder, path, model


# Usage errors exit 2; invalid models exit 1 with one line naming the file and byte.
@pytest.mark.parametrize("args", [(), ("frobnicate",), ("get", "MODEL")],
                         ids=["no verb", "unknown verb", "get without a tensor"])
def test_usage_error_exits_2(onnxmap, small, args):
    r = onnxmap(*[small[1] if a == "MODEL" else a for a in args])
    assert r.returncode == 2, r.stderr.decode()


def test_garbage_exits_1_with_one_line_naming_file_and_byte(onnxmap, tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x0a\xff\xff\xff\xff\x0f")
    r = onnxmap("ls", garbage)
    lines = r.stderr.decode().strip().splitlines()
    assert r.returncode == 1
    assert len(lines) == 1 and "garbage.onnx" in lines[0] and "byte" in lines[0], lines


def test_missing_file_exits_1(onnxmap, tmp_path):
    assert onnxmap("info", tmp_path / "nope.onnx").returncode == 1


def test_unknown_tensor_exits_1(onnxmap, small, tmp_path):
    r = onnxmap("get", small[1], "nope", "-o", tmp_path / "x.npy")
    err = r.stderr.decode()
    # Said once, truly: a model, not a bare TensorProto; no close name to offer for "nope".
    assert r.returncode == 1 and "no tensor named 'nope'" in err and "TensorProto" not in err and \
        "did you mean" not in err and len(err.strip().splitlines()) == 1, err


def test_mistyped_tensor_suggests_the_closest_names(onnxmap, small, tmp_path):
    r = onnxmap("get", small[1], "ww", "-o", tmp_path / "x.npy")
    assert r.returncode == 1 and "did you mean 'w'?" in r.stderr.decode(), r.stderr.decode()


# Values the command validates while running are usage errors too, in the option's words.
@pytest.mark.parametrize("args, words", [
    (("get", "MODEL", "w", "--rows", "5:2"), "--rows: 5:2 is not within w's rows 0:4"),
    (("get", "MODEL", "w", "--rows", "0:9"), "--rows: 0:9 is not within w's rows 0:4"),
    (("get", "MODEL", "w", "--rows", "a:b"), "--rows: expected A:B"),
    (("load", "MODEL", "--shard", "3/2"), "--shard: 3/2: RANK must be below RANKS"),
    (("load", "MODEL", "--shard", "3-8"), "--shard: expected RANK/RANKS"),
], ids=["rows reversed", "rows past the end", "rows not numbers", "rank past ranks",
        "shard not a fraction"])
def test_values_out_of_range_exit_2_in_the_options_words(onnxmap, small, tmp_path, args, words):
    r = onnxmap(*[small[1] if a == "MODEL" else a for a in args], "-o", tmp_path / "x.npy") \
        if args[0] == "get" else onnxmap(*[small[1] if a == "MODEL" else a for a in args])
    err = r.stderr.decode()
    assert r.returncode == 2 and words in err and "slice_rows" not in err, err
    assert not (tmp_path / "x.npy").exists()


def test_info_json_as_python3_onnx(onnxmap, small):
    _, path, model = small
    info = json.loads(onnxmap("info", "--json", path).stdout)
    assert info["ir_version"] == model.ir_version
    assert info["producer_name"] == "cli-test"
    assert info["model_version"] == "3"
    assert info["opset_import"] == {"ai.onnx": 17}
    assert info["inputs"] == [{"name": "x", "type": "FLOAT[n, 4]"}]


def test_a_shape_is_spelled_one_way_by_every_verb(onnxmap, small):
    """ls, graph and info spell dims and shapes "[4, 3]"."""
    text = {verb: onnxmap(verb, small[1]).stdout.decode() for verb in ("ls", "graph", "info")}
    ls_w = next((line.split() for line in text["ls"].splitlines() if line.startswith("w ")), [])
    assert "[4," in ls_w and "3]" in ls_w, text["ls"]
    assert "init   w: FLOAT[4, 3]" in text["graph"], text["graph"]
    assert "input  x: FLOAT[n, 4]" in text["graph"], text["graph"]
    assert "x  FLOAT[n, 4]" in text["info"], text["info"]


def test_info_stats_ops(onnxmap, small):
    stats = json.loads(onnxmap("info", "--stats", "--json", small[1]).stdout)["stats"]
    assert stats["nodes_by_op_type"] == {"Constant": 1, "MatMul": 1}, stats


def test_ls_json_breadth_first_constant_by_output_name(onnxmap, small):
    rows = json.loads(onnxmap("ls", "--json", small[1]).stdout)
    assert [r["name"] for r in rows] == ["w", "names", "c"], rows
    assert rows[2]["path"] == "graph.node[0].attribute[0].t"


def w_array(model):
    return numpy_helper.to_array(model.graph.initializer[0])


def test_get_equals_numpy_helper(onnxmap, small, tmp_path):
    _, path, model = small
    r = onnxmap("get", path, "w", "-o", tmp_path / "w.npy")
    assert r.returncode == 0, r.stderr.decode()
    assert np.array_equal(np.load(tmp_path / "w.npy"), w_array(model))


def test_get_rows(onnxmap, small, tmp_path):
    _, path, model = small
    r = onnxmap("get", path, "w", "--rows", "1:3", "-o", tmp_path / "w.npy")
    assert r.returncode == 0, r.stderr.decode()
    assert np.array_equal(np.load(tmp_path / "w.npy"), w_array(model)[1:3])


def test_get_constant(onnxmap, small, tmp_path):
    r = onnxmap("get", small[1], "c", "-o", tmp_path / "c.npy")
    assert r.returncode == 0, r.stderr.decode()
    assert np.load(tmp_path / "c.npy").tolist() == [5, 6]


def test_get_string_exits_2_naming_raw_and_leaves_no_partial_file(onnxmap, small, tmp_path):
    r = onnxmap("get", small[1], "names", "-o", tmp_path / "s.npy")
    assert r.returncode == 2 and b"--raw" in r.stderr, r.stderr.decode()
    assert not (tmp_path / "s.npy").exists(), "a partial .npy was left"


def test_get_raw_of_string_writes_string_data_fields(onnxmap, small, tmp_path):
    onnxmap("get", small[1], "names", "--raw", tmp_path / "s.bin")
    parsed = TensorProto()
    parsed.ParseFromString((tmp_path / "s.bin").read_bytes())
    assert list(parsed.string_data) == [b"a", b"bc"]


def test_unwritable_output_exits_1(onnxmap, small, tmp_path):
    r = onnxmap("get", small[1], "w", "-o", tmp_path / "no" / "such" / "dir.npy")
    assert r.returncode == 1, r.stderr.decode()


def test_get_raw(onnxmap, small, tmp_path):
    _, path, model = small
    onnxmap("get", path, "w", "--raw", tmp_path / "w.bin")
    assert (tmp_path / "w.bin").read_bytes() == w_array(model).tobytes()


# synth: python3-onnx loads what it writes, inline and external, and the pattern holds.
@pytest.mark.parametrize("extra", [[], ["--external-data"]], ids=["inline", "external-data"])
def test_synth_as_python3_onnx_reads_it(onnxmap, tmp_path, extra):
    out = tmp_path / "synth.onnx"
    r = onnxmap("synth", out, "--layers", 2, "--hidden", 32, "--vocab", 50, *extra)
    m = onnx.load(str(out))
    onnx.checker.check_model(m)
    t = m.graph.initializer[4]
    got = numpy_helper.to_array(t).view(np.uint8).ravel()
    want = np.array([(i * 131 + 4 * 17 + (i >> 12)) & 0xFF for i in range(got.size)], np.uint8)
    assert r.returncode == 0, r.stderr.decode()
    assert np.array_equal(got, want), "the synth pattern"
    listed = [x["name"] for x in json.loads(onnxmap("ls", "--json", out).stdout)]
    assert listed == [i.name for i in m.graph.initializer], "ls agrees with python3-onnx"


def test_single_file_past_4_gb(onnxmap, tmp_path):
    """Past 4 GB in one file (sparse: holes take no disk): offsets, lookups and row slices hold."""
    big = tmp_path / "big.onnx"
    r = onnxmap("synth", big, "--layers", 2, "--hidden", 8192, "--ffn", 28672, "--vocab", 1000,
                "--dtype", "float32", "--sparse")
    try:
        rows = json.loads(onnxmap("ls", "--json", big).stdout)
        last = rows[-1]
        assert r.returncode == 0 and big.stat().st_size > 6 * 2**30 and last["offset"] > 2**32, \
            f"a 6.8 GB single file opens: {last}"
        r = onnxmap("get", big, last["name"], "--rows", "999:1000", "-o", tmp_path / "row.npy")
        row = np.load(tmp_path / "row.npy") if r.returncode == 0 else None
        assert row is not None and row.shape == (1, 8192) and not row.any(), \
            f"get --rows past 4 GB: {r.stderr.decode()}"
    finally:
        big.unlink()


def test_tensor_over_4_gib(onnxmap, tmp_path):
    """One tensor of more than 4 GiB: its message's length does not fit 32 bits."""
    big = tmp_path / "big.onnx"
    r = onnxmap("synth", big, "--layers", 1, "--hidden", 8192, "--ffn", 16, "--vocab", 140000,
                "--dtype", "float32", "--sparse")
    try:
        embed = json.loads(onnxmap("ls", "--json", big).stdout)[0]
        assert r.returncode == 0 and embed["bytes"] > 2**32, f"it opens: {embed}"
        r = onnxmap("get", big, embed["name"], "--rows", "139999:140000", "-o",
                    tmp_path / "row.npy")
        row = np.load(tmp_path / "row.npy") if r.returncode == 0 else None
        assert row is not None and row.shape == (1, 8192), \
            f"get --rows of a tensor over 4 GiB: {r.stderr.decode()}"
    finally:
        big.unlink()


def test_synth_writes_the_ir_version_and_opsets_asked_for(onnxmap, tmp_path):
    out = tmp_path / "imports.onnx"
    r = onnxmap("synth", out, "--layers", 1, "--hidden", 4, "--ir-version", 10,
                "--opset", "ai.onnx=21", "--opset", "com.microsoft=1")
    assert r.returncode == 0, r.stderr.decode()
    model = onnx.load(out)
    assert model.ir_version == 10
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 21), ("com.microsoft", 1)]


@pytest.mark.parametrize("opset", ["com.microsoft", "com.microsoft=0", "ai.onnx=x"])
def test_synth_bad_opset_exits_2(onnxmap, tmp_path, opset):
    r = onnxmap("synth", tmp_path / "bad.onnx", "--layers", 1, "--hidden", 4, "--opset", opset)
    assert r.returncode == 2 and "--opset" in r.stderr.decode(), r.stderr.decode()
    assert not (tmp_path / "bad.onnx").exists()


def test_synth_hidden_0_exits_2(onnxmap, tmp_path):
    r = onnxmap("synth", tmp_path / "bad.onnx", "--layers", 1, "--hidden", 0)
    assert r.returncode == 2 and not (tmp_path / "bad.onnx").exists(), r.stderr.decode()


LOAD_ARRAYS = {f"t{i}": np.arange(i * 1000 + 1, dtype=np.float32) for i in range(5)}


@pytest.fixture(scope="module")
def load_models(tmp_path_factory):
    """{"inline": path, "external": path}: the same five tensors, inline and in external data."""
    folder = tmp_path_factory.mktemp("load")
    graph = helper.make_graph([], "g", [], [], initializer=[
        numpy_helper.from_array(a, name) for name, a in LOAD_ARRAYS.items()])
    model = helper.make_model(graph)
    inline = folder / "inline.onnx"
    onnx.save(model, str(inline))
    external = folder / "external.onnx"
    onnx.save(model, str(external), save_as_external_data=True, location="external.onnx.data",
              size_threshold=0)
    return {"inline": inline, "external": external}


# onnxmap load in every mode reads every tensor's bytes, inline and external; get in every
# --load-mode equals numpy_helper.
@pytest.mark.parametrize("mode", ["map", "read", "direct"])
@pytest.mark.parametrize("layout", ["inline", "external"])
def test_load_mode_reads_every_byte(onnxmap, load_models, layout, mode):
    r = onnxmap("load", load_models[layout], "--mode", mode, "--json")
    out = json.loads(r.stdout) if r.returncode == 0 else {}
    total = sum(a.nbytes for a in LOAD_ARRAYS.values())
    assert out.get("tensors") == len(LOAD_ARRAYS) and out.get("bytes") == total \
        and out.get("seconds", -1) >= 0 and 0 <= out.get("bytes_copied", -1) <= total \
        and min(out.get("cpu_user_seconds", -1), out.get("cpu_system_seconds", -1)) >= 0, \
        f"{out} {r.stderr.decode()}"


@pytest.mark.parametrize("mode", ["map", "read", "direct"])
@pytest.mark.parametrize("layout", ["inline", "external"])
def test_get_load_mode_equals_numpy(onnxmap, load_models, layout, mode, tmp_path):
    r = onnxmap("get", load_models[layout], "t3", "--load-mode", mode, "-o", tmp_path / "t3.npy")
    assert r.returncode == 0, r.stderr.decode()
    assert np.array_equal(np.load(tmp_path / "t3.npy"), LOAD_ARRAYS["t3"])


@pytest.mark.parametrize("layout", ["inline", "external"])
def test_load_filter(onnxmap, load_models, layout):
    r = onnxmap("load", load_models[layout], "--filter", "t[12]", "--threads", 1)
    assert r.returncode == 0 and r.stdout.startswith(b"2 tensors"), r.stdout.decode()


def test_load_mode_mmap_exits_2(onnxmap, load_models):
    assert onnxmap("load", load_models["inline"], "--mode", "mmap").returncode == 2


def test_no_mmap_with_load_mode_exits_2(onnxmap, load_models):
    assert onnxmap("ls", load_models["inline"], "--no-mmap", "--load-mode",
                   "direct").returncode == 2


@pytest.mark.parametrize("mode", ["map", "read", "direct"])
@pytest.mark.parametrize("layout", ["inline", "external"])
def test_load_to_host_device(onnxmap, load_models, layout, mode):
    r = onnxmap("load", load_models[layout], "--device", "host", "--mode", mode, "--json")
    out = json.loads(r.stdout) if r.returncode == 0 else {}
    total = sum(a.nbytes for a in LOAD_ARRAYS.values())
    assert out.get("tensors") == len(LOAD_ARRAYS) and out.get("bytes") == total \
        and out.get("device") == "host" and out.get("cpu_seconds", -1) >= 0 \
        and out.get("path") in ("registered", "pinned", "registered+pinned") \
        and out.get("bytes_staged", 0) + out.get("bytes_registered", 0) == total, \
        f"{out} {r.stderr.decode()}"
    if mode == "map":
        assert out["path"] == "registered"


def test_load_to_host_device_text(onnxmap, load_models):
    r = onnxmap("load", load_models["external"], "--device", "host", text=True)
    assert r.returncode == 0 and r.stdout.startswith(f"{len(LOAD_ARRAYS)} tensors") \
        and " GB/s to host (path " in r.stdout and "; CPU " in r.stdout, r.stdout + r.stderr


# Without a CUDA runtime (CI), --device cuda:0 says what it looked for, where, and exits 1;
# with a runtime but no GPU, the call that failed.
def test_load_to_cuda_without_runtime_exits_1(onnxmap, load_models, tmp_path):
    missing = tmp_path / "libcudart.so.12"
    env = dict(os.environ, ONNXMAP_CUDART=str(missing))
    r = onnxmap("load", load_models["inline"], "--device", "cuda:0", text=True, env=env)
    if r.returncode == 0:
        pytest.skip("a CUDA runtime and device are present")
    # A runtime found elsewhere (torch's bundled copy) without a driver fails a named call.
    found = "no CUDA runtime found" in r.stderr and str(missing) in r.stderr
    assert r.returncode == 1 and (found or " failed on cuda:0: " in r.stderr) \
        and r.stderr.count("\n") == 1, r.stderr


def test_load_to_unknown_device_exits_1(onnxmap, load_models):
    r = onnxmap("load", load_models["inline"], "--device", "tpu", text=True)
    assert r.returncode == 1 and "expected cuda, cuda:N or host" in r.stderr, r.stderr


def test_load_of_missing_file_exits_1(onnxmap, tmp_path):
    assert onnxmap("load", tmp_path / "nope.onnx").returncode == 1


# An error at the top of a file says what to do: a file cut short, a bare TensorProto.
def test_cut_file_hint(onnxmap, load_models, tmp_path):
    whole = load_models["inline"].read_bytes()
    (tmp_path / "cut.onnx").write_bytes(whole[:len(whole) // 2])
    r = onnxmap("info", tmp_path / "cut.onnx")
    assert r.returncode == 1 and b"; the file ends before a field it declares: it may be cut " \
        b"short" in r.stderr, r.stderr.decode()


def test_tensor_proto_read_as_model_hints_dump(onnxmap, tmp_path):
    tensor = numpy_helper.from_array(np.array(["a", "bc"], dtype=object), "s")
    (tmp_path / "tensor.pb").write_bytes(tensor.SerializeToString())
    r = onnxmap("info", tmp_path / "tensor.pb")
    assert r.returncode == 1 and b"dump --message TensorProto" in r.stderr, r.stderr.decode()


def test_unknown_verb_is_named_exit_2(onnxmap):
    r = onnxmap("frob", "model.onnx")
    assert r.returncode == 2 and b"unknown verb 'frob'" in r.stderr, r.stderr.decode()


def test_help_shows_an_example(onnxmap):
    top = onnxmap("--help", text=True).stdout
    assert "Example:\n  onnxmap " in top, top


def help_examples(onnxmap, verb):
    """The example lines of `onnxmap VERB --help`, or None where it shows none."""
    text = onnxmap(verb, "--help", text=True).stdout
    lines = re.search(r"^Examples:\n((?:  .*\n)+)", text, re.M)
    return [line.strip() for line in lines.group(1).splitlines()] if lines else None


@pytest.mark.parametrize("verb", EXAMPLE_VERBS)
def test_verb_help_shows_examples(onnxmap, verb):
    assert help_examples(onnxmap, verb) is not None, onnxmap(verb, "--help", text=True).stdout


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


def test_help_examples_run_as_written(onnxmap, tmp_path):
    """Each example without a URL runs as written (bash, this build's onnxmap first on PATH), in
    the order a newcomer would try them, in one empty folder: one example may use the files an
    earlier one made, so they run in one case, and it names every one that fails."""
    env = dict(os.environ, PATH=str(pathlib.Path(onnxmap.path).parent) + os.pathsep
               + os.environ["PATH"])
    env.pop("DISPLAY", None), env.pop("WAYLAND_DISPLAY", None)  # no browser opened by `view`
    ran, failed = 0, []
    for verb in EXAMPLE_VERBS:
        for line in help_examples(onnxmap, verb) or []:
            if "://" in line:
                continue
            r = run_example(line, tmp_path, env)
            ran += 1
            if r.returncode != 0:
                failed.append(f"{line}: exit {r.returncode}: {r.stderr.decode()[-300:]}")
    assert ran > 0, "no example ran"
    assert not failed, "examples that fail as written:\n" + "\n".join(failed)
