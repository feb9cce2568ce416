#!/usr/bin/python3
"""Times the graph page's first request on a fresh viewer, two builds of onnxmap paired: each
round starts `onnxmap view MODEL --port 0 --no-browser` with each binary (the order swapped every
round), sends `GET /api/graph` as soon as the URL prints and times its answer (the target of
issue 54: within 1 s). The viewer starts its warm-up (the summary, then the first drawing) as it
opens the model, before the URL prints; the request waits for what the warm-up has not done yet.

    bench/view_first_graph.py BASE_ONNXMAP NEW_ONNXMAP MODEL... [--rounds N] [--api PATH]
                              [--out FILE --title TEXT --base-label L --new-label L]

Prints a markdown table: per model, each binary's median time to the URL and to the answer, every
run, the median of the per-round new/base ratios (below 1: new is faster) and their range, the
CPU time the viewer had used (all its threads) when the answer came, which a loaded machine
stretches less than the wall-clock times, and the load average before and after. --api times another first request instead (api/summary:
the summary page's). --out appends the table to FILE under a heading.
"""
import argparse
import datetime
import os
import statistics
import subprocess
import sys
import time
import urllib.request


def cpu_ms(pid):
    """The CPU time (user and system, all threads) process `pid` has used, in ms."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1e3 / os.sysconf("SC_CLK_TCK")


def first_answer(onnxmap, model, api):
    """(ms from the start to the URL, ms from the request to the answer, the viewer's CPU ms
    until then, the answer's bytes)."""
    start = time.perf_counter()
    viewer = subprocess.Popen([onnxmap, "view", model, "--port", "0", "--no-browser"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = viewer.stdout.readline()
        url_ms = (time.perf_counter() - start) * 1e3
        url = line.split(" at ")[1].split()[0]
        asked = time.perf_counter()
        with urllib.request.urlopen(url + api, timeout=120) as answer:
            body = answer.read()
        answer_ms = (time.perf_counter() - asked) * 1e3
        return url_ms, answer_ms, cpu_ms(viewer.pid), len(body)
    finally:
        viewer.terminate()
        viewer.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("models", nargs="+")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--api", default="api/graph")
    parser.add_argument("--out")
    parser.add_argument("--title", default="The graph page's first request, fresh viewer")
    parser.add_argument("--base-label", default="base")
    parser.add_argument("--new-label", default="new")
    args = parser.parse_args()
    load_before = os.getloadavg()
    runs = {(m, b): [] for m in args.models for b in ("base", "new")}
    ratios = {m: [] for m in args.models}
    for r in range(args.rounds):
        for model in args.models:
            order = ("base", "new") if r % 2 == 0 else ("new", "base")
            answer = {}
            for which in order:
                url_ms, graph_ms, cpu, size = first_answer(getattr(args, which), model, args.api)
                runs[(model, which)].append((url_ms, graph_ms, cpu))
                answer[which] = graph_ms
                print(f"round {r} {os.path.basename(model)} {which}: url {url_ms:.0f} ms, "
                      f"{args.api} {graph_ms:.0f} ms, CPU {cpu:.0f} ms, {size} bytes", file=sys.stderr)
            ratios[model].append(answer["new"] / answer["base"])
    load_after = os.getloadavg()

    def med(model, which, k):
        return statistics.median(run[k] for run in runs[(model, which)])

    lines = [
        f"| model | build | URL printed (ms), median | first /{args.api} (ms), median | runs (ms) |"
        " new/base, median | range | viewer CPU till then (ms), median |",
        "|---|---|---:|---:|---|---:|---|---:|",
    ]
    for model in args.models:
        name = os.path.basename(model).removesuffix(".onnx")
        q = ratios[model]
        for which, label in (("base", args.base_label), ("new", args.new_label)):
            every = " ".join(f"{run[1]:.0f}" for run in runs[(model, which)])
            ratio = f"{statistics.median(q):.2f}" if which == "new" else ""
            spread = f"{min(q):.2f}-{max(q):.2f}" if which == "new" else ""
            lines.append(f"| {name} | {label} | {med(model, which, 0):.0f} | "
                         f"{med(model, which, 1):.0f} | {every} | {ratio} | {spread} | "
                         f"{med(model, which, 2):.0f} |")
    lines.append("")
    lines.append(f"Load average (1, 5, 15 min) before: {' '.join(f'{x:.2f}' for x in load_before)}"
                 f"; after: {' '.join(f'{x:.2f}' for x in load_after)}; {args.rounds} rounds.")
    table = "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as out:
            out.write(f"\n## {args.title}\n\n{datetime.date.today()}: {args.base_label} against "
                      f"{args.new_label}.\n\n{table}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
