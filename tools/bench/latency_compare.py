"""Compares `bench latency` result files of two builds: the milliseconds of one suggest call per dimension and n,
as the median over files of each file's median over repeats. `--method gp-ei-thread-cpu` (the default) reads thread
CPU time, which other load inflates least but which some kernels tick in 4 ms steps; `--method gp-ei` reads wall
time, the one to use on a quiet machine.

    python3 tools/bench/latency_compare.py --before a/latency.json b/latency.json --after c/latency.json d/latency.json

Prints a markdown table (d, n, before, after, ratio)."""
import argparse
import json
import statistics

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--before", nargs="+", required=True)
parser.add_argument("--after", nargs="+", required=True)
parser.add_argument("--method", default="gp-ei-thread-cpu", choices=["gp-ei-thread-cpu", "gp-ei"])
args = parser.parse_args()


def medians(path):
    out = {}
    for e in json.load(open(path))["experiments"]:
        for m in e["methods"]:
            if m["name"] != args.method:
                continue
            d = int(e["name"].rsplit("_d", 1)[1])
            for j, n in enumerate(m["runs"][0]["x"]):
                out[(d, int(n))] = statistics.median(r["y"][j] for r in m["runs"])
    return out


before = [medians(p) for p in args.before]
after = [medians(p) for p in args.after]
for key in sorted(before[0]):
    b = statistics.median(x[key] for x in before)
    a = statistics.median(x[key] for x in after)
    ratio = f"{a / b:.2f}" if b > 0 else "–"  # below the timer's resolution
    print(f"| {key[0]} | {key[1]} | {b:.1f} | {a:.1f} | {ratio} |")
