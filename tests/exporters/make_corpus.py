"""Writes the exporters' corpus: LLM-family models with random weights, from configurations (no
checkpoint is downloaded), as today's exporters write them, in the PyPI environment of
tools/venvs/pypi.txt (torch, transformers, onnxscript, onnx, onnx-ir, onnxruntime-genai,
pinned). GenAI's builder makes the small Llama in int4 (MatMulNBits, GroupQueryAttention and
SkipSimplifiedLayerNormalization of com.microsoft, a key-value cache) and in float16, with its
genai_config.json beside it.

    make_corpus.py [OUT_DIR [NAME...]]

OUT_DIR defaults to corpus_folder(): one folder per machine and per version of this script and
of the pinned packages, so that a machine makes the corpus once. Each model is a folder
OUT_DIR/NAME (model.onnx and its data files) with a line in
OUT_DIR/NAME/made.json saying how it was made; a folder is written under a temporary name and
renamed once whole, so a cut run leaves nothing half made. A model already there is kept.

The layouts keep each library's own size threshold (onnx's 1 KiB, onnx-ir's 256 bytes), as a
user's call does: with none, the small shape tensors go out too, and ONNX Runtime refuses the
model (it reads a ReduceMean's axes or a Reshape's shape only inline).

torch's exporter is the dynamo one (torch.onnx.export(..., dynamo=True), the default of recent
torch), on a fixed input of one sequence of SEQUENCE tokens, without the key-value cache (its
cache object does not export). Mixtral's experts run as transformers' "batched_mm": the default
grouped_mm does not convert, and "eager" depends on data.
"""
import fcntl
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys

import onnx
import onnx_ir
import torch
import transformers

from corpus_names import NAMES

SEQUENCE = 8
VOCAB = 1000
# The small decoders' common shape: 2 layers of hidden 64.
SMALL = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=128,
             use_cache=False)


def llama():
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**SMALL))


def qwen2():
    return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**SMALL))


def mixtral():
    config = transformers.MixtralConfig(**SMALL, num_local_experts=4, num_experts_per_tok=2,
                                        experts_implementation="batched_mm")
    return transformers.MixtralForCausalLM(config)


def gpt2():
    config = transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=VOCAB,
                                     n_positions=128, use_cache=False, bos_token_id=0,
                                     eos_token_id=0)
    return transformers.GPT2LMHeadModel(config)


def bert():
    config = transformers.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=128, vocab_size=VOCAB,
                                     max_position_embeddings=128)
    return transformers.BertModel(config)


def torch_export(make, folder, external_data=False):
    """`make()`'s module through torch's dynamo exporter into folder/model.onnx."""
    torch.manual_seed(0)
    module = make().eval()
    tokens = torch.randint(0, VOCAB, (1, SEQUENCE))
    program = torch.onnx.export(module, (tokens,), dynamo=True, verbose=False)
    program.save(str(folder / "model.onnx"), external_data=external_data)
    return {"exporter": "torch.onnx.export(dynamo=True)", "torch": torch.__version__,
            "transformers": transformers.__version__, "architecture": type(module).__name__,
            "external_data": external_data}


def save_checkpoint(folder):
    """The small Llama as a Hugging Face checkpoint folder, with a word-level tokenizer of VOCAB
    words (GenAI's builder writes the tokenizer's files beside the model, so it needs one)."""
    import tokenizers
    torch.manual_seed(0)
    llama().save_pretrained(folder)
    vocab = {f"t{i}": i for i in range(VOCAB)}
    words = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=vocab, unk_token="t0"))
    words.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    transformers.PreTrainedTokenizerFast(tokenizer_object=words, unk_token="t0", bos_token="t1",
                                         eos_token="t2").save_pretrained(folder)


def genai_build(precision):
    """The small Llama through ONNX Runtime GenAI's model builder for the CPU."""
    def write(folder):
        import onnxruntime_genai
        scratch = folder.parent / (folder.name + ".checkpoint")
        shutil.rmtree(scratch, ignore_errors=True)
        save_checkpoint(scratch / "hf")
        built = subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder",
                                "-i", scratch / "hf", "-o", folder, "-p", precision, "-e", "cpu",
                                "-c", scratch / "cache"], capture_output=True, text=True)
        shutil.rmtree(scratch, ignore_errors=True)
        if built.returncode != 0:
            raise SystemExit("GenAI's builder failed:\n" + built.stdout[-2000:] +
                             built.stderr[-4000:])
        return {"exporter": f"onnxruntime_genai.models.builder -p {precision} -e cpu",
                "onnxruntime_genai": onnxruntime_genai.__version__,
                "transformers": transformers.__version__, "architecture": "LlamaForCausalLM"}
    return write


