"""The fixed inputs ONNX Runtime runs the exporters' corpus on (exporters_test.py, and
python/tests/test_ort.py against onnxmap.ort's sessions): a module without torch or transformers,
so that the Python suite imports it."""
import numpy as np

import tiny_models

# The symbolic dimensions of the inputs: one sequence of SEQUENCE tokens, an empty key-value cache
# (GenAI's and Optimum's models), whose head size is the small Llama's (hidden 64 over 4 heads),
# and Whisper's encoder output of 1500 positions.
DIMS = {"batch_size": 1, "past_sequence_length": 0, "past_decoder_sequence_length": 0,
        "kv_cache_dim": 16, "encoder_sequence_length": tiny_models.WHISPER["max_source_positions"]}


def fixed_input(given, rng):
    """An input for ONNX Runtime, the same at every call with an rng of the same seed: token ids,
    positions, a mask of ones, token types of 0, an empty key-value cache (past_*) and the
    merged decoder's use_cache_branch off, and random values for other floats (Whisper's input
    features, the encoder's hidden states)."""
    shape = [d if isinstance(d, int) else DIMS.get(d, tiny_models.SEQUENCE) for d in given.shape]
    if given.name == "position_ids":
        return np.broadcast_to(np.arange(shape[-1], dtype=np.int64), shape).copy()
    if given.name == "attention_mask":
        return np.ones(shape, np.int64)
    if given.name == "token_type_ids":
        return np.zeros(shape, np.int64)
    if given.type == "tensor(bool)":
        return np.zeros(shape, bool)
    if given.type == "tensor(int64)":
        return rng.integers(0, tiny_models.VOCAB, shape, dtype=np.int64)
    floats = {"tensor(float)": np.float32, "tensor(float16)": np.float16}
    assert given.type in floats, f"{given.name}: {given.type}"
    if given.name.startswith("past"):
        return np.zeros(shape, floats[given.type])
    return rng.standard_normal(shape, np.float32).astype(floats[given.type])
