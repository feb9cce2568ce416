"""Writes the exporters' corpus: LLM-family models with random weights, from configurations (no
checkpoint is downloaded), as today's exporters write them, in the PyPI environment of
tools/venvs/pypi.txt (torch, transformers, onnxscript, onnx, onnx-ir, onnxruntime-genai,
pinned). GenAI's builder makes the small Llama in int4 (MatMulNBits, GroupQueryAttention and
SkipSimplifiedLayerNormalization of com.microsoft, a key-value cache) and in float16, with its
genai_config.json beside it. Hugging Face Optimum exports Llama (with and without the key-value
cache), GPT-2 (with it), BERT and Whisper (the encoder, the decoder and the merged decoder, an
If over the cache) from checkpoints saved with save_pretrained, in its own environment
(tools/venvs/optimum.txt: optimum-onnx needs transformers < 4.58, GenAI's builder transformers
5): optimum_export.py, run by the interpreter of ONNXMAP_OPTIMUM_VENV (tools/test.sh sets it to
the folder tools/venv.sh optimum makes). Without that variable the Optimum models are not made,
and a line "skipped: ..." says so.

    make_corpus.py [OUT_DIR [NAME...]]

OUT_DIR defaults to corpus_folder(): one folder per machine and per version of these scripts and
of the pinned packages (both lists), so that a machine makes the corpus once. Each model is a
folder OUT_DIR/NAME (model.onnx and its data files) with a line in
OUT_DIR/NAME/made.json saying how it was made; a folder is written under a temporary name and
renamed once whole, so a cut run leaves nothing half made. A model already there is kept.

The layouts keep each library's own size threshold (onnx's 1 KiB, onnx-ir's 256 bytes), as a
user's call does: with none, the small shape tensors go out too, and ONNX Runtime refuses the
model (it reads a ReduceMean's axes or a Reshape's shape only inline).

torch's exporter is the dynamo one (torch.onnx.export(..., dynamo=True), the default of recent
torch), on a fixed input of one sequence of SEQUENCE tokens, without the key-value cache (its
cache object does not export). Mixtral's experts run as transformers' "batched_mm": the default
grouped_mm does not convert, and "eager" depends on data. Whisper goes through it as two graphs,
the encoder (80 x 3000 input features) and the decoder with its head (tokens and the encoder's
1500 hidden states). torch-llama-2gb is a Llama whose weights pass 2 GB (2.19 GB of float32: a
vocabulary of 256,000 by hidden 1024, untied, 2 layers), saved with external data: made on the
meta device and filled in place with random numbers (no initialisation pass), 2.2 GB written
once, about 30 s on 2 cores (of the corpus's 2-3 minutes from nothing).

Optimum's files keep its names inside each folder but the one model.onnx: encoder_model.onnx of
the Whisper export becomes optimum-whisper-encoder/model.onnx; a data file (model.onnx_data)
keeps its name, which the .onnx refers to. Each Optimum folder, torch-llama's and torch-gpt2's
hold the checkpoint the export came from (its save_pretrained weights) as
checkpoint.safetensors, for convert --weights-from.
"""
import fcntl
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import onnx
import onnx_ir
import torch
import transformers

import tiny_models
from corpus_names import NAMES, OPTIMUM
from tiny_models import SEQUENCE, VOCAB  # noqa: F401  (the tests read them here)

HERE = pathlib.Path(__file__).resolve().parent
# The small decoders' shape, without the key-value cache (torch's exporter fails on its object).
SMALL = dict(tiny_models.SMALL, use_cache=False)
# The decoder past 2 GB: 2 x 256,000 x 1024 float32 (embedding and head, untied) and 2 layers.
LARGE = dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=2,
             num_attention_heads=16, num_key_value_heads=8, vocab_size=256_000,
             max_position_embeddings=128, use_cache=False)


def llama():
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**SMALL))