def relaid(source, how):
    """A layout of an exported model, written by `how(model_path)` into the folder."""
    def write(folder):
        made = how(source, folder / "model.onnx")
        return dict(made, source=source.parent.name)
    return write


def onnx_per_tensor(source, target):
    model = onnx.load(str(source))
    onnx.save_model(model, str(target), save_as_external_data=True,
                    all_tensors_to_one_file=False)
    return {"exporter": "onnx.save_model(all_tensors_to_one_file=False)",
            "onnx": onnx.__version__}


def onnx_ir_sharded(source, target):
    onnx_ir.save(onnx_ir.load(str(source)), str(target), external_data="model.onnx.data",
                 max_shard_size_bytes=200_000)
    return {"exporter": "onnx_ir.save(max_shard_size_bytes=200000)",
            "onnx_ir": onnx_ir.__version__}


def onnx_ir_aligned(source, target):
    onnx_ir.save(onnx_ir.load(str(source)), str(target), external_data="model.onnx.data",
                 alignment=4096, align_threshold=0)
    return {"exporter": "onnx_ir.save(alignment=4096)", "onnx_ir": onnx_ir.__version__}


def onnx_ir_safetensors(source, target):
    onnx_ir.save_safetensors(onnx_ir.load(str(source)), str(target),
                             max_shard_size_bytes=300_000)
    return {"exporter": "onnx_ir.save_safetensors(max_shard_size_bytes=300000)",
            "onnx_ir": onnx_ir.__version__}


def models(out):
    """name -> a function that writes the model into the folder it is given, returning how."""
    llama_model = out / "torch-llama" / "model.onnx"
    return {
        "torch-llama": lambda f: torch_export(llama, f),
        "torch-llama-external": lambda f: torch_export(llama, f, external_data=True),
        "torch-qwen2": lambda f: torch_export(qwen2, f),
        "torch-mixtral": lambda f: torch_export(mixtral, f),
        "torch-gpt2": lambda f: torch_export(gpt2, f),
        "torch-bert": lambda f: torch_export(bert, f),
        "onnx-per-tensor-llama": relaid(llama_model, onnx_per_tensor),
        "onnx-ir-sharded-llama": relaid(llama_model, onnx_ir_sharded),
        "onnx-ir-aligned-llama": relaid(llama_model, onnx_ir_aligned),
        "onnx-ir-safetensors-llama": relaid(llama_model, onnx_ir_safetensors),
        "genai-llama-int4": genai_build("int4"),
        "genai-llama-fp16": genai_build("fp16"),
    }


def corpus_folder():
    """Where this machine keeps the corpus: under ONNXMAP_EXPORTERS_CACHE (default
    ~/.cache/onnxmap/exporters), named by a hash of this script and of the pinned packages."""
    here = pathlib.Path(__file__).resolve()
    pins = here.parents[2] / "tools" / "venvs" / "pypi.txt"
    names = here.parent / "corpus_names.py"
    key = hashlib.sha256(here.read_bytes() + names.read_bytes() + pins.read_bytes()).hexdigest()
    key = key[:12]
    root = os.environ.get("ONNXMAP_EXPORTERS_CACHE") or pathlib.Path.home() / ".cache" / \
        "onnxmap" / "exporters"
    return pathlib.Path(root) / key


def make_all(out, wanted=NAMES):
    """Makes what is missing of `wanted` in `out`, one process at a time (a lock file)."""
    out.mkdir(parents=True, exist_ok=True)
    wanted = set(wanted)
    if any(n.startswith("onnx-") for n in wanted):
        wanted.add("torch-llama")  # what the layouts are made of
    writers = models(out)
    unknown = sorted(wanted - writers.keys())
    if unknown:
        raise SystemExit(f"make_corpus.py: unknown models {unknown} (known: {', '.join(NAMES)})")
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for name in NAMES:
            if name in wanted:
                make(out, name, writers[name])


def make(out, name, write):
    folder = out / name
    if (folder / "made.json").is_file():
        return
    partial = out / (name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    made = write(partial)
    made["files"] = {p.name: p.stat().st_size for p in sorted(partial.iterdir())}
    (partial / "made.json").write_text(json.dumps(made, indent=1) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    print(f"made {name}: {made['exporter']}", flush=True)


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else corpus_folder()
    make_all(out, sys.argv[2:] or NAMES)
    print(out)


if __name__ == "__main__":
    main()
