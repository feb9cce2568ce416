"""onnxmap: ONNX models through a memory map, lazily, with zero-copy NumPy and PyTorch tensors.

    import onnxmap
    with onnxmap.open("model.onnx") as model:
        weight = model["model.layers.0.mlp.up_proj.weight"].numpy()  # a read-only view, no copy

    with onnxmap.safe_open("model.onnx", framework="pt") as f:   # as safetensors' safe_open
        shard = f.get_slice("lm_head.weight")[0:1024]            # reads only those rows
"""
import collections.abc as _abc

from ._onnxmap import (Error, Function, Graph, Manifest, Model, ModelSummary, Node, SparseTensor,
                       Tensor, TrainingInfo, ValueInfo, ViewSequence)
from ._onnxmap import __version__
from . import device as _device  # Model.load_to_torch
from .files import Problem, check, convert, peek, save
from .model import open
from .safe_open import SafetensorError, TensorSlice, safe_open

# Graph.nodes, Graph.initializers and the other lists of views are ViewSequences: read-only
# sequences whose elements are made when read; isinstance(x, collections.abc.Sequence) holds.
_abc.Sequence.register(ViewSequence)

# open is left out: a star import would shadow the builtin. Call it as onnxmap.open.
__all__ = ["Error", "Function", "Graph", "Manifest", "Model", "ModelSummary", "Node", "Problem",
           "SafetensorError", "SparseTensor", "Tensor", "TensorSlice", "TrainingInfo",
           "ValueInfo", "ViewSequence", "check", "convert", "peek", "safe_open", "save",
           "__version__"]