def llama_2gb():
    """The Llama of LARGE, its weights random: made on the meta device (no memory, no
    initialisation), given memory, then filled in place (normal, std 0.02; norms at 1). The
    rotary embedding's buffers are computed, not parameters: made again on the CPU."""
    config = transformers.LlamaConfig(**LARGE)
    with torch.device("meta"):
        module = transformers.LlamaForCausalLM(config)
    module = module.to_empty(device="cpu")
    rotary = type(module.model.rotary_emb)
    module.model.rotary_emb = rotary(config=config)
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            if name.endswith("norm.weight"):
                parameter.fill_(1.0)
            else:
                parameter.normal_(0.0, 0.02)
    return module


def qwen2():
    return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**SMALL))


def mixtral():
    config = transformers.MixtralConfig(**SMALL, num_local_experts=4, num_experts_per_tok=2,
                                        experts_implementation="batched_mm")
    return transformers.MixtralForCausalLM(config)


def gpt2():
    config = transformers.GPT2Config(**tiny_models.GPT2, use_cache=False)
    return transformers.GPT2LMHeadModel(config)


def bert():
    return transformers.BertModel(transformers.BertConfig(**tiny_models.BERT))


def whisper():
    config = transformers.WhisperConfig(**tiny_models.WHISPER, use_cache=False)
    return transformers.WhisperForConditionalGeneration(config)


def whisper_encoder():
    return whisper().model.encoder


def features():
    """One window of Whisper's input features."""
    return (torch.randn(1, tiny_models.WHISPER["num_mel_bins"], tiny_models.WHISPER_FRAMES),)


class WhisperDecoderWithHead(torch.nn.Module):
    """Whisper's decoder and its head (tied to the token embedding): tokens and the encoder's
    hidden states in, logits out, as Optimum's decoder_model.onnx (without the cache)."""

    def __init__(self, model):
        super().__init__()
        self.decoder = model.model.decoder
        self.proj_out = model.proj_out

    def forward(self, input_ids, encoder_hidden_states):
        hidden = self.decoder(input_ids=input_ids, encoder_hidden_states=encoder_hidden_states,
                              use_cache=False).last_hidden_state
        return self.proj_out(hidden)


def whisper_decoder():
    return WhisperDecoderWithHead(whisper())


def decoder_inputs():
    """Tokens and the encoder's hidden states of one window."""
    return (torch.randint(0, VOCAB, (1, SEQUENCE)),
            torch.randn(1, tiny_models.WHISPER["max_source_positions"],
                        tiny_models.WHISPER["d_model"]))


def tokens():
    return (torch.randint(0, VOCAB, (1, SEQUENCE)),)


def torch_export(make, folder, external_data=False, inputs=tokens, checkpoint=False):
    """`make()`'s module through torch's dynamo exporter into folder/model.onnx, traced on
    `inputs()`; with `checkpoint`, the module's weights beside it as save_pretrained writes them
    (folder/checkpoint.safetensors), the checkpoint the export came from."""
    torch.manual_seed(0)
    module = make().eval()
    program = torch.onnx.export(module, inputs(), dynamo=True, verbose=False)
    program.save(str(folder / "model.onnx"), external_data=external_data)
    if checkpoint:
        save_weights(module, folder)
    return {"exporter": "torch.onnx.export(dynamo=True)", "torch": torch.__version__,
            "transformers": transformers.__version__, "architecture": type(module).__name__,
            "external_data": external_data, "checkpoint": checkpoint}


def save_weights(module, folder):
    """module.save_pretrained's model.safetensors as folder/checkpoint.safetensors."""
    scratch = folder / "checkpoint.partial"
    module.save_pretrained(scratch)
    (scratch / "model.safetensors").rename(folder / "checkpoint.safetensors")
    shutil.rmtree(scratch)


