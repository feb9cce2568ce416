"""ONNX Runtime sessions fed from onnxmap's mapping: the weights handed to ONNX Runtime in place.

    import onnxmap.ort
    session = onnxmap.ort.InferenceSession("model.onnx")  # for onnxruntime.InferenceSession(path)
    logits = session.run(None, {"input_ids": ids})[0]

The session is an onnxruntime.InferenceSession. Its graph is the model as onnxmap writes it with
each initializer of at least SIZE_THRESHOLD bytes held in raw_data turned into external data that
names its own bytes in the model file (serialize_in_place), and each initializer ORT can take in
place is given to it as an OrtValue over onnxmap's view of its bytes
(SessionOptions.add_initializer): ORT neither parses nor copies it, and the weights stay in the
page cache, shared by every session and process that maps the file. The rest ORT reads itself, as
from any file: strings and tensors in typed fields (which stay in the graph), sub-byte types, and
a name that two graphs of the model both use. ORT's own copies remain where its options make them
(pre-packed weights, unless "session.disable_prepacking" is "1"; constant folding; a device's
copy). session.onnxmap_stats counts what went which way; docs/ort.md says when this helps.

A URL (http(s)://, s3://, hf://) is fetched once, whole, into a mirror on local disk (a temporary
folder kept while the session lives, or the cache_dir of a Model opened with one), which ORT
names like any file.

The session holds the Model and the arrays ORT reads hold the mapping, so the bytes stay mapped as
long as the session lives: closing the Model meanwhile is safe, as it is with any array taken from
it. A file cut short under a running session is onnxmap's fault rule (docs/format-and-limits.md):
ORT's reads of the lost pages meet SIGBUS, as any plain view's do.
"""
import os
import re
import tempfile
import weakref
from typing import Any

import onnxruntime  # type: ignore[import-untyped]  # (it ships no type information)

from . import _onnxmap
from .model import open as _open

# Tensors smaller than this stay in the graph ORT parses: their copy costs nothing, and graph
# optimizers read small constants (scales, shapes) from the graph.
SIZE_THRESHOLD = 1024

# The first release that resolves a buffer's external data against a folder given in the options
# (onnxruntime pull request 23557).
MINIMUM_VERSION = (1, 21)
_FOLDER_KEY = "session.model_external_initializers_file_folder_path"

# An initializer of the main graph or of a subgraph ("graph.node[2].attribute[0].g.initializer[0]"),
# not of training_info, which ORT does not run.
_INITIALIZER = re.compile(r"^graph(\..*)?\.initializer\[\d+\]$")

# ONNX element types that NumPy has no type for, and whose bytes onnxmap gives as unsigned
# integers of their width: the OrtValue is made with the ONNX type.
_ONNX_TYPE = {"BFLOAT16": 16, "FLOAT8E4M3FN": 17, "FLOAT8E4M3FNUZ": 18, "FLOAT8E5M2": 19,
              "FLOAT8E5M2FNUZ": 20, "FLOAT8E8M0": 24}


def _check_version():
    found = tuple(int(part) for part in re.findall(r"\d+", onnxruntime.__version__)[:2])
    if found < MINIMUM_VERSION or not hasattr(onnxruntime.SessionOptions, "add_initializer"):
        raise _onnxmap.Error(
            f"onnxmap.ort needs onnxruntime {'.'.join(map(str, MINIMUM_VERSION))} or later "
            f"(SessionOptions.add_initializer, and external data of a model given as bytes "
            f"resolved against {_FOLDER_KEY}); this is onnxruntime {onnxruntime.__version__}")


def _shareable(model, threshold):
    """The initializers ORT can take in place, by name, and what is left to ORT, as counts."""
    tensors = [model.tensor_at(i) for i in range(model.tensor_count())]
    tensors = [t for t in tensors if _INITIALIZER.match(t.path)]
    uses = {}
    for t in tensors:
        uses[t.name] = uses.get(t.name, 0) + 1
    shared, left = {}, {"tensors": 0, "bytes": 0}
    for t in tensors:
        referenced = t.storage == "external" or (t.storage == "raw" and t.nbytes >= threshold)
        if referenced and uses[t.name] == 1 and t.is_view and t.dtype is not None:
            shared[t.name] = t
        else:
            left["tensors"] += 1
            left["bytes"] += t.nbytes
    return shared, left


def _ort_value(tensor):
    array = tensor.numpy()
    onnx_type = _ONNX_TYPE.get(tensor.data_type)
    if onnx_type is None:
        return onnxruntime.OrtValue.ortvalue_from_numpy(array)
    return onnxruntime.OrtValue.ortvalue_from_numpy_with_onnx_type(array, onnx_type)


