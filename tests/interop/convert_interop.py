#!/usr/bin/python3
"""python3-onnx judges what onnxmap writes.

    convert_interop.py ONNXMAP BUILD_MODELS [--corpus DIR] [--big]

For every fixture of tests/conformance/make_fixtures.py (and every .onnx of the corpus, with
fewer variants), `onnxmap convert` writes each variant (unchanged, external data with every
option, inline); then
  - a model with nothing to move comes out byte for byte;
  - onnx.load of each variant (external data loaded) equals onnx.load of the original;
  - onnx.checker.check_model passes on each variant of a model it passes on;
  - `onnxmap dump` of each variant, inlined again, equals `dump` of the original inlined;
  - external payloads sit at multiples of --align, split files respect --max-file-size.
The builder's models (BUILD_MODELS) must equal the same model built with onnx.helper.
--big converts a 6.8 GB sparse single file to external data and back (holes stay holes) and
checks the result past 4 GB. Also: a write that fails midway (a file size limit standing in for
a full disk) leaves no file. Ends with "N passed, N failed".
"""
import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile

import onnx
from google.protobuf import message as pb_message

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "conformance"))
import make_fixtures  # noqa: E402
import builder_expected  # noqa: E402
from corpus_sample import sample  # noqa: E402

VARIANTS = {
    "external": ["--external-data", "--size-threshold", "0"],
    "external-sub": ["--external-data=data/w.bin", "--size-threshold", "0", "--align", "64",
                     "--convert-attributes"],
    "split": ["--external-data", "--size-threshold", "0", "--max-file-size", "3K", "--align",
              "1"],
    "per-tensor": ["--external-data", "--size-threshold", "0", "--one-file-per-tensor",
                   "--convert-attributes"],
    "inline": ["--inline"],
}
CORPUS_VARIANTS = ("external", "inline")
failures = []
passes = 0


def check(name, ok, detail=""):
    global passes
    if ok:
        passes += 1
    else:
        failures.append(name)
        print(f"FAIL {name} {detail}"[:2000])
    return ok


def run(*args, **kw):
    return subprocess.run([str(a) for a in args], capture_output=True, **kw)


def normalized(model):
    """python3-onnx sets data_location = DEFAULT when it loads external data; an unset field
    means the same."""
    def walk(msg):
        if isinstance(msg, onnx.TensorProto) and msg.HasField("data_location") \
                and msg.data_location == onnx.TensorProto.DEFAULT:
            msg.ClearField("data_location")
        for field, value in msg.ListFields():
            if field.type != field.TYPE_MESSAGE:
                continue
            for item in (value if field.label == field.LABEL_REPEATED else [value]):
                if isinstance(item, pb_message.Message):
                    walk(item)
    walk(model)
    return model


def same_message(a, b):
    """Field for field, NaN payloads included (NaN != NaN in protobuf's ==): python's protobuf
    serializes in field-number order, so equal messages give equal bytes."""
    return a.SerializeToString() == b.SerializeToString()


def checker_passes(path):
    try:
        onnx.checker.check_model(str(path))
        return True
    except Exception:  # noqa: BLE001 - any checker complaint
        return False


def external_layout_problems(path, align, cap):
    model = onnx.load(str(path), load_external_data=False)
    problems, per_file = [], {}
    for tensor in onnx.external_data_helper._get_all_tensors(model):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in tensor.external_data}
        if int(info.get("offset", 0)) % align:
            problems.append(f"{tensor.name} at {info.get('offset')}, not a multiple of {align}")
        per_file.setdefault(info["location"], []).append(int(info["length"]))
    if cap:
        for location, lengths in per_file.items():
            size = (path.parent / location).stat().st_size
            if size > cap and len(lengths) > 1:
                problems.append(f"{location}: {size} bytes over the cap {cap}")
    return problems


def dump(onnxmap, path):
    r = run(onnxmap, "dump", path)
    return json.loads(r.stdout) if r.returncode == 0 else r.stderr.decode()


def check_model_file(onnxmap, source, out, variants):
    name = source.name
    try:
        reference = normalized(onnx.load(str(source)))
    except Exception as e:  # noqa: BLE001
        print(f"skip {source}: python3-onnx cannot load it ({e})")
        return
    has_external = any(t.data_location == onnx.TensorProto.EXTERNAL for t in
                       onnx.external_data_helper._get_all_tensors(
                           onnx.load(str(source), load_external_data=False)))
    same = out / f"{name}.same" / name
    same.parent.mkdir()
    r = run(onnxmap, "convert", source, same)
    check(f"{name} convert", r.returncode == 0, r.stderr.decode())
    if not has_external and r.returncode == 0:
        check(f"{name} unchanged is byte for byte", same.read_bytes() == source.read_bytes())
    inline_ref = out / f"{name}.ref.onnx"
    run(onnxmap, "convert", source, inline_ref, "--inline")
    reference_dump = dump(onnxmap, inline_ref)
    checker_ok = checker_passes(source)
    for variant in variants:
        args = VARIANTS[variant]
        target = out / f"{name}.{variant}" / name
        target.parent.mkdir()
        r = run(onnxmap, "convert", source, target, *args)
        if not check(f"{name} {variant}: convert", r.returncode == 0, r.stderr.decode()):
            continue
        got = normalized(onnx.load(str(target)))
        check(f"{name} {variant}: onnx.load equals the original", same_message(got, reference))
        if checker_ok:
            check(f"{name} {variant}: check_model", checker_passes(target))
        inlined = target.parent / "inlined.onnx"
        run(onnxmap, "convert", target, inlined, "--inline")
        check(f"{name} {variant}: dump of it inlined equals the original's",
              dump(onnxmap, inlined) == reference_dump)
        if "--external-data" in " ".join(args):
            align = int(args[args.index("--align") + 1]) if "--align" in args else 4096
            cap = 3072 if "--max-file-size" in args else 0
            problems = external_layout_problems(target, align, cap)
            check(f"{name} {variant}: layout", not problems, "; ".join(problems[:5]))