def save_checkpoint(folder):
    """The small Llama as a Hugging Face checkpoint folder, with a word-level tokenizer of VOCAB
    words (GenAI's builder writes the tokenizer's files beside the model, so it needs one)."""
    torch.manual_seed(0)
    tiny_models.save_checkpoint(llama(), folder)


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


# Optimum's models: name -> (architecture of optimum_export.py, task, Optimum's file). The
# Whisper models come out of one export (the encoder, the decoder without the cache, the one with
# it and the two merged under an If on use_cache_branch); GPT-2 as a user's default task gives it.
OPTIMUM_EXPORTS = {
    "optimum-llama": ("llama", "text-generation", "model.onnx"),
    "optimum-llama-with-past": ("llama", "text-generation-with-past", "model.onnx"),
    "optimum-gpt2": ("gpt2", "text-generation-with-past", "model.onnx"),
    "optimum-bert": ("bert", "feature-extraction", "model.onnx"),
    "optimum-whisper-encoder": ("whisper", "automatic-speech-recognition-with-past",
                                "encoder_model.onnx"),
    "optimum-whisper-decoder": ("whisper", "automatic-speech-recognition-with-past",
                                "decoder_model.onnx"),
    "optimum-whisper-decoder-merged": ("whisper", "automatic-speech-recognition-with-past",
                                       "decoder_model_merged.onnx"),
}
assert sorted(OPTIMUM_EXPORTS) == sorted(OPTIMUM)
WHY_NO_OPTIMUM = ("ONNXMAP_OPTIMUM_VENV is not set (tools/test.sh sets it to the folder "
                  "tools/venv.sh optimum makes)")


def optimum_python():
    """The Optimum environment's interpreter, or None where ONNXMAP_OPTIMUM_VENV is not set."""
    venv = os.environ.get("ONNXMAP_OPTIMUM_VENV", "")
    if not venv:
        return None
    python = pathlib.Path(venv) / "bin" / "python"
    if not python.is_file():
        raise SystemExit(f"make_corpus.py: ONNXMAP_OPTIMUM_VENV={venv} has no bin/python")
    return python


def optimum_export(architecture, task, file):
    """One file of Optimum's export of `architecture` for `task` as folder/model.onnx, with the
    data files it names (under their own names). The export is made once for all the models it
    gives, in OUT/.optimum/, removed when the corpus is whole."""
    def write(folder):
        export = folder.parent / ".optimum" / f"{architecture}-{task}"
        made = export / ".made.json"
        if not made.is_file():
            shutil.rmtree(export, ignore_errors=True)
            export.parent.mkdir(exist_ok=True)
            # Not this build's package, nor a sanitizer's runtime: the export is not under test.
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD")}
            done = subprocess.run([optimum_python(), HERE / "optimum_export.py", architecture,
                                   task, export], capture_output=True, text=True, env=env)
            if done.returncode != 0:
                raise SystemExit(f"optimum_export.py {architecture} {task} failed:\n" +
                                 done.stdout[-2000:] + done.stderr[-4000:])
            made.write_text(done.stdout.strip().splitlines()[-1] + "\n")
        source = export / file
        shutil.copyfile(source, folder / "model.onnx")
        shutil.copyfile(export / "checkpoint.safetensors", folder / "checkpoint.safetensors")
        model = onnx.load(str(source), load_external_data=False)
        for location in sorted({entry.value for tensor in
                                onnx.external_data_helper._get_all_tensors(model)
                                for entry in tensor.external_data if entry.key == "location"}):
            shutil.copyfile(export / location, folder / location)
        return dict(json.loads(made.read_text()), file=file)
    return write


