"""safe_open: safetensors' loading API over an ONNX file, so code written for safetensors runs
by changing one import. Tensors are NumPy arrays (framework="np") or torch tensors
(framework="pt"). Torch tensors are writable, as safetensors' are: where the bytes lie in a
mapped local file they are that file's pages mapped copy-on-write (nothing is copied until
written, and a write stays in this process, never in the file); elsewhere they are a copy.
With device="cuda:N", get_tensor copies each tensor straight into a tensor torch allocated on
that device (Model.load_to_torch: registered mappings or a pinned ring, no host tensor).
NumPy is imported where an array is at hand, not with the package: a look at a model's
metadata (open, the graph, the names) runs without it, its import time and its thread pool."""
from . import _onnxmap
from .model import open as open_model

# Types safe_open gives on the cpu as they are stored, so that a device copy has the same dtype:
# UINT16 and UINT32 are widened on the host (then copied with .to(device)).
_DEVICE_TYPES = {"BOOL", "UINT8", "INT8", "INT16", "INT32", "INT64", "FLOAT16", "BFLOAT16",
                 "FLOAT", "DOUBLE", "COMPLEX64", "COMPLEX128", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ",
                 "FLOAT8E5M2", "FLOAT8E5M2FNUZ"}

_FRAMEWORKS = {"np": "np", "numpy": "np", "pt": "pt", "torch": "pt", "pytorch": "pt"}

# ONNX's data type names, as Tensor.data_type gives them, to safetensors' dtype names. A type
# safetensors has no name for keeps its ONNX name.
SAFETENSORS_DTYPES = {
    "BOOL": "BOOL", "UINT8": "U8", "INT8": "I8", "UINT16": "U16", "INT16": "I16",
    "UINT32": "U32", "INT32": "I32", "UINT64": "U64", "INT64": "I64", "FLOAT16": "F16",
    "BFLOAT16": "BF16", "FLOAT": "F32", "DOUBLE": "F64", "FLOAT8E4M3FN": "F8_E4M3",
    "FLOAT8E5M2": "F8_E5M2",
}


class SafetensorError(_onnxmap.Error):
    """What safetensors raises for a name the file does not hold. An onnxmap.Error too, with its
    attributes: kind "not_found", detail the message, and file, path and offset as the failed
    lookup gave them."""

    def __init__(self, message, file="", path="", offset=None):
        super().__init__(message)
        self.kind = "not_found"
        self.detail = message
        self.file = file
        self.path = path
        self.offset = offset


def _torch_dtype(torch, array, onnx_dtype):
    import numpy
    if onnx_dtype == "BFLOAT16":
        return torch.bfloat16  # the array holds the bit patterns as uint16
    if array.dtype == object:
        raise TypeError(f"torch has no tensors of {onnx_dtype}")
    return torch.from_numpy(numpy.empty(0, array.dtype)).dtype


def to_torch(array, onnx_dtype):
    """A torch tensor over the memory of `array` when it is writable and contiguous, else over
    a copy: torch has no read-only tensors, and a write into read-only pages kills the process.
    UINT16 and UINT32, which torch 1.13 lacks, come widened to int32 and int64 (a copy)."""
    import numpy
    import torch
    if onnx_dtype in ("UINT16", "UINT32"):
        array = array.astype("<i4" if array.dtype.itemsize == 2 else "<i8")
    if onnx_dtype == "UINT64":
        raise TypeError("torch has no uint64 tensors")
    dtype = _torch_dtype(torch, array, onnx_dtype)
    if array.size == 0:
        return torch.empty(array.shape, dtype=dtype)
    if not array.flags.c_contiguous or not array.flags.writeable:
        array = array.copy()
    if dtype == torch.bfloat16:
        return torch.from_numpy(array.view(numpy.int16)).view(dtype)
    return torch.from_numpy(array)


def _private_rows(tensor, rows):
    """Rows [low, high) of `tensor` (rows None: all of it) as a writable array over its file's
    pages mapped copy-on-write, or None where its bytes are not a view of a mapped local file."""
    import numpy
    if not tensor.file_path or not tensor.is_view:
        return None
    view = tensor.numpy() if rows is None else tensor.slice_rows(*rows)
    if view.nbytes == 0:
        return None
    skipped = 0 if rows is None else rows[0] * tensor.row_bytes
    pages = numpy.memmap(tensor.file_path, mode="c", dtype=numpy.uint8, shape=(view.nbytes,),
                         offset=tensor.file_offset + skipped)
    return pages.view(view.dtype).reshape(view.shape)


