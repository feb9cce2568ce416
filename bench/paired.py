#!/usr/bin/python3
"""Times two builds of bench/reader_bench against each other on a noisy machine: round after
round, each binary runs the same benchmarks on the same models, the order swapped every round,
and each round gives one new/base ratio per benchmark. A ratio is of medians measured minutes
apart on the same machine state, so the spread over rounds says what the noise is.

    bench/paired.py BASE_READER_BENCH NEW_READER_BENCH MODELS_DIR [--rounds N] [--filter RE]
                    [--evict] [--metric cpu_ms] [--out FILE --title TEXT --base-label L --new-label L]

MODELS_DIR holds the models tools/bench.sh makes (llm-320g, llm-7b-ext, llm-2g, graph-heavy).
Prints a markdown table: each benchmark's base and new median, the median of the per-round
ratios (below 1: the new build is faster), their range, and in how many rounds new was faster.
--metric cpu_ms compares the CPU time per open the open benchmarks count (every thread's, the
kernel's included) instead of the wall time: on a machine whose cores are shared with other work,
the wall time of a run also holds the time it waited for a core. --evict drops every model file from the page cache (posix_fadvise) before each run, so that each
build fills the page cache its own way (a build that reads in large folios would otherwise lend
them to the other). --out appends the table to FILE under a heading with the date, the labels
of both builds (which commit each is) and the options.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

DEFAULT_FILTER = r"^onnxmap_(open|lookup|walk_nodes|fetch_warm|fetch_cold)/"


def evict(models):
    """Drops the models' pages from the page cache (pages mapped by a process stay)."""
    for name in os.listdir(models):
        fd = os.open(os.path.join(models, name), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def run(binary, models, pattern, metric):
    """Median real time (ns), or of counter `metric` (ms, as ns), of every benchmark `pattern`
    selects that has it, one process."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([binary, f"--benchmark_filter={pattern}", "--benchmark_repetitions=3",
                        "--benchmark_report_aggregates_only=true", "--benchmark_min_time=0.1",
                        "--benchmark_format=json", f"--benchmark_out={out.name}"],
                       env=dict(os.environ, ONNXMAP_BENCH_DIR=models), check=True,
                       stdout=subprocess.DEVNULL)
        report = json.load(open(out.name))
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
    medians = [b for b in report["benchmarks"] if b.get("aggregate_name") == "median"]
    if metric == "real_time":
        return {b["run_name"]: b["real_time"] * scale[b["time_unit"]] for b in medians}
    return {b["run_name"]: b[metric] * scale["ms"] for b in medians if metric in b}


def text(ns):
    return f"{ns / 1e6:.3f} ms" if ns >= 1e5 else f"{ns:.1f} ns"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("models")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--filter", default=DEFAULT_FILTER)
    parser.add_argument("--evict", action="store_true")
    parser.add_argument("--metric", default="real_time", choices=["real_time", "cpu_ms"])
    parser.add_argument("--out")
    parser.add_argument("--title", default="Paired runs")
    parser.add_argument("--base-label", default="BASE")
    parser.add_argument("--new-label", default="NEW")
    args = parser.parse_args()
    base, new = {}, {}
    for r in range(args.rounds):
        order = [(args.base, base), (args.new, new)]
        for binary, into in order if r % 2 == 0 else reversed(order):
            if args.evict:
                evict(args.models)
            for name, ns in run(binary, args.models, args.filter, args.metric).items():
                into.setdefault(name, []).append(ns)
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)
    lines = ["| benchmark | base | new | new / base (median of rounds) | range | new faster |",
             "|---|---|---|---|---|---|"]
    for name in sorted(base.keys() & new.keys()):
        ratios = [n / b for b, n in zip(base[name], new[name])]
        lines.append(f"| {name} | {text(statistics.median(base[name]))} | "
                     f"{text(statistics.median(new[name]))} | {statistics.median(ratios):.3f} | "
                     f"{min(ratios):.2f}-{max(ratios):.2f} | "
                     f"{sum(r < 1 for r in ratios)} of {len(ratios)} |")
    print("\n".join(lines))
    if args.out:
        heading = [f"## {args.title}", "",
                   f"Written by `bench/paired.py` on {datetime.date.today()}: {args.rounds} rounds, "
                   f"filter `{args.filter}`{', page cache dropped before each run' if args.evict else ''}"
                   f"{', CPU time per open (cpu_ms), not wall time' if args.metric == 'cpu_ms' else ''}. "
                   f"base: {args.base_label}, new: {args.new_label}.", ""]
        with open(args.out, "a") as out:
            out.write("\n".join(heading + lines) + "\n\n")


if __name__ == "__main__":
    main()
