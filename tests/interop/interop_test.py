"""python3-onnx judges what onnxmap writes.

For every fixture of tests/conformance/make_fixtures.py (and every .onnx of the corpus, with
fewer variants), `onnxmap convert` writes each variant (unchanged, external data with every
option, inline); then
  - a model with nothing to move comes out byte for byte;
  - onnx.load of each variant (external data loaded) equals onnx.load of the original;
  - onnx.checker.check_model passes on each variant of a model it passes on;
  - `onnxmap dump` of each variant, inlined again, equals `dump` of the original inlined;
  - external payloads sit at multiples of --align, split files respect --max-file-size.
The builder's models (build_models, ONNXMAP_BUILD_MODELS) must equal the same model built with
onnx.helper. A 6.8 GB sparse single file converts to external data and back (holes stay holes)
and reads back the same past 4 GB. A write that fails midway (a file size limit standing in for
a full disk) leaves no file.
"""
import json
import os
import resource
import shutil
import subprocess

import onnx
import pytest
from google.protobuf import message as pb_message

import builder_expected

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


def run(*args, **kw):
    return subprocess.run([str(a) for a in args], capture_output=True, **kw)


def is_repeated(field):
    """protobuf 7 dropped FieldDescriptor.label for is_repeated (which 3.x lacks)."""
    if hasattr(field, "is_repeated"):
        return field.is_repeated
    return field.label == field.LABEL_REPEATED


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
            for item in (value if is_repeated(field) else [value]):
                if isinstance(item, pb_message.Message):
                    walk(item)
    walk(model)
    return model


def same_message(a, b):
    """Field for field, NaN payloads included (NaN != NaN in protobuf's ==): python's protobuf
    serializes in field-number order, so equal messages give equal bytes."""
    return a.SerializeToString() == b.SerializeToString()


def checker_verdict(path):
    """onnx.checker's message on the model at `path`, or None when it accepts it."""
    try:
        onnx.checker.check_model(str(path))
    except Exception as e:  # noqa: BLE001 - any checker complaint
        return str(e)
    return None


def checker_passes(path):
    return checker_verdict(path) is None


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


class Reference:
    """What a source model's variants are judged against: onnx.load of it, `dump` of it inlined,
    and whether onnx.checker passes it."""

    def __init__(self, onnxmap, source, folder):
        try:
            self.model = normalized(onnx.load(str(source)))
        except Exception as e:  # noqa: BLE001
            pytest.skip(f"python3-onnx cannot load {source}: {e}")
        self.has_external = any(
            t.data_location == onnx.TensorProto.EXTERNAL for t in
            onnx.external_data_helper._get_all_tensors(onnx.load(str(source),
                                                                 load_external_data=False)))
        inline_ref = folder / f"{source.name}.ref.onnx"
        run(onnxmap, "convert", source, inline_ref, "--inline")
        self.dump = dump(onnxmap, inline_ref)
        self.checker_ok = checker_passes(source)


@pytest.fixture(scope="session")
def reference(onnxmap, tmp_path_factory):
    """reference(source): the Reference of a source model, made once per process."""
    made = {}

    def get(source):
        if source not in made:
            made[source] = Reference(onnxmap, source, tmp_path_factory.mktemp("reference"))
        return made[source]
    return get


def assert_convert_unchanged(onnxmap, reference, source, out):
    ref = reference(source)
    same = out / source.name
    r = run(onnxmap, "convert", source, same)
    assert r.returncode == 0, r.stderr.decode()
    if not ref.has_external:
        assert same.read_bytes() == source.read_bytes(), \
            "a model with nothing to move comes out byte for byte"


def assert_variant(onnxmap, reference, source, out, variant):
    ref = reference(source)
    args = VARIANTS[variant]
    target = out / source.name
    r = run(onnxmap, "convert", source, target, *args)
    assert r.returncode == 0, f"convert: {r.stderr.decode()}"
    got = normalized(onnx.load(str(target)))
    assert same_message(got, ref.model), "onnx.load of it differs from onnx.load of the original"
    if ref.checker_ok:
        assert checker_passes(target), "onnx.checker passes the original, not this variant"
    inlined = target.parent / "inlined.onnx"
    run(onnxmap, "convert", target, inlined, "--inline")
    assert dump(onnxmap, inlined) == ref.dump, "dump of it inlined differs from the original's"
    if "--external-data" in " ".join(args):
        align = int(args[args.index("--align") + 1]) if "--align" in args else 4096
        cap = 3072 if "--max-file-size" in args else 0
        problems = external_layout_problems(target, align, cap)
        assert not problems, "layout: " + "; ".join(problems[:5])


def test_fixture_convert_unchanged(onnxmap, reference, fixture_model, tmp_path):
    assert_convert_unchanged(onnxmap, reference, fixture_model, tmp_path)


@pytest.mark.parametrize("variant", VARIANTS)
def test_fixture_variant(onnxmap, reference, fixture_model, variant, tmp_path):
    assert_variant(onnxmap, reference, fixture_model, tmp_path, variant)


def test_corpus_convert_unchanged(onnxmap, reference, corpus_model, tmp_path):
    assert_convert_unchanged(onnxmap, reference, corpus_model, tmp_path)


