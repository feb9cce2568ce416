"""The viewer's memory over many drawings of the graph page (issue 54: at most 5 MB of growth over
10,000 drawings with unfolded clusters). Starts `onnxmap view` on a model, asks for drawings
with every box of the first level unfolded (and, in turn, each alone), and prints the viewer's
resident memory (VmRSS) and that of its layout helpers every `step` drawings.

    python3 bench/view_layout_rss.py ONNXMAP MODEL [DRAWINGS=10000] [STEP=1000]
"""
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
        print(f"model {os.path.basename(model)}: {len(first['boxes'])} boxes, "
              f"{len(folded)} to unfold; drawings, viewer VmRSS (KiB), helpers' VmRSS (KiB), s")
        start = time.monotonic()
        base = None
        for k in range(drawings):
            d = v.get("/api/graph", open=opens[k % len(opens)])
            assert d["clusters"] and d["layout"] != "layered", d["layout_note"]
            if k + 1 == 100 or (k + 1) % step == 0:
                rss = rss_kib(v.process.pid)
                base = base or rss
                helpers = [rss_kib(p) for p in children(v.process.pid)]
                print(f"{k + 1} {rss} {helpers} {time.monotonic() - start:.0f}", flush=True)
        print(f"growth from drawing 100 to {drawings}: {(rss - base) / 1024:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
