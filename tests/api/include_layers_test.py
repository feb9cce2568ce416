#!/usr/bin/env python3
"""The C++ includes follow the layer table of docs/architecture.md, and no file includes itself
round a circle.

Usage: include_layers_test.py SOURCE_ROOT

Reads every quoted #include of lib/ and tools/onnxmap/ (.cpp and .hpp; angle-bracket includes
are system and public headers) and fails when:
  - files include each other in a circle (each circle found is printed as a path);
  - a folder of lib/ includes a folder of lib/ whose row of the layer table ("## The layers" in
    docs/architecture.md: the first cell of each row names its folders, the top row highest)
    stands above its own, or folder includes make a circle (peers of one row included);
  - a folder of lib/ is missing from the table, or the table names a folder lib/ does not have;
  - tools/onnxmap/shared/ includes the command or the viewer, or the viewer includes the command;
  - a file of tools/onnxmap/ includes a file of lib/ other than lib/tooling/tooling.hpp, or
    tooling.hpp includes a file of lib/ (the front ends see the public headers and it only).
Python's standard library only.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
TABLE_FOLDER = re.compile(r"`([a-z_]+)/`")
TOOLING = "lib/tooling/tooling.hpp"


def sources(root, folder):
    """Every .cpp and .hpp below root/folder, as paths relative to root."""
    out = []
    for here, _, names in os.walk(os.path.join(root, folder)):
        out += [os.path.relpath(os.path.join(here, n), root)
                for n in names if n.endswith((".cpp", ".hpp"))]
    return sorted(out)


def resolve(root, including, name, search):
    """The file `name` (as written in `including`) names, relative to root, or None for a
    header outside the tree (generated, public)."""
    for base in [os.path.dirname(including)] + search:
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def include_graph(root):
    """file -> the files of lib/ and tools/onnxmap/ it includes."""
    search = ["lib", "include", "tools/onnxmap", "lib/tooling"]
    graph = {}
    for path in sources(root, "lib") + sources(root, "tools/onnxmap"):
        with open(os.path.join(root, path), encoding="utf-8") as f:
            text = f.read()
        targets = (resolve(root, path, name, search) for name in INCLUDE.findall(text))
        graph[path] = sorted({t for t in targets if t and not t.startswith("include/")})
    return graph


def circles(graph):
    """The strongly connected parts of `graph` with more than one node (or a self edge), each
    as a path round it (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph.get(start, [])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        part.append(top)
                        if top == node:
                            break
                    if len(part) > 1 or node in graph.get(node, []):
                        found.append(sorted(part))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(graph.get(child, []))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def layer_rows(root):
    """lib folder -> its row in the layer table (0: the top row)."""
    with open(os.path.join(root, "docs", "architecture.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## The layers", 1)[1].split("\n## ", 1)[0]
    rows = {}
    body = [line for line in section.splitlines() if line.startswith("|")][2:]  # header, rule
    for number, line in enumerate(body):
        for folder in TABLE_FOLDER.findall(line.split("|")[1]):
            rows[folder] = number
    return rows


def lib_folder(path):
    parts = path.split("/")
    return parts[1] if parts[0] == "lib" and len(parts) > 2 else None


def tools_part(path):
    """'shared', 'viewer' or 'command' for a file of tools/onnxmap/, else None."""
    if not path.startswith("tools/onnxmap/"):
        return None
    rest = path[len("tools/onnxmap/"):].split("/")
    return rest[0] if len(rest) > 1 else "command"


def problems(root):
    graph = include_graph(root)
    found = [" -> ".join(c + [c[0]]) + ": an include circle" for c in circles(graph)]
    rows = layer_rows(root)
    folders = {lib_folder(p) for p in graph} - {None}
    found += [f"lib/{f}/ is not in the layer table of docs/architecture.md"
              for f in sorted(folders - rows.keys())]
    found += [f"the layer table names {f}/, which lib/ does not have"
              for f in sorted(rows.keys() - folders)]
    folder_graph = {f: set() for f in folders}
    allowed_tools = {"command": {"command", "viewer", "shared"}, "viewer": {"viewer", "shared"},
                     "shared": {"shared"}}
    for path, targets in graph.items():
        for target in targets:
            a, b = lib_folder(path), lib_folder(target)
            if a and b and a != b:
                folder_graph[a].add(b)
                if a in rows and b in rows and rows[b] < rows[a]:
                    found.append(f"{path} includes {target}: lib/{b}/ is a layer above "
                                 f"lib/{a}/ in docs/architecture.md")
            if (tools_part(path) or path == TOOLING) and target.startswith("lib/") \
                    and target != TOOLING:
                found.append(f"{path} includes {target}: the front ends see only the public "
                             f"headers and {TOOLING}, which includes nothing of lib/")
            ta, tb = tools_part(path), tools_part(target)
            if ta and tb and tb not in allowed_tools[ta]:
                found.append(f"{path} includes {target}: tools/onnxmap/{ta} may not include "
                             f"the {tb}")
    found += ["lib/ folders include each other in a circle: " + " -> ".join(c + [c[0]])
              for c in circles({f: sorted(t) for f, t in folder_graph.items()})]
    return found, len(graph)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    found, files = problems(sys.argv[1])
    for line in found:
        print(line)
    if not found:
        print(f"{files} files: no include circle, every include down the layer table")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
