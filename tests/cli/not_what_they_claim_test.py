"""Files that are not what they claim (issue 67, item 5), as every verb meets them: a Git LFS
pointer in place of the model or of its data file (a clone made without `git lfs`) is named as
one, with the object's size and what to run, never "wire type 6 does not exist" or "runs past
the end"; a data file missing where a file beside it differs only by another exporter's naming
(model.onnx_data for model.onnx.data) is named with the file found. Each is one line on stderr
and exit 1, never a crash."""
import pytest

POINTER = (b"version https://git-lfs.github.com/spec/v1\n"
           b"oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
           b"size 1869299712\n")
SAYS_POINTER = ("is a Git LFS pointer to an object of 1869299712 bytes "
                "(sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393)")
# Every verb that opens a model, with what it needs after the model's path; those that read
# tensor data (all but info, graph and dump) meet a data file's pointer too.
VERBS = {"info": [], "graph": [], "dump": [], "ls": [], "check": [],
         "get": ["model.norm.weight", "-o", "out.npy"], "stats": [], "load": [],
         "convert": ["copy.onnx", "--external-data"]}
READ_DATA = ("ls", "check", "get", "stats", "load", "convert")


@pytest.fixture
def folder(onnxmap, tmp_path):
    done = onnxmap("synth", tmp_path / "m.onnx", "--layers", "1", "--hidden", "64",
                   "--external-data")
    assert done.returncode == 0, done.stderr
    return tmp_path


def run(onnxmap, folder, verb, model="m.onnx"):
    return onnxmap(verb, folder / model, *VERBS[verb], text=True, cwd=folder)


@pytest.mark.parametrize("verb", VERBS)
def test_a_pointer_in_place_of_the_model(onnxmap, folder, verb):
    (folder / "m.onnx").write_bytes(POINTER)
    done = run(onnxmap, folder, verb)
    out = done.stdout + done.stderr  # check's findings are on stdout
    assert done.returncode == 1, done
    assert SAYS_POINTER in out and "git lfs pull" in out, out
    assert "wire type" not in out


@pytest.mark.parametrize("verb", READ_DATA)
def test_a_pointer_in_place_of_the_data_file(onnxmap, folder, verb):
    (folder / "m.onnx.data").write_bytes(POINTER)
    done = run(onnxmap, folder, verb)
    out = done.stdout + done.stderr
    assert done.returncode == 1, done
    assert "external data file 'm.onnx.data' " + SAYS_POINTER in out, out
    assert "runs past the end" not in out


@pytest.mark.parametrize("verb", READ_DATA)
def test_a_data_file_under_another_exporters_name(onnxmap, folder, verb):
    (folder / "m.onnx.data").rename(folder / "m.onnx_data")
    done = run(onnxmap, folder, verb)
    out = done.stdout + done.stderr
    assert done.returncode == 1, done
    assert "m.onnx.data' does not exist (the folder holds 'm.onnx_data'" in out, out
    assert "rename it to 'm.onnx.data'" in out


def test_a_real_model_is_not_taken_for_a_pointer(onnxmap, folder):
    """A small text file that only starts like a pointer, or a pointer without its size, is
    read as what it is: not ONNX."""
    (folder / "m.onnx").write_bytes(POINTER.replace(b"size 1869299712\n", b""))
    done = run(onnxmap, folder, "info")
    assert done.returncode == 1 and "Git LFS" not in done.stderr, done.stderr
