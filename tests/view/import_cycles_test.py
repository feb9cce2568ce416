#!/usr/bin/env python3
"""The viewer page's modules (tools/onnxmap/viewer/www/) import each other without a cycle.

Usage: import_cycles_test.py FILE...   (the page's files, as tools/onnxmap/viewer/meson.build embeds
                                        them; or one folder, for all of its files)

Reads the relative imports of each .js file (`import ... from './x.js'`, `import './x.js'`,
`export ... from './x.js'`, `import('./x.js')`) and fails when:
  - the modules import each other in a cycle (each cycle found is printed as a path),
  - a module imports the entry module (the one index.html loads with <script type="module">),
  - an import names a file that is not among the files given (so not served by the viewer),
  - a named import ({ a, b as c }) names something its module does not export,
  - a file of the files' folder is not among the files given (it would not be embedded).
Python's standard library only; no JavaScript runtime needed.
"""
import os
import re
import sys

# Statements only (at the start of a line), so a "from './x.js'" in a comment or string does not
# count; an import's braces may span lines.
STATIC_FROM = re.compile(r"^\s*(import|export)\b([^;'\"]*?)\bfrom\s*(['\"])(.+?)\3", re.MULTILINE)
BARE_IMPORT = re.compile(r"^\s*import\s*(['\"])(.+?)\1", re.MULTILINE)
DYNAMIC_IMPORT = re.compile(r"\bimport\s*\(\s*(['\"])(.+?)\1\s*\)")
NAMED = re.compile(r"\{([^}]*)\}")
EXPORT_DECL = re.compile(
    r"^\s*export\s+(?:default\s+)?(?:async\s+)?(?:function\s*\*?|class|const|let|var)\s+([A-Za-z_$][\w$]*)",
    re.MULTILINE)
EXPORT_LIST = re.compile(r"^\s*export\s*\{([^}]*)\}", re.MULTILINE)
ENTRY = re.compile(r"<script\b[^>]*\btype=[\"']module[\"'][^>]*\bsrc=[\"']/?([^\"']+)[\"']")


def names_in_braces(text: str, exported: bool) -> set[str]:
    """The names of "{ a, b as c }": the imported (a, b) or the exported (a, c) side."""
    names = set()
    for part in text.split(","):
        words = part.split()
        if not words:
            continue
        if len(words) == 3 and words[1] == "as":
            names.add(words[2] if exported else words[0])
        else:
            names.add(words[0])
    return names


def parse(path: str) -> tuple[list[tuple[str, set[str]]], set[str]]:
    """([(imported module, names imported from it)], names exported) of one module."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    imports = []
    for match in STATIC_FROM.finditer(text):
        clause, target = match.group(2), match.group(4)
        braces = NAMED.search(clause)
        imports.append((target, names_in_braces(braces.group(1), False) if braces else set()))
    for match in BARE_IMPORT.finditer(text):
        imports.append((match.group(2), set()))
    for match in DYNAMIC_IMPORT.finditer(text):
        imports.append((match.group(2), set()))
    exports = set(EXPORT_DECL.findall(text))
    for match in EXPORT_LIST.finditer(text):
        exports |= names_in_braces(match.group(1), True)
    return imports, exports


def find_cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Each cycle reached by a depth-first walk, as [a, b, ..., a] (one per back edge)."""
    cycles = []
    state = {}  # name -> 1 while on the walk's path, 2 once done
    path = []

    def walk(node: str) -> None:
        state[node] = 1
        path.append(node)
        for target in graph.get(node, []):
            if state.get(target) == 1:
                cycles.append(path[path.index(target):] + [target])
            elif target not in state:
                walk(target)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node)
    return cycles


def main() -> int:
    args = sys.argv[1:]
    if len(args) == 1 and os.path.isdir(args[0]):
        args = [os.path.join(args[0], name) for name in sorted(os.listdir(args[0]))]
    if not args:
        print(__doc__)
        return 2
    files = {os.path.basename(path): path for path in args}
    failures = []

    folders = {os.path.dirname(os.path.abspath(path)) for path in args}
    for folder in sorted(folders):
        for name in sorted(os.listdir(folder)):
            if os.path.isfile(os.path.join(folder, name)) and name not in files:
                failures.append(f"{name} is in {os.path.basename(folder)}/ but not among the page's files "
                                "(add it to view_www in tools/onnxmap/viewer/meson.build)")

    entries = set()
    for name, path in files.items():
        if name.endswith(".html"):
            with open(path, encoding="utf-8") as f:
                entries |= {os.path.basename(src) for src in ENTRY.findall(f.read())}

    modules = {name: parse(path) for name, path in files.items() if name.endswith(".js")}
    graph = {}
    for name, (imports, _) in sorted(modules.items()):
        graph[name] = []
        for target, names in imports:
            if not target.startswith("./") or "/" in target[2:]:
                failures.append(f"{name} imports '{target}': the page's modules import './name.js' only")
                continue
            target_name = target[2:]
            if target_name not in modules:
                failures.append(f"{name} imports '{target}', which is not among the page's modules")
                continue
            graph[name].append(target_name)
            if target_name in entries:
                failures.append(f"{name} imports the entry module {target_name} (the entry imports, "
                                "nothing imports it)")
            missing = names - modules[target_name][1]
            if missing:
                failures.append(f"{name} imports {', '.join(sorted(missing))} from {target_name}, "
                                "which does not export it")

    cycles = find_cycles(graph)
    for cycle in cycles:
        failures.append("import cycle: " + " -> ".join(cycle))

    edges = sum(len(targets) for targets in graph.values())
    if failures:
        for failure in failures:
            print(f"FAIL: {failure}")
        print(f"{len(failures)} failure(s) over {len(modules)} modules, {edges} imports")
        return 1
    print(f"ok: {len(modules)} modules, {edges} imports, no cycle (entry: {', '.join(sorted(entries)) or 'none'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