# What each SessionOptions given to a session carries: ORT keeps only pointers to the OrtValues
# added to it, so they (each holding its array, each array its Model) live as long as the
# options do, and a second session over the same options and the same file reuses them.
# options -> {name: ((file, data file, offset, length), OrtValue)}
_ADDED: "weakref.WeakKeyDictionary[Any, dict[str, tuple[tuple[str, str, int, int], Any]]]" = \
    weakref.WeakKeyDictionary()


def _add_initializers(options, model, shared):
    added = _ADDED.setdefault(options, {})
    for name, tensor in shared.items():
        where = (str(model.path), tensor.data_file, tensor.file_offset, tensor.nbytes)
        if name in added:
            if added[name][0] != where:
                raise _onnxmap.Error(
                    f"{model.path}: this SessionOptions already gives ONNX Runtime a tensor "
                    f"named {name!r}, from {added[name][0][0]}: give each model its own "
                    "SessionOptions")
            continue
        value = _ort_value(tensor)
        options.add_initializer(name, value)
        added[name] = (where, value)


def _opened(path_or_model):
    """The model, and the folder made for a URL's mirror (None where none was made here): ORT
    names the files it reads, so a URL's bytes are fetched into a mirror whose files have names,
    kept while the session lives."""
    if isinstance(path_or_model, _onnxmap.Model):
        return path_or_model, None
    if "://" not in os.fspath(path_or_model):
        return _open(path_or_model), None
    mirror = tempfile.TemporaryDirectory(prefix="onnxmap-ort-")
    return _open(path_or_model, cache_dir=mirror.name), mirror


def _folder_and_name(model):
    """The folder ORT resolves external data against and the model file's name in it: the
    model's own, or for a URL its mirror's."""
    path = os.path.abspath(os.fspath(model.path))
    if not os.path.exists(path):
        raise _onnxmap.Error(
            f"{path}: this model was opened by URL without cache_dir, so its mirror's files have "
            "no names for ONNX Runtime to open: give onnxmap.ort the URL itself, or open the "
            "model with cache_dir=FOLDER")
    return os.path.dirname(path), os.path.basename(path)


def _with_path(error, path):
    """ORT's exception `error` again, its message led by the model's path."""
    message = f"{path}: {error}"
    try:
        return type(error)(message)
    except TypeError:  # a type that takes other arguments
        return RuntimeError(message)


class InferenceSession(onnxruntime.InferenceSession):
    """onnxruntime.InferenceSession(path_or_model, ...) with the weights handed over in place.

    path_or_model: a model's path or URL, or an open onnxmap.Model (kept open by the session).
    A URL's bytes are fetched once, whole, into a mirror: a temporary folder removed when the
    session is gone, or for a Model opened by URL, its cache_dir (one is needed).
    sess_options: an onnxruntime.SessionOptions; onnxmap adds the initializers and the folder
    entry to it, so it serves further sessions of the same model file, not of another.
    providers, provider_options and the other keywords go to onnxruntime.InferenceSession.
    size_threshold: raw_data tensors under it stay in the graph ORT parses.

    onnxmap_stats: {"shared": tensors handed over in place, "shared_bytes": their bytes,
    "left_to_ort": initializers ORT reads itself, "left_to_ort_bytes", "graph_bytes": the size
    of the graph given to ORT}."""

    def __init__(self, path_or_model, sess_options=None, providers=None, provider_options=None,
                 *, size_threshold=SIZE_THRESHOLD, **kwargs):
        _check_version()
        model, self._onnxmap_mirror = _opened(path_or_model)
        folder, name = _folder_and_name(model)
        graph = _onnxmap._serialize_in_place(model, name, size_threshold)  # fetches a URL's all
        shared, left = _shareable(model, size_threshold)
        options = sess_options if sess_options is not None else onnxruntime.SessionOptions()
        options.add_session_config_entry(_FOLDER_KEY, folder)
        _add_initializers(options, model, shared)
        try:
            super().__init__(graph, options, providers, provider_options, **kwargs)
        except Exception as error:  # ORT's own types (Fail, InvalidArgument, ...), kept
            raise _with_path(error, model.path) from error
        self.onnxmap_model = model
        self.onnxmap_stats = {"shared": len(shared),
                              "shared_bytes": sum(t.nbytes for t in shared.values()),
                              "left_to_ort": left["tensors"], "left_to_ort_bytes": left["bytes"],
                              "graph_bytes": len(graph)}