class TensorSlice:
    """A tensor to index without reading it: slice[a:b] reads rows a..b only (axis 0 through
    Tensor.slice_rows, the other axes as views of those rows)."""

    def __init__(self, tensor, convert):
        self._tensor = tensor
        self._convert = convert

    def get_shape(self):
        return list(self._tensor.shape)

    def get_dtype(self):
        """safetensors' name of the dtype ("F32", "BF16", ...)."""
        return SAFETENSORS_DTYPES.get(self._tensor.data_type, self._tensor.data_type)

    def __len__(self):
        return self._tensor.shape[0]

    def _rows(self, first):
        """The rows (low, high) of axis 0 that `first` (an int, a slice or ...) picks, and the
        index that picks them from that block."""
        count = self._tensor.shape[0] if self._tensor.shape else None
        if count is None:
            raise IndexError("a scalar tensor has no rows")
        if first is Ellipsis:
            first = slice(None)
        if isinstance(first, slice):
            picked = range(*first.indices(count))
            if len(picked) == 0:
                return (0, 0), slice(None)
            low, high = min(picked), max(picked) + 1
            return (low, high), slice(picked.start - low, None, picked.step)
        row = int(first)
        if row < -count or row >= count:
            raise IndexError(f"row {row} out of range for {count} rows")
        row %= count
        return (row, row + 1), 0

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if key and key[0] is Ellipsis and len(key) > 1:
            key = (slice(None),) * (len(self._tensor.shape) - len(key) + 1) + key[1:]
        rows, first = self._rows(key[0] if key else slice(None))
        return self._convert(self._tensor, rows, (first,) + tuple(key[1:]))


class safe_open:
    """safe_open(path, framework="np"|"pt", device="cpu", **open_options) as in safetensors:
    a context manager with keys(), get_tensor(name), get_slice(name) and metadata().

    framework="pt" with device="cuda:N": get_tensor loads the tensor with Model.load_to_torch
    (onnxmap's load_to_device into a tensor torch allocated there); slices, and UINT16 and
    UINT32 tensors (widened on the host), are read on the host and copied with .to(device).
    For a whole checkpoint, Model.load_to_torch in one call overlaps every tensor's copies.

    verify: a Manifest (Model.hash, Manifest.read) or a path to one: get_tensor hashes the
    tensor's bytes as it reads them (the pages the array is over, or those copied to the
    device) and raises onnxmap.Error (kind bad_tensor) naming it and both digests where they
    differ from the manifest's. get_slice reads rows without verifying them: a manifest holds
    whole tensors' digests."""

    def __init__(self, path, framework="np", device="cpu", verify=None, **options):
        if framework not in _FRAMEWORKS:
            raise ValueError(f"framework must be \"np\" or \"pt\", not {framework!r}")
        self._framework = _FRAMEWORKS[framework]
        if self._framework == "np" and device != "cpu":
            raise ValueError("NumPy arrays live on the cpu")
        self._device = device
        self._model = open_model(path, **options)
        self._manifest = verify if verify is None or isinstance(verify, _onnxmap.Manifest) \
            else _onnxmap.Manifest.read(verify)

    def _block(self, tensor, rows):
        """The tensor's rows [low, high) (rows None: all of it) as NumPy: for torch, writable."""
        if self._framework == "pt":
            private = _private_rows(tensor, rows)
            if private is not None:
                return private
        return tensor.numpy() if rows is None else tensor.slice_rows(*rows)

    def _convert(self, tensor, rows=None, index=None):
        """Rows `rows` of `tensor` (all of it when None), then `index` of them, as the
        framework's array."""
        array = self._block(tensor, rows)
        if index is not None:
            array = array[index]
        if self._framework == "np":
            return array
        result = to_torch(array, tensor.data_type)
        return result if self._device == "cpu" else result.to(self._device)

    def _tensor(self, name):
        try:
            return self._model.tensor(name)
        except _onnxmap.Error as error:
            if error.kind != "not_found":
                raise
            raise SafetensorError(f"File does not contain tensor {name}", error.file, error.path,
                                  error.offset) from None

    def keys(self):
        return self._model.keys()

    def metadata(self):
        """The model's metadata_props, as safetensors' __metadata__: None when there are none."""
        return self._model.metadata_props or None

    def get_tensor(self, name):
        tensor = self._tensor(name)
        if (self._framework == "pt" and str(self._device) != "cpu"
                and tensor.data_type in _DEVICE_TYPES):
            return self._model.load_to_torch(self._device, names=[name],
                                             verify=self._manifest)[name]
        if self._manifest is not None:
            # The pages read and hashed here are those the array is made over next.
            self._model.load(lambda _name, _array: None, names=[name], mode="map",
                             verify=self._manifest)
        return self._convert(tensor)

    def get_slice(self, name):
        return TensorSlice(self._tensor(name), self._convert)

    @property
    def model(self):
        """The onnxmap.Model underneath (graph, opsets ...)."""
        return self._model

    def close(self):
        self._model.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
