"""onnxmap.open: the entry point, the options every function that opens a model takes, and
Model.ort_session."""
import os
from typing import Optional, Union

from . import _onnxmap


def open_options(mode=None, max_depth=None, max_tensors=None, max_messages=None,
                 allow_external_outside_folder=None, collect_payload_errors=None,
                 cache_dir=None, timeout_seconds=None, ca_file=None, retry_attempts=None,
                 retry_base_seconds=None, retry_max_wait_seconds=None,
                 retry_total_wait_seconds=None):
    """The keyword arguments of open(), peek(), check(), convert() and safe_open() that say how a
    model is opened, named as C++'s OpenOptions and RemoteOptions name them. None leaves the
    library's default, which is defined once, in OpenOptions."""
    given = dict(mode=mode, max_depth=max_depth, max_tensors=max_tensors,
                 max_messages=max_messages,
                 allow_external_outside_folder=allow_external_outside_folder,
                 collect_payload_errors=collect_payload_errors, cache_dir=cache_dir,
                 timeout_seconds=timeout_seconds, ca_file=ca_file, retry_attempts=retry_attempts,
                 retry_base_seconds=retry_base_seconds,
                 retry_max_wait_seconds=retry_max_wait_seconds,
                 retry_total_wait_seconds=retry_total_wait_seconds)
    return {key: os.fspath(value) if key in ("cache_dir", "ca_file") else value
            for key, value in given.items() if value is not None}


def open(path: Union[str, "os.PathLike[str]"], *, mode: Optional[str] = None,
         max_depth: Optional[int] = None, max_tensors: Optional[int] = None,
         max_messages: Optional[int] = None,
         allow_external_outside_folder: Optional[bool] = None,
         collect_payload_errors: Optional[bool] = None,
         cache_dir: Union[str, "os.PathLike[str]", None] = None,
         timeout_seconds: Optional[int] = None,
         ca_file: Union[str, "os.PathLike[str]", None] = None,
         retry_attempts: Optional[int] = None,
         retry_base_seconds: Optional[float] = None,
         retry_max_wait_seconds: Optional[float] = None,
         retry_total_wait_seconds: Optional[float] = None) -> _onnxmap.Model:
    """Opens the ONNX model at `path` and returns an onnxmap.Model (also a context manager).

    mode: "map" (the default) maps the file (pages are read when touched); "read" copies it into
    memory (safe if the file may be truncated while open); "direct" copies it with O_DIRECT,
    around the page cache (buffered where the file system refuses O_DIRECT). The limits and
    policies are C++'s OpenOptions: max_depth (64), max_tensors (2**28), max_messages (2**26),
    allow_external_outside_folder (external data outside the model's folder; False),
    collect_payload_errors (open a model whose payloads are bad; those tensors have storage
    "invalid"; False). The GIL is released while the file is indexed.
    `path` may be a URL (http://, https://, s3://, hf://: docs/remote.md): the metadata is
    fetched at open and each tensor's bytes when touched; cache_dir (a folder) keeps the fetched
    metadata for the next open, timeout_seconds (30) bounds a stalled request, ca_file is a PEM
    file of certificates to trust; credentials come from the environment (ONNXMAP_HTTP_TOKEN,
    the AWS variables and files, HF_TOKEN). Transient failures (HTTP 429, 500, 502, 503, 504, a
    dropped or stalled connection, a cut body) are tried again: retry_attempts (5) attempts per
    request in all, the first retry after up to retry_base_seconds (1.0; random, doubling for
    each further retry), no single wait over retry_max_wait_seconds (20, Retry-After included),
    a request's waits together at most retry_total_wait_seconds (45). model.fetch_stats counts
    the requests and retries.
    Raises onnxmap.Error for an unreadable or malformed file (kind "http" for a server's fault).
    """
    return _onnxmap._open(os.fspath(path), **open_options(
        mode, max_depth, max_tensors, max_messages, allow_external_outside_folder,
        collect_payload_errors, cache_dir, timeout_seconds, ca_file, retry_attempts,
        retry_base_seconds, retry_max_wait_seconds, retry_total_wait_seconds))


def ort_session(self, sess_options=None, providers=None, provider_options=None, **kwargs):
    """An onnxruntime.InferenceSession over this model's mapping, its weights handed over in place
    (onnxmap.ort.InferenceSession, which takes the same arguments; onnxruntime must be
    installed). The session keeps the model open."""
    from .ort import InferenceSession  # onnxruntime is imported only by those who use it
    return InferenceSession(self, sess_options, providers, provider_options, **kwargs)


setattr(_onnxmap.Model, "ort_session", ort_session)  # the stub declares it
