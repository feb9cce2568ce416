"""onnxmap.open: the entry point."""
import os

from . import _onnxmap

_DEFAULT_MAX_TENSORS = 1 << 28
_DEFAULT_MAX_MESSAGES = 1 << 26


def open_options(load="map", max_depth=64, max_tensors=_DEFAULT_MAX_TENSORS,
                 max_messages=_DEFAULT_MAX_MESSAGES, allow_external_outside_folder=False,
                 collect_payload_errors=False, cache="", http_timeout=30, http_ca=""):
    """The keyword arguments of open(), peek(), check() and convert() that say how a model is
    opened, as the C++ Options name them (the http ones as RemoteOptions does)."""
    return dict(load=load, max_depth=max_depth, max_tensors=max_tensors,
                max_messages=max_messages,
                allow_external_outside_folder=allow_external_outside_folder,
                collect_payload_errors=collect_payload_errors, cache=os.fspath(cache),
                http_timeout=http_timeout, http_ca=os.fspath(http_ca))


def open(path, *, load="map", max_depth=64, max_tensors=_DEFAULT_MAX_TENSORS,
         max_messages=_DEFAULT_MAX_MESSAGES, allow_external_outside_folder=False,
         collect_payload_errors=False, cache="", http_timeout=30, http_ca=""):
    """Opens the ONNX model at `path` and returns an onnxmap.Model (also a context manager).

    load: "map" maps the file (pages are read when touched); "read" copies it into memory (safe
    if the file may be truncated while open); "direct" copies it with O_DIRECT, around the page
    cache (buffered where the file system refuses O_DIRECT). The other options are limits and policies of the
    C++ Options: max_depth, max_tensors, max_messages, allow_external_outside_folder (external
    data outside the model's folder), collect_payload_errors (open a model whose payloads are
    bad; those tensors have storage "invalid"). The GIL is released while the file is indexed.
    `path` may be an http:// or https:// URL: the metadata is fetched at open and each tensor's
    bytes when touched; cache (a folder) keeps the fetched metadata for the next open,
    http_timeout is in seconds, http_ca a PEM file of certificates to trust, and a bearer token
    is taken from the environment variable ONNXMAP_HTTP_TOKEN.
    Raises onnxmap.Error for an unreadable or malformed file (kind "http" for a server's fault).
    """
    return _onnxmap._open(os.fspath(path), **open_options(
        load, max_depth, max_tensors, max_messages, allow_external_outside_folder,
        collect_payload_errors, cache, http_timeout, http_ca))


def _given(**options):
    """The options the caller gave: None leaves the library's default."""
    return {key: value for key, value in options.items() if value is not None}


def _load(self, callback, *, filter=None, names=None, shard=None, mode="read", threads=None,
          progress=None, request_bytes=None, max_in_flight_bytes=None, max_gap_bytes=None,
          release_after_callback=None):
    """Streams tensors from the disk with the library's loader: large reads in file order on
    `threads` threads, callback(name, array) on this thread as soon as a tensor is complete.

    Which tensors: those keys() names, or only those matching the glob `filter` ("*.weight"),
    or those in `names`; shard=(rank, ranks) takes rows [rows*rank//ranks, rows*(rank+1)//ranks)
    of every tensor with at least `ranks` rows whose rows are whole bytes, the others whole.

    mode "read" (buffered) and "direct" (O_DIRECT, the page cache left alone) read each tensor
    straight into a new writable array, which is the callback's to keep (no further copy); the
    arrays not yet handed over are allocated when the load starts. mode "map" fills the page
    cache with large reads and gives read-only views of the mapped file (no copy; they keep the
    model mapped), dropping each tensor's pages from this process after its callback unless
    release_after_callback=False (a view stays valid: its pages are read again when touched).
    Typed-field tensors, 4- and 2-bit types (unpacked) and STRING tensors come as copies, as
    Tensor.numpy() gives them. progress(bytes_done, bytes_total) is called after each tensor.

    The GIL is released while files are read; callbacks run with it held. An exception in a
    callback stops the load and is raised here. Returns a dict: tensors, bytes, bytes_read,
    requests, direct (every file was read with O_DIRECT)."""
    return self._load(callback, **_given(
        filter=filter, names=names, shard=shard, mode=mode, threads=threads, progress=progress,
        request_bytes=request_bytes, max_in_flight_bytes=max_in_flight_bytes,
        max_gap_bytes=max_gap_bytes, release_after_callback=release_after_callback))


def _prefetch(self, filter=None, *, names=None, shard=None, threads=None, request_bytes=None,
              max_gap_bytes=None):
    """Reads the chosen tensors' bytes (as load() chooses them) into the page cache with large
    requests on `threads` threads, so that touching them through the map later costs no disk
    read; returns when they are read. For a model opened with load="map"; the GIL is released."""
    self._prefetch(**_given(filter=filter, names=names, shard=shard, threads=threads,
                            request_bytes=request_bytes, max_gap_bytes=max_gap_bytes))


_onnxmap.Model.load = _load
_onnxmap.Model.prefetch = _prefetch
