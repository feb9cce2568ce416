"""Every public header opens with its thread rule, and the example in a header's opening comment
compiles against the installed API.

An example is a run of comment lines indented by three spaces ("//   code") after an empty
comment line, in the comment a header opens with; it is compiled as the body of a function of its own, after PRELUDE, which
declares what the examples leave to the caller (a device allocator, an upload, weight bytes).
The examples compile side by side, once, before the first case.

The compiler and include folders are conftest.py's (compile_public).
"""
import pathlib

import pytest

HEADERS = pathlib.Path(__file__).resolve().parents[2] / "include" / "onnxmap"

PRELUDE = """#include <cstddef>
#include <iostream>
#include <span>
#include <vector>

#include "onnxmap/onnxmap.hpp"

// What the examples leave to the caller.
[[maybe_unused]] static void upload(std::size_t, std::span<const std::byte>) {}
[[maybe_unused]] static std::vector<void*> allocate_on_gpu(const std::vector<onnxmap::LoadItem>&) {
  return {};
}
"""

# Headers that show an example: a header losing its example, or the extraction finding none,
# fails here rather than passing with nothing compiled.
WITH_EXAMPLES = {"builder.hpp", "check.hpp", "device.hpp", "load.hpp", "model.hpp"}


def opening_comment(path):
    """The comment lines a header opens with (after #pragma once), without their slashes."""
    lines = path.read_text().splitlines()
    out = []
    for line in lines[1:]:
        if not line.startswith("//"):
            break
        out.append(line[2:])
    return out


def example_of(path):
    """The example in a header's opening comment ("" when it has none): the runs of lines
    indented by three spaces that follow an empty comment line (a list item's indented
    continuation is prose)."""
    code, previous, inside = [], "", False
    for line in opening_comment(path):
        inside = line.startswith("   ") and (inside or previous.strip() == "")
        if inside:
            code.append(line[3:])
        previous = line
    return "\n".join(code)


def public_headers():
    return sorted(p for p in HEADERS.glob("*.hpp"))


def examples_source(folder):
    """A file of PRELUDE and each header's example as a function of its own."""
    bodies = []
    for path in public_headers():
        example = example_of(path)
        if example:
            bodies.append(f"// {path.name}\n[[maybe_unused]] static void example_{path.stem}() {{\n"
                          f"  const std::vector<std::byte> weight_bytes(64);\n"
                          f"  [[maybe_unused]] const std::span<const std::byte> weights(weight_bytes);\n"
                          f"{example}\n}}\n")
    source = folder / "examples.cpp"
    source.write_text(PRELUDE + "\n".join(bodies))
    return source


@pytest.fixture(scope="module")
def compiled(compile_public, tmp_path_factory):
    source = examples_source(tmp_path_factory.mktemp("examples"))
    return compile_public(source, "-Wall", "-Wextra"), source


def test_examples_are_found():
    found = {p.name for p in public_headers() if example_of(p)}
    assert found == WITH_EXAMPLES, f"headers with an example: {sorted(found)}"


def test_examples_compile(compiled):
    result, source = compiled
    assert result.returncode == 0, \
        f"a header's example does not compile:\n{result.stderr}\n{source.read_text()}"


@pytest.mark.parametrize("header", [p.name for p in public_headers()])
def test_header_opens_with_its_thread_rule(header):
    comment = "\n".join(opening_comment(HEADERS / header))
    assert "Threads:" in comment, \
        f"{header} does not say in its opening comment what threads may do (\"Threads: ...\")"
