"""The models of the exporters' corpus, in the order make_corpus.py makes them (the layouts
read torch-llama): a module of its own, without imports, so that a test can list the models
without torch or transformers (python/tests/test_exporters.py, under Debian's Python)."""
NAMES = ("torch-llama", "torch-llama-external", "torch-qwen2", "torch-mixtral", "torch-gpt2",
         "torch-bert", "onnx-per-tensor-llama", "onnx-ir-sharded-llama", "onnx-ir-aligned-llama",
         "onnx-ir-safetensors-llama", "genai-llama-int4", "genai-llama-fp16")
