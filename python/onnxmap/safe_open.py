"""safe_open: safetensors' loading API over an ONNX file, so code written for safetensors runs
by changing one import. Tensors are NumPy arrays (framework="np") or torch tensors
(framework="pt") over the model's mapped bytes, without a copy where the file allows it."""
import warnings

import numpy

from .model import open as open_model

_FRAMEWORKS = {"np": "np", "numpy": "np", "pt": "pt", "torch": "pt", "pytorch": "pt"}


def _torch_dtype(torch, array, onnx_dtype):
    if onnx_dtype == "BFLOAT16":
        return torch.bfloat16  # the array holds the bit patterns as uint16
    if array.dtype == object:
        raise TypeError(f"torch has no tensors of {onnx_dtype}")
    return torch.from_numpy(numpy.empty(0, array.dtype)).dtype


def to_torch(array, onnx_dtype):
    """A torch tensor over the same memory as `array` (no copy). torch has no read-only tensors:
    writing into one taken from a mapped model crashes; clone() it first. UINT16 and UINT32,
    which torch 1.13 lacks, come widened to int32 and int64 (a copy)."""
    import torch
    if onnx_dtype in ("UINT16", "UINT32"):
        array = array.astype("<i4" if array.dtype.itemsize == 2 else "<i8")
    if onnx_dtype == "UINT64":
        raise TypeError("torch has no uint64 tensors")
    dtype = _torch_dtype(torch, array, onnx_dtype)
    if array.size == 0:
        return torch.empty(array.shape, dtype=dtype)
    if not array.flags.c_contiguous:
        array = array.copy()
    with warnings.catch_warnings():
        # frombuffer warns that the buffer is read-only: it is, on purpose (see above).
        warnings.simplefilter("ignore", UserWarning)
        # frombuffer keeps `array`, and so the model, alive. torch 1.13 miscounts bfloat16
        # buffers, so those are read as int16 and reinterpreted.
        read_as = torch.int16 if dtype == torch.bfloat16 else dtype
        tensor = torch.frombuffer(array, dtype=read_as).view(dtype)
    return tensor.reshape(array.shape)


class TensorSlice:
    """A tensor to index without reading it: slice[a:b] reads rows a..b only (axis 0 through
    Tensor.slice_rows, the other axes as NumPy views of those rows)."""

    def __init__(self, tensor, convert):
        self._tensor = tensor
        self._convert = convert

    def get_shape(self):
        return list(self._tensor.shape)

    def get_dtype(self):
        return self._tensor.dtype

    def __len__(self):
        return self._tensor.shape[0]

    def _rows(self, first):
        """Rows of axis 0 picked by `first` (an int, a slice or ...), and the index that picks
        them from that block."""
        count = self._tensor.shape[0] if self._tensor.shape else None
        if count is None:
            raise IndexError("a scalar tensor has no rows")
        if first is Ellipsis:
            first = slice(None)
        if isinstance(first, slice):
            picked = range(*first.indices(count))
            if len(picked) == 0:
                return self._tensor.slice_rows(0, 0), slice(None)
            low, high = min(picked), max(picked) + 1
            return self._tensor.slice_rows(low, high), slice(picked.start - low, None,
                                                             picked.step)
        row = int(first)
        if row < -count or row >= count:
            raise IndexError(f"row {row} out of range for {count} rows")
        row %= count
        return self._tensor.slice_rows(row, row + 1), 0

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if key and key[0] is Ellipsis and len(key) > 1:
            key = (slice(None),) * (len(self._tensor.shape) - len(key) + 1) + key[1:]
        block, first = self._rows(key[0] if key else slice(None))
        return self._convert(block[(first,) + tuple(key[1:])], self._tensor.dtype)


class safe_open:
    """safe_open(path, framework="np"|"pt", device="cpu", **open_options) as in safetensors:
    a context manager with keys(), get_tensor(name), get_slice(name) and metadata()."""

    def __init__(self, path, framework="np", device="cpu", **options):
        if framework not in _FRAMEWORKS:
            raise ValueError(f"framework must be \"np\" or \"pt\", not {framework!r}")
        self._framework = _FRAMEWORKS[framework]
        if self._framework == "np" and device != "cpu":
            raise ValueError("NumPy arrays live on the cpu")
        self._device = device
        self._model = open_model(path, **options)

    def _convert(self, array, onnx_dtype):
        if self._framework == "np":
            return array
        tensor = to_torch(array, onnx_dtype)
        return tensor if self._device == "cpu" else tensor.to(self._device)

    def keys(self):
        return self._model.keys()

    def metadata(self):
        """The model's metadata_props, as safetensors' __metadata__."""
        return self._model.metadata_props

    def get_tensor(self, name):
        tensor = self._model.tensor(name)
        return self._convert(tensor.numpy(), tensor.dtype)

    def get_slice(self, name):
        return TensorSlice(self._model.tensor(name), self._convert)

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
