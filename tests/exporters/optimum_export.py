"""One export of Hugging Face Optimum for the exporters' corpus, run by make_corpus.py with the
interpreter of the Optimum environment (tools/venvs/optimum.txt, ONNXMAP_OPTIMUM_VENV): saves a
small model of tiny_models.py with random weights as a checkpoint (save_pretrained, with the
word-level tokenizer), then runs `optimum-cli export onnx --model CHECKPOINT --task TASK OUT` on
it, as a user does on a model of the Hub. Nothing is downloaded (HF_HUB_OFFLINE).

    optimum_export.py ARCHITECTURE TASK OUT

ARCHITECTURE is one of ARCHITECTURES; OUT receives Optimum's files (model.onnx, or
encoder_model.onnx, decoder_model.onnx, decoder_with_past_model.onnx and
decoder_model_merged.onnx for Whisper, and any .onnx_data beside them), the checkpoint's
model.safetensors as checkpoint.safetensors, and, as the last line
on stdout, a JSON object of how they were made.
"""
import importlib.metadata
import json
import os
import pathlib
import shutil
import subprocess
import sys

import torch
import transformers

import tiny_models


def llama():
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**tiny_models.SMALL))


def gpt2():
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(**tiny_models.GPT2))


def bert():
    return transformers.BertModel(transformers.BertConfig(**tiny_models.BERT))


def whisper():
    config = transformers.WhisperConfig(**tiny_models.WHISPER)
    return transformers.WhisperForConditionalGeneration(config)


ARCHITECTURES = {"llama": llama, "gpt2": gpt2, "bert": bert, "whisper": whisper}


def main():
    architecture, task, out = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
    checkpoint = out.parent / (out.name + ".checkpoint")
    shutil.rmtree(checkpoint, ignore_errors=True)
    torch.manual_seed(0)
    model = ARCHITECTURES[architecture]()
    tiny_models.save_checkpoint(model, checkpoint)
    cli = pathlib.Path(sys.executable).parent / "optimum-cli"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run([str(cli), "export", "onnx", "--model", str(checkpoint), "--task", task,
                           str(out)], capture_output=True, text=True, env=env)
    if done.returncode == 0:  # the checkpoint's weights beside the export, as the Hub has both
        shutil.copyfile(checkpoint / "model.safetensors", out / "checkpoint.safetensors")
    shutil.rmtree(checkpoint, ignore_errors=True)
    if done.returncode != 0:
        raise SystemExit(f"optimum-cli export onnx --task {task} failed:\n" +
                         done.stdout[-2000:] + done.stderr[-4000:])
    version = importlib.metadata.version
    print(json.dumps({
        "exporter": f"optimum-cli export onnx --task {task}",
        "optimum": version("optimum"), "optimum_onnx": version("optimum-onnx"),
        "transformers": transformers.__version__, "torch": torch.__version__,
        "architecture": type(model).__name__}))


if __name__ == "__main__":
    main()