@pytest.mark.parametrize("variant", CORPUS_VARIANTS)
def test_corpus_variant(onnxmap, reference, corpus_model, variant, tmp_path):
    assert_variant(onnxmap, reference, corpus_model, tmp_path, variant)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The folder build_models wrote its models into."""
    build_models = os.environ.get("ONNXMAP_BUILD_MODELS")
    if not build_models:
        pytest.fail("ONNXMAP_BUILD_MODELS is not set: it names tests/interop/build_models.cpp's "
                    "program (tests/meson.build sets it)", pytrace=False)
    folder = tmp_path_factory.mktemp("builder")
    r = run(build_models, folder)
    assert r.returncode == 0, f"build_models fails: {r.stderr.decode()}"
    return folder


@pytest.mark.parametrize("name", ["every.onnx", "every_ext.onnx"])
def test_builder_equals_onnx_helper(built, name):
    expected = normalized(builder_expected.every())
    got = normalized(onnx.load(str(built / name)))
    assert same_message(got, expected), f"\n--- got\n{got}\n--- expected\n{expected}"[:4000]
    assert checker_passes(built / name), "onnx.checker refuses it"


def test_builder_external_layout(built):
    problems = external_layout_problems(built / "every_ext.onnx", 64, 0)
    assert not problems, "; ".join(problems)


def test_failed_write_leaves_no_file(onnxmap, tmp_path):
    source = tmp_path / "real.onnx"
    run(onnxmap, "synth", source, "--layers", "2", "--hidden", "256")
    dest = tmp_path / "failed"
    dest.mkdir()

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.RLIM_INFINITY))
    r = run(onnxmap, "convert", source, dest / "m.onnx", "--external-data", preexec_fn=limit)
    err = r.stderr.decode()
    assert r.returncode == 1 and "m.onnx.data" in err, f"exit 1 with a message: {err}"
    assert list(dest.iterdir()) == [], "a failed write leaves no file"


@pytest.fixture(scope="module")
def refuse(onnxmap, tmp_path_factory):
    source = tmp_path_factory.mktemp("refuse") / "refuse.onnx"
    run(onnxmap, "synth", source, "--layers", "1", "--hidden", "64")
    return source


def test_convert_onto_its_own_input_exits_1_and_leaves_it_intact(onnxmap, refuse):
    before = refuse.read_bytes()
    r = run(onnxmap, "convert", refuse, refuse)
    assert r.returncode == 1 and b"read from" in r.stderr, r.stderr.decode()
    assert refuse.read_bytes() == before, "the input changed"


def test_a_bad_size_is_a_usage_error(onnxmap, refuse, tmp_path):
    r = run(onnxmap, "convert", refuse, tmp_path / "x.onnx", "--align", "12Q")
    assert r.returncode == 2, r.stderr.decode()


def test_inline_with_external_data_is_a_usage_error(onnxmap, refuse, tmp_path):
    r = run(onnxmap, "convert", refuse, tmp_path / "y.onnx", "--inline", "--external-data")
    assert r.returncode == 2, r.stderr.decode()


def test_a_location_outside_the_folder_exits_1(onnxmap, refuse, tmp_path):
    r = run(onnxmap, "convert", refuse, tmp_path / "z.onnx", "--external-data=../up.data")
    assert r.returncode == 1 and b".." in r.stderr, r.stderr.decode()


@pytest.fixture(scope="module")
def big(onnxmap, tmp_path_factory):
    """A 6.8 GB sparse single file (big), converted to external data in files of 2 GB (ext) and
    back inline (back); the exit statuses and errors of the two converts. Removed afterwards."""
    out = tmp_path_factory.mktemp("big")
    big = out / "big.onnx"
    run(onnxmap, "synth", big, "--layers", "2", "--hidden", "8192", "--ffn", "28672", "--vocab",
        "32000", "--dtype", "float32", "--sparse")
    ext = out / "big-ext" / "big.onnx"
    ext.parent.mkdir()
    back = out / "big-back.onnx"
    r1 = run(onnxmap, "convert", big, ext, "--external-data", "--max-file-size", "2G")
    r2 = run(onnxmap, "convert", ext, back, "--inline")
    yield big, ext, back, (r1, r2)
    shutil.rmtree(out)


def test_big_converts_out_and_back(big):
    r1, r2 = big[3]
    assert r1.returncode == 0 and r2.returncode == 0, r1.stderr.decode() + r2.stderr.decode()


def test_big_inlined_file_is_over_4_gb_and_the_same_size(big):
    source, _, back, _ = big
    assert back.stat().st_size == source.stat().st_size > 4 << 30


def test_big_holes_stayed_holes(big):
    back = big[2]
    assert back.stat().st_blocks * 512 < 64 << 20, f"{back.stat().st_blocks * 512} bytes on disk"


def test_big_every_tensor_reads_back_the_same(onnxmap, big):
    source, _, back, _ = big
    a = json.loads(run(onnxmap, "ls", source, "--json").stdout)
    b = json.loads(run(onnxmap, "ls", back, "--json").stdout)
    assert [{k: v for k, v in t.items() if k != "offset"} for t in a] == \
        [{k: v for k, v in t.items() if k != "offset"} for t in b]


def test_big_split_data_files_are_numbered(big):
    data_files = sorted(p.name for p in big[1].parent.iterdir())
    assert "big.onnx.data.00002" in data_files, data_files
