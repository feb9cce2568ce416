"""The viewer's memory over many drawings of the graph page (issue 54: at most 5 MB of growth over
10,000 drawings with unfolded clusters). Starts `onnxmap view` on a model, asks for drawings
with every box of the first level unfolded (and, in turn, each alone), and prints the viewer's
resident memory (VmRSS) every `step` drawings, as a markdown section (bench/view-layout-rss.md is
this script's output, one section a model, appended). Each drawing is laid out by a `dot`
process of its own, ended when the answer comes: the viewer's child processes are counted too
(none should be left between drawings).

    python3 bench/view_layout_rss.py ONNXMAP MODEL [DRAWINGS=10000] [STEP=1000] >> OUT.md
"""
import datetime
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "view"))
from viewer import Viewer  # noqa: E402


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def children(pid):
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            out += [int(p) for p in f.read().split()]
    return out


def main(argv):
    onnxmap, model = argv[1], argv[2]
    drawings = int(argv[3]) if len(argv) > 3 else 10000
    step = int(argv[4]) if len(argv) > 4 else 1000
    with Viewer(onnxmap, model) as v:
        first = v.get("/api/graph")
        folded = [b["id"] for b in first["boxes"] if b["kind"] in ("group", "repeat", "range")]
        opens = ["\n".join(folded)] + folded
        print(f"## {os.path.basename(model)}: {len(first['boxes'])} boxes, {len(folded)} to "
              f"unfold\n\n{datetime.date.today()}, load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the start. "
              "The drawings cycle through the first level with every folded box unfolded, "
              "then with each alone.\n\n"
              "| drawings | viewer VmRSS (KiB) | child processes left | seconds |\n"
              "|---:|---:|---:|---:|")
        start = time.monotonic()
        base = None
        for k in range(drawings):
            d = v.get("/api/graph", open=opens[k % len(opens)])
            assert d["clusters"] and d["layout_note"] == "", d["layout_note"]
            if k + 1 == 100 or (k + 1) % step == 0:
                rss = rss_kib(v.process.pid)
                base = base or rss
                print(f"| {k + 1} | {rss} | {len(children(v.process.pid))} | "
                      f"{time.monotonic() - start:.0f} |", flush=True)
        print(f"\nThe viewer's growth from drawing 100 to {drawings}: "
              f"{(rss - base) / 1024:.1f} MiB (issue 54's target: at most 5 MB).\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
