"""Whole-file operations: peek, check, save, convert (the GIL is released while they run)."""
import dataclasses
import os
from typing import Optional

from . import _onnxmap
from .model import open_options


@dataclasses.dataclass(frozen=True)
class Problem:
    """One problem check() found: its kind ("undefined_input", "payload", ...), the field path,
    what is wrong, and the byte offset in the model file (None where unknown)."""
    kind: str
    path: str
    detail: str
    offset: Optional[int]

    def __str__(self):
        return f"{self.path}: {self.detail}" if self.path else self.detail


def peek(path, **options):
    """The model's own fields and the main graph's inputs and outputs, without indexing tensors
    or walking nodes: an onnxmap.ModelSummary. Takes open()'s keyword arguments."""
    return _onnxmap._peek(os.fspath(path), **open_options(**options))


def check(path, *, read_data=False, **options):
    """Every problem of the model at `path`, as a list of Problem (empty: none found). A file
    that cannot be opened is one "structure" problem, not an exception. read_data reads every
    payload (BOOL values, checksums). Takes open()'s keyword arguments."""
    found = _onnxmap._check(os.fspath(path), read_data=read_data, **open_options(**options))
    return [Problem(*problem) for problem in found]


def _save_options(external_data, location, size_threshold, one_file_per_tensor,
                  max_external_file_size, align, convert_attribute, durable, progress,
                  data_format=None, weights=None, checksum=None):
    """The save options given; None leaves the library's default (SaveOptions). `weights`: the
    keyword arguments of weights_from (see convert())."""
    options = dict(external_data=external_data, data_format=data_format, location=location,
                   size_threshold=size_threshold, one_file_per_tensor=one_file_per_tensor,
                   max_external_file_size=max_external_file_size, align=align,
                   convert_attribute=convert_attribute, durable=durable, progress=progress,
                   checksum=checksum, **(weights or {}))
    if options.get("weights_from") is not None:
        options["weights_from"] = os.fspath(options["weights_from"])
    return {key: value for key, value in options.items() if value is not None}


def save(model, path, *, external_data=None, location=None, size_threshold=None,
         one_file_per_tensor=None, max_external_file_size=None, align=None,
         convert_attribute=None, durable=None, progress=None, data_format=None, checksum=None):
    """Saves an open onnxmap.Model to `path`, with the C++ SaveOptions under the same names and
    its defaults for those left out: inline (external_data False, the default) or with tensors
    of at least size_threshold bytes (1024) in external data files (location, one file per
    tensor with one_file_per_tensor, files of at most max_external_file_size bytes (0: no
    limit), payloads aligned to align bytes (4096)), attribute tensors too with
    convert_attribute, fsync'd with durable. progress(done, total) is called now and then.
    data_format="safetensors" writes the data files as safetensors (location default
    model.safetensors; max_external_file_size: the shard size); a path ending in ".safetensors"
    gets the tensors alone. checksum=True gives each external tensor ONNX's checksum key, the
    SHA-1 of its whole data file (hashed before the files are written: the payloads are read
    twice). Files appear complete or not at all. Returns a dict of what was written."""
    return _onnxmap._save(model, os.fspath(path), **_save_options(
        external_data, location, size_threshold, one_file_per_tensor, max_external_file_size,
        align, convert_attribute, durable, progress, data_format, checksum=checksum))


def convert(src, dst, *, external_data=None, location=None, size_threshold=None,
            one_file_per_tensor=None, max_external_file_size=None, align=None,
            convert_attribute=None, durable=None, progress=None, data_format=None,
            weights_from=None, weights_names=None, compare_all_bytes=None, match_content=None,
            share_transposed=None, checksum=None, **options):
    """Opens `src` and saves it as `dst` (as `onnxmap convert`). external_data=None keeps the
    data where the source keeps it; True or False moves it out or inline. Save options as in
    save() (data_format="safetensors", or a dst ending in ".safetensors" for the tensors alone;
    checksum), open options as in open().

    weights_from (a .safetensors file, an index or a folder, in dst's folder or below) points
    each initializer found there into those files, writing none of its bytes (SaveOptions::
    weights_from): found by name (its own, or the one weights_names, a dict, gives), its type,
    shape and values checked (at 16 places, all with compare_all_bytes); else by content
    (match_content, default True), straight or transposed; share_transposed replaces a
    transposed copy by the checkpoint's tensor and a Transpose node. Returns a dict of what was
    written; its "shared" counts the tensors and bytes found by_name, by_content, transposed,
    transposed_kept and the model's own."""
    weights = dict(weights_from=weights_from, weights_names=weights_names,
                   compare_all_bytes=compare_all_bytes, match_content=match_content,
                   share_transposed=share_transposed)
    return _onnxmap._convert(os.fspath(src), os.fspath(dst), **_save_options(
        external_data, location, size_threshold, one_file_per_tensor, max_external_file_size,
        align, convert_attribute, durable, progress, data_format, weights, checksum),
        **open_options(**options))
