#!/usr/bin/python3
"""How much of each real export's weights `convert --weights-from` shares with the checkpoint it
was exported from, without and with --share-transposed: the exporters' corpus's models that keep
their checkpoint (tests/exporters/make_corpus.py: checkpoint.safetensors in the folder).

    sharing_report.py ONNXMAP CORPUS_FOLDER

Each model is copied beside its checkpoint into a scratch folder (removed after) and converted
twice; prints a markdown table of the weight bytes found by name, by content and transposed, and
of the model's own bytes left in its data file.
"""
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile


def shared_of(onnxmap, folder, *args):
    done = subprocess.run([onnxmap, "convert", folder / "model.onnx", folder / "out.onnx",
                           "--weights-from", folder / "checkpoint.safetensors", "--json", *args],
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout)["shared"]


def kib(count):
    return f"{count['tensors']} ({count['bytes'] / 1024:.0f} KiB)"


def main():
    onnxmap, corpus = sys.argv[1], pathlib.Path(sys.argv[2])
    print("| model | exporter | by name | by content | transposed, kept | own | with "
          "--share-transposed: through a Transpose | own |")
    print("|---|---|---|---|---|---|---|---|")
    for model in sorted(p for p in corpus.iterdir() if (p / "checkpoint.safetensors").is_file()):
        exporter = json.loads((model / "made.json").read_text())["exporter"]
        with tempfile.TemporaryDirectory() as scratch:
            folder = pathlib.Path(scratch)
            for name in ("model.onnx", "checkpoint.safetensors"):
                shutil.copyfile(model / name, folder / name)
            for data in model.glob("*.onnx_data"):
                shutil.copyfile(data, folder / data.name)
            kept = shared_of(onnxmap, folder)
            shared = shared_of(onnxmap, folder, "--share-transposed")
        print(f"| {model.name} | {exporter} | {kib(kept['by_name'])} | {kib(kept['by_content'])} "
              f"| {kib(kept['transposed_kept'])} | {kib(kept['own'])} | "
              f"{kib(shared['transposed'])} | {kib(shared['own'])} |")


if __name__ == "__main__":
    main()
