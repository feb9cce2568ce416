"""onnxmap.open: the entry point."""
import os

from . import _onnxmap

_DEFAULT_MAX_TENSORS = 1 << 28
_DEFAULT_MAX_MESSAGES = 1 << 26


def open_options(load="map", max_depth=64, max_tensors=_DEFAULT_MAX_TENSORS,
                 max_messages=_DEFAULT_MAX_MESSAGES, allow_external_outside_folder=False,
                 collect_payload_errors=False):
    """The keyword arguments of open(), peek(), check() and convert() that say how a model is
    opened, as the C++ Options name them."""
    return dict(load=load, max_depth=max_depth, max_tensors=max_tensors,
                max_messages=max_messages,
                allow_external_outside_folder=allow_external_outside_folder,
                collect_payload_errors=collect_payload_errors)


def open(path, *, load="map", max_depth=64, max_tensors=_DEFAULT_MAX_TENSORS,
         max_messages=_DEFAULT_MAX_MESSAGES, allow_external_outside_folder=False,
         collect_payload_errors=False):
    """Opens the ONNX model at `path` and returns an onnxmap.Model (also a context manager).

    load: "map" maps the file (pages are read when touched); "read" copies it into memory (safe
    if the file may be truncated while open). The other options are limits and policies of the
    C++ Options: max_depth, max_tensors, max_messages, allow_external_outside_folder (external
    data outside the model's folder), collect_payload_errors (open a model whose payloads are
    bad; those tensors have storage "invalid"). The GIL is released while the file is indexed.
    Raises onnxmap.Error for an unreadable or malformed file.
    """
    return _onnxmap._open(os.fspath(path), **open_options(
        load, max_depth, max_tensors, max_messages, allow_external_outside_folder,
        collect_payload_errors))
