"""The models of the exporters' corpus, in the order make_corpus.py makes them (the layouts
read torch-llama): a module of its own, without imports, so that a test can list the models
without torch or transformers (python/tests/test_exporters.py, under Debian's Python). OPTIMUM
are those Hugging Face Optimum exports in its own environment (ONNXMAP_OPTIMUM_VENV), left out,
saying so, where it is not given."""
NAMES = ("torch-llama", "torch-llama-external", "torch-llama-2gb", "torch-qwen2", "torch-mixtral",
         "torch-gpt2", "torch-bert", "torch-whisper-encoder", "torch-whisper-decoder",
         "onnx-per-tensor-llama", "onnx-ir-sharded-llama", "onnx-ir-aligned-llama",
         "onnx-ir-safetensors-llama", "genai-llama-int4", "genai-llama-fp16", "optimum-llama",
         "optimum-llama-with-past", "optimum-gpt2", "optimum-bert", "optimum-whisper-encoder",
         "optimum-whisper-decoder", "optimum-whisper-decoder-merged")
OPTIMUM = tuple(n for n in NAMES if n.startswith("optimum-"))
PAST_2GB = "torch-llama-2gb"  # its weights (2.19 GB) pass what one protobuf message holds



def params(names, mark):
    """pytest parameters over `names`, PAST_2GB's given `mark` (the suite's `slow`, which the
    sanitized builds deselect: tests/meson.build; its paths are the small models' at larger
    offsets)."""
    import pytest  # here, so that listing the names needs no pytest
    return [pytest.param(n, marks=[mark] if n == PAST_2GB else []) for n in names]
