"""Every name the library exports has a user outside onnxmap: code a user would write shows it.

An exported declaration is one that ONNXMAP_API marks in include/onnxmap/ (a class, or a free
function). Its users are what a library user reads and copies: the C++ blocks of docs/*.md and
README.md and the names those pages set in code type (`name` or `name(...)`), examples/, and the
examples in the public headers' opening comments. A name only
lib/, the tests, the command, the viewer or the Python binding use belongs in lib/tooling/ (for
the front ends) or in the library's own headers, not in the API: each such name fails here.
"""
import pathlib
import re

import pytest

from header_examples_test import example_of, public_headers

ROOT = pathlib.Path(__file__).resolve().parents[2]
CPP_BLOCK = re.compile(r"```cpp\n(.*?)```", re.S)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
# A class or struct marked as a whole, or a function: its name is the word before the first "(".
MARKED_TYPE = re.compile(r"\b(?:class|struct)\s+ONNXMAP_API\s+(\w+)")
MARKED_FUNCTION = re.compile(r"ONNXMAP_API\b([^;{]*?)\b(\w+)\s*\(", re.S)


def exported_declarations():
    """(header name, declared name) for each ONNXMAP_API mark, in header order."""
    found = []
    for path in public_headers():
        if path.name == "export.hpp":  # defines the mark
            continue
        text = path.read_text()
        types = [(m.start(), m.group(1)) for m in MARKED_TYPE.finditer(text)]
        functions = [(m.start(), m.group(2)) for m in MARKED_FUNCTION.finditer(text)
                     if not MARKED_TYPE.search(text, m.start() - 16, m.end())]
        found += [(path.name, name) for _, name in sorted(types + functions)]
    return found


def users_code():
    """The code of onnxmap's users: docs' and README's C++ blocks and code spans, examples/,
    header examples."""
    parts = [example_of(path) for path in public_headers()]
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text()
        parts += CPP_BLOCK.findall(text) + CODE_SPAN.findall(CPP_BLOCK.sub("", text))
    parts += [p.read_text() for p in sorted((ROOT / "examples").rglob("*.cpp"))]
    return "\n".join(parts)


DECLARATIONS = exported_declarations()
USERS = users_code()


def test_every_mark_is_found():
    """The parser above sees each mark once: a declaration it missed would pass unexamined."""
    marks = sum(p.read_text().count("ONNXMAP_API") for p in public_headers()
                if p.name != "export.hpp")
    assert len(DECLARATIONS) == marks


@pytest.mark.parametrize("header,name", DECLARATIONS, ids=[f"{h}:{n}" for h, n in DECLARATIONS])
def test_an_exported_name_has_a_user(header, name):
    assert re.search(rf"\b{name}\b", USERS), (
        f"{name} ({header}) is exported, but no docs/ or README code, example or header "
        f"example shows it: show its use to users, or move it out of the API (lib/tooling/ for "
        f"the front ends, a library header for lib/)")
