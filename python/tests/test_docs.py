"""Every code block of README.md and docs/*.md runs as written, so no page drifts from the code.

Each page runs top to bottom in a fresh empty folder, its blocks in order, sharing the files they
make:
- ```sh: bash -e, with `onnxmap` on PATH;
- ```python: a new process of the interpreter running the suite (Debian's, or the PyPI venv's),
  with this build's package importable;
- ```cpp: one program each, statements run in main() (a block with its own main() is the whole
  program); `#include <onnxmap/onnxmap.hpp>` and the common standard headers come with it;
- ```text right after one of those: what it prints on stdout, compared line by line (with
  `<!-- output varies -->` on the line before, every number stands for any number).
`<!-- not run: REASON -->` on the line before a block leaves it out; the reasons are listed on
stdout. C++ blocks are compiled with ONNXMAP_DOCS_CXX (the compiler command and the flags that
link this build's library, set by python/tests/meson.build). $SERVER (in sh, and os.environ["SERVER"] in python) is a loopback HTTP server with Range
support over the page's folder (tests/remote/range_server.py). Blocks of other languages (cmake,
meson, json) are shown only.
"""
import json
import os
import pathlib
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

from conftest import ONNXMAP_EXE, SOURCE_ROOT, once

RUNNABLE = {"sh", "python", "cpp"}
CPP_PRELUDE = """#include <onnxmap/onnxmap.hpp>

#include <cstdio>
#include <iostream>
#include <span>
#include <string>
#include <vector>
"""


@dataclass
class Block:
    lang: str
    text: str
    line: int  # of the opening fence, 1-based
    marker: str  # the <!-- ... --> comment on the line before, or ""


def blocks_of(page):
    """The fenced blocks of `page`, in order."""
    lines = page.read_text().splitlines()
    out = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        start = i
        i += 1
        body = []
        while i < len(lines) and lines[i] != "```":
            body.append(lines[i])
            i += 1
        before = lines[start - 1].strip() if start > 0 else ""
        marker = before if before.startswith("<!--") else ""
        out.append(Block(fence.group(1), "\n".join(body) + "\n", start + 1, marker))
        i += 1
    return out


def pages():
    return [SOURCE_ROOT / "README.md"] + sorted((SOURCE_ROOT / "docs").glob("*.md"))


def normalized(text, varies):
    lines = [line.rstrip() for line in text.strip("\n").splitlines()]
    if varies:
        lines = [re.sub(r"\d+(\.\d+)?", "N", line) for line in lines]
    return lines


def cpp_program(block):
    text = block.text
    includes = [line for line in text.splitlines() if line.startswith("#include")]
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#include"))
    if re.search(r"\bint main\(", text):
        return CPP_PRELUDE + "\n".join(includes) + "\n" + body + "\n"
    return (CPP_PRELUDE + "\n".join(includes) + "\nint main() {\n" + body + "\n  return 0;\n}\n")


def compile_cpp(block, folder, page):
    # The compiler command (maybe behind ccache), then its flags: the source goes between them,
    # before the libraries.
    command = json.loads(os.environ["ONNXMAP_DOCS_CXX"])
    first_flag = next(i for i, word in enumerate(command) if word.startswith("-"))
    source = folder / f".block{block.line}.cpp"
    exe = folder / f".block{block.line}"
    source.write_text(cpp_program(block))
    r = subprocess.run(command[:first_flag] + ["-std=c++20", "-o", str(exe), str(source)]
                       + command[first_flag:], capture_output=True, text=True)
    assert r.returncode == 0, f"{page.name}:{block.line} does not compile:\n{r.stderr}"
    return [str(exe)]


def command_for(block, folder, page):
    if block.lang == "sh":
        return ["bash", "-e", "-o", "pipefail", "-c", block.text]
    if block.lang == "python":
        return [sys.executable, "-c", block.text]
    return compile_cpp(block, folder, page)


def start_server(folder):
    server = subprocess.Popen(
        ["/usr/bin/python3", str(SOURCE_ROOT / "tests" / "remote" / "range_server.py"),
         "--root", str(folder), "--log", str(folder / ".server.log")],
        stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline())
    return server, f"http://127.0.0.1:{port}/ok"


def page_env(folder, server_url):
    env = dict(os.environ)
    env["PATH"] = str(pathlib.Path(ONNXMAP_EXE).parent) + os.pathsep + env["PATH"]
    if server_url:
        env["SERVER"] = server_url
    return env


# cpp.md's blocks compile C++ (a minute): the same program under any Python.
@pytest.mark.parametrize("page", [pytest.param(p, marks=[once] if p.name == "cpp.md" else [])
                                  for p in pages()], ids=lambda p: p.name)
def test_every_block_of_the_page_runs(page, tmp_path):
    blocks = blocks_of(page)
    if any(b.lang == "cpp" for b in blocks) and "ONNXMAP_DOCS_CXX" not in os.environ:
        pytest.fail("ONNXMAP_DOCS_CXX is unset: run this test through meson test")
    uses_server = "SERVER" in page.read_text()
    server, url = start_server(tmp_path) if uses_server else (None, "")
    try:
        run_page(page, blocks, tmp_path, page_env(tmp_path, url))
    finally:
        if server:
            server.kill()
            server.wait()


def run_page(page, blocks, folder, env):
    for i, block in enumerate(blocks):
        if block.lang not in RUNNABLE:
            continue
        if block.marker.startswith("<!-- not run:"):
            print(f"{page.name}:{block.line}: {block.marker}")
            continue
        # A program of its own brings its own sanitizer runtime, if any: not the interpreter's.
        block_env = {k: v for k, v in env.items()
                     if not (block.lang == "cpp" and k == "LD_PRELOAD")}
        r = subprocess.run(command_for(block, folder, page), cwd=folder, env=block_env,
                           capture_output=True, text=True, timeout=300)
        where = f"{page.name}:{block.line} ({block.lang})"
        assert r.returncode == 0, f"{where} exits {r.returncode}:\n{r.stdout}\n{r.stderr}"
        following = blocks[i + 1] if i + 1 < len(blocks) else None
        if following and following.lang == "text":
            varies = following.marker == "<!-- output varies -->"
            assert normalized(r.stdout, varies) == normalized(following.text, varies), \
                f"{where}: the output differs from the page's (line {following.line}):\n{r.stdout}"