def models(out):
    """name -> a function that writes the model into the folder it is given, returning how."""
    llama_model = out / "torch-llama" / "model.onnx"
    return {
        "torch-llama": lambda f: torch_export(llama, f, checkpoint=True),
        "torch-llama-external": lambda f: torch_export(llama, f, external_data=True),
        "torch-llama-2gb": lambda f: torch_export(llama_2gb, f, external_data=True),
        "torch-qwen2": lambda f: torch_export(qwen2, f),
        "torch-mixtral": lambda f: torch_export(mixtral, f),
        "torch-gpt2": lambda f: torch_export(gpt2, f, checkpoint=True),
        "torch-bert": lambda f: torch_export(bert, f),
        "torch-whisper-encoder": lambda f: torch_export(whisper_encoder, f, inputs=features),
        "torch-whisper-decoder": lambda f: torch_export(whisper_decoder, f,
                                                        inputs=decoder_inputs),
        "onnx-per-tensor-llama": relaid(llama_model, onnx_per_tensor),
        "onnx-ir-sharded-llama": relaid(llama_model, onnx_ir_sharded),
        "onnx-ir-aligned-llama": relaid(llama_model, onnx_ir_aligned),
        "onnx-ir-safetensors-llama": relaid(llama_model, onnx_ir_safetensors),
        "genai-llama-int4": genai_build("int4"),
        "genai-llama-fp16": genai_build("fp16"),
        **{name: optimum_export(*how) for name, how in OPTIMUM_EXPORTS.items()},
    }


# What the corpus is made by: a change to any of these makes a new corpus.
MAKERS = ("tests/exporters/make_corpus.py", "tests/exporters/corpus_names.py",
          "tests/exporters/tiny_models.py", "tests/exporters/optimum_export.py",
          "tools/venvs/pypi.txt", "tools/venvs/optimum.txt")


def corpus_folder():
    """Where this machine keeps the corpus: under ONNXMAP_EXPORTERS_CACHE (default
    ~/.cache/onnxmap/exporters), named by a hash of the scripts that make it and of both lists
    of pinned packages (MAKERS)."""
    root_of_tree = HERE.parents[1]
    key = hashlib.sha256(b"".join((root_of_tree / p).read_bytes() for p in MAKERS)).hexdigest()
    key = key[:12]
    root = os.environ.get("ONNXMAP_EXPORTERS_CACHE") or pathlib.Path.home() / ".cache" / \
        "onnxmap" / "exporters"
    return pathlib.Path(root) / key


def optimum_skipped(out):
    """The Optimum models not in `out` that cannot be made here, and why (an empty list where the
    Optimum environment is given)."""
    if optimum_python() is not None:
        return [], ""
    return [n for n in OPTIMUM if not (out / n / "made.json").is_file()], WHY_NO_OPTIMUM


def make_all(out, wanted=NAMES):
    """Makes what is missing of `wanted` in `out`, one process at a time (a lock file). Without
    the Optimum environment its models are left out, saying so."""
    out.mkdir(parents=True, exist_ok=True)
    wanted = set(wanted)
    if any(n.startswith("onnx-") for n in wanted):
        wanted.add("torch-llama")  # what the layouts are made of
    writers = models(out)
    unknown = sorted(wanted - writers.keys())
    if unknown:
        raise SystemExit(f"make_corpus.py: unknown models {unknown} (known: {', '.join(NAMES)})")
    skipped, why = optimum_skipped(out)
    skipped = [n for n in skipped if n in wanted]
    if skipped:
        print(f"skipped: {', '.join(skipped)}: {why}", flush=True)
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for name in NAMES:
            if name in wanted and name not in skipped:
                make(out, name, writers[name])
        shutil.rmtree(out / ".optimum", ignore_errors=True)


def make(out, name, write):
    folder = out / name
    if (folder / "made.json").is_file():
        return
    partial = out / (name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    start = time.monotonic()
    made = write(partial)
    made["files"] = {p.name: p.stat().st_size for p in sorted(partial.iterdir())}
    (partial / "made.json").write_text(json.dumps(made, indent=1) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    print(f"made {name} in {time.monotonic() - start:.1f} s: {made['exporter']}", flush=True)


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else corpus_folder()
    make_all(out, sys.argv[2:] or NAMES)
    print(out)


if __name__ == "__main__":
    main()