def check_builder(build_models, out):
    folder = out / "builder"
    folder.mkdir()
    r = run(build_models, folder)
    check("build_models runs", r.returncode == 0, r.stderr.decode())
    expected = normalized(builder_expected.every())
    for name in ("every.onnx", "every_ext.onnx"):
        got = normalized(onnx.load(str(folder / name)))
        same = same_message(got, expected)
        check(f"builder {name} equals onnx.helper's", same, "" if same else f"\n--- got\n{got}\n--- expected\n{expected}"[:4000])
        check(f"builder {name}: check_model", checker_passes(folder / name))
    problems = external_layout_problems(folder / "every_ext.onnx", 64, 0)
    check("builder external layout", not problems, "; ".join(problems))


def check_failed_write(onnxmap, out):
    source = out / "real.onnx"
    run(onnxmap, "synth", source, "--layers", "2", "--hidden", "256")
    dest = out / "failed"
    dest.mkdir()

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.RLIM_INFINITY))
    r = run(onnxmap, "convert", source, dest / "m.onnx", "--external-data", preexec_fn=limit)
    err = r.stderr.decode()
    check("a failed write exits 1 with a message", r.returncode == 1 and "m.onnx.data" in err, err)
    check("a failed write leaves no file", list(dest.iterdir()) == [], str(list(dest.iterdir())))


def check_refusals(onnxmap, out):
    source = out / "refuse.onnx"
    run(onnxmap, "synth", source, "--layers", "1", "--hidden", "64")
    before = source.read_bytes()
    r = run(onnxmap, "convert", source, source)
    check("convert onto its own input exits 1", r.returncode == 1 and b"read from" in r.stderr,
          r.stderr.decode())
    check("and leaves the input intact", source.read_bytes() == before)
    r = run(onnxmap, "convert", source, out / "x.onnx", "--align", "12Q")
    check("a bad size is a usage error (exit 2)", r.returncode == 2, r.stderr.decode())
    r = run(onnxmap, "convert", source, out / "y.onnx", "--inline", "--external-data")
    check("--inline with --external-data is a usage error", r.returncode == 2, r.stderr.decode())
    r = run(onnxmap, "convert", source, out / "z.onnx", "--external-data=../up.data")
    check("a location outside the folder exits 1", r.returncode == 1 and b".." in r.stderr,
          r.stderr.decode())


def check_big(onnxmap, out):
    big = out / "big.onnx"
    run(onnxmap, "synth", big, "--layers", "2", "--hidden", "8192", "--ffn", "28672", "--vocab",
        "32000", "--dtype", "float32", "--sparse")
    ext = out / "big-ext" / "big.onnx"
    ext.parent.mkdir()
    back = out / "big-back.onnx"
    r1 = run(onnxmap, "convert", big, ext, "--external-data", "--max-file-size", "2G")
    r2 = run(onnxmap, "convert", ext, back, "--inline")
    check("6.8 GB converts out and back", r1.returncode == 0 and r2.returncode == 0,
          r1.stderr.decode() + r2.stderr.decode())
    size = back.stat().st_size
    check("the inlined file is over 4 GB and the same size", size == big.stat().st_size > 4 << 30)
    check("holes stayed holes", back.stat().st_blocks * 512 < 64 << 20,
          f"{back.stat().st_blocks * 512} bytes on disk")
    a = json.loads(run(onnxmap, "ls", big, "--json").stdout)
    b = json.loads(run(onnxmap, "ls", back, "--json").stdout)
    strip = [{k: v for k, v in t.items() if k != "offset"} for t in a]
    check("every tensor reads back the same", strip == [{k: v for k, v in t.items()
                                                        if k != "offset"} for t in b])
    data_files = sorted(p.name for p in ext.parent.iterdir())
    check("split data files are numbered", "big.onnx.data.00002" in data_files, str(data_files))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("onnxmap")
    parser.add_argument("build_models")
    parser.add_argument("--corpus")
    parser.add_argument("--big", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        fixtures = tmp / "fixtures"
        fixtures.mkdir()
        make_fixtures.write_models(fixtures)
        out = tmp / "out"
        out.mkdir()
        for path in sorted(fixtures.rglob("*.onnx")):
            check_model_file(args.onnxmap, path, out, list(VARIANTS))
        check_builder(args.build_models, out)
        check_failed_write(args.onnxmap, out)
        check_refusals(args.onnxmap, out)
        if args.big:
            check_big(args.onnxmap, out)
        if args.corpus:
            corpus = pathlib.Path(args.corpus)
            if not corpus.is_dir():
                print(f"SKIP corpus: {corpus} not found (it lives in ../shared, absent from a "
                      "user's clone)")
            for i, path in enumerate(sample(sorted(corpus.rglob("*.onnx"))) if corpus.is_dir() else []):
                sub = out / f"corpus{i}"
                sub.mkdir()
                check_model_file(args.onnxmap, path, sub, CORPUS_VARIANTS)
    print(f"{passes} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
