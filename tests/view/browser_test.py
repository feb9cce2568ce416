#!/usr/bin/python3
"""The viewer's pages in a real browser: makes three models (a small one, a 320 GB sparse one,
one of 360,003 nodes), starts `onnxmap view` on each and runs browser_test.mjs (puppeteer-core
driving the system's Chromium) against them. Screenshots of every page land in
WORK/view-screenshots/.

    browser_test.py PATH/TO/onnxmap WORK

Skips (exit 77) when Chromium is absent or cannot start; fails when node or npm is absent.
puppeteer-core (pinned in browser/package.json and package-lock.json) is installed with `npm ci`
into WORK/browser-modules, once per lock file; it downloads no browser.
"""
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]
from viewer import Viewer  # noqa: E402

ONNXMAP = sys.argv[1]
WORK = pathlib.Path(sys.argv[2]).resolve()
SKIP = 77  # Meson's code for a skipped test

# label, file, the arguments of `onnxmap synth`
MODELS = [
    ("small", "model.onnx", ["--layers", "2", "--hidden", "64"]),
    ("llm-320g", "llm-320g.onnx", ["--layers", "80", "--hidden", "8192", "--ffn", "28672",
                                   "--vocab", "128256", "--dtype", "float32", "--sparse"]),
    ("graph-heavy", "graph-heavy.onnx", ["--layers", "20000", "--hidden", "4", "--vocab", "16"]),
]


def find_chromium():
    """The Chromium to drive, or exits with SKIP and the reason."""
    chromium = os.environ.get("CHROMIUM") or "/usr/bin/chromium"
    if not (os.path.isfile(chromium) and os.access(chromium, os.X_OK)):
        print(f"SKIP: no Chromium at {chromium} (install Debian's chromium, or set CHROMIUM)")
        sys.exit(SKIP)
    try:
        r = subprocess.run([chromium, "--headless", "--no-sandbox", "--dump-dom", "about:blank"],
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        print(f"SKIP: {chromium} --headless did not answer within 60 s")
        sys.exit(SKIP)
    if r.returncode != 0 or "<html" not in r.stdout:
        print(f"SKIP: {chromium} --headless cannot start: {r.stderr.strip()[-400:]}")
        sys.exit(SKIP)
    return chromium


def find_node():
    """node and npm, or exits with a failure saying what to install."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        missing = " and ".join(name for name, path in (("node", node), ("npm", npm)) if not path)
        print(f"FAIL: {missing} not found on PATH: the browser tests need Node.js 18 or newer and "
              f"npm (Debian: apt-get install nodejs npm; tools/setup.sh installs them)")
        sys.exit(1)
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 18:
        print(f"FAIL: node {version} is too old: puppeteer-core needs Node.js 18 or newer")
        sys.exit(1)
    return node, npm


def install_modules(npm):
    """WORK/browser-modules/node_modules from the pinned lock file; kept while the lock is the same."""
    modules = WORK / "browser-modules"
    lock = (HERE / "browser" / "package-lock.json").read_bytes()
    stamp = modules / "node_modules" / ".onnxmap-lock-sha256"
    digest = hashlib.sha256(lock).hexdigest()
    if stamp.is_file() and stamp.read_text() == digest:
        return modules
    modules.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(HERE / "browser" / name, modules / name)
    r = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=modules,
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL: npm ci in {modules} failed (is the npm registry reachable?):\n"
              f"{r.stdout[-2000:]}{r.stderr[-2000:]}")
        sys.exit(1)
    stamp.write_text(digest)
    return modules


def main():
    chromium = find_chromium()
    node, npm = find_node()
    modules = install_modules(npm)
    shots = WORK / "view-screenshots"
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    status = 1
    with tempfile.TemporaryDirectory() as tmp:
        viewers = []
        try:
            for label, name, args in MODELS:
                path = pathlib.Path(tmp) / name
                subprocess.run([ONNXMAP, "synth", path, *args], check=True, capture_output=True)
                viewers.append((label, Viewer(ONNXMAP, path).__enter__()))
            command = [node, str(HERE / "browser_test.mjs"), chromium, str(shots)]
            command += [f"{label}={v.url}" for label, v in viewers]
            # Run from the modules' folder: the script requires puppeteer-core from there.
            status = subprocess.run(command, cwd=modules, timeout=400).returncode
        except subprocess.TimeoutExpired:
            print("FAIL: browser_test.mjs did not end within 400 s")
        finally:
            for label, v in viewers:
                code = v.stop()
                if code != 0:
                    print(f"FAIL {label}: the viewer exited with status {code} on Ctrl-C: "
                          f"{v.stderr[-1000:]}")
                    status = status or 1
    print(f"screenshots: {shots}/")
    return status


if __name__ == "__main__":
    sys.exit(main())
