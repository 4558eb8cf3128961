#!/usr/bin/env python3
"""Where a run's progress comes from, by a point's place in its call: for each problem of a `bench robust --trace`
file, the decades of true regret each kind of model-based point took off the best point so far, per run (mean over
the runs), and how many such points a run had.

A point's kind is `G` (global) or `L` (local step), from its position in the local cycle (`gp-ei`: every fourth
model-based point after the initial design is global), followed by its place in its call (0 = the call's first
suggestion; a call of `--batch Q` holds the evaluations `Q·c … Q·c + Q − 1`). An improvement is credited to the
point that first reached it, in evaluation order, so within one call earlier places are credited first.
Meant for noiseless runs: on a noisy model a call's first point may be a replicate, which this counts as a step of
the cycle position it stands at.

    python3 tools/bench/robust_call_order.py TRACE.jsonl --batch Q [--cycle 4]
"""
import argparse
import collections
import json
import math

parser = argparse.ArgumentParser()
parser.add_argument("trace")
parser.add_argument("--batch", type=int, default=1, help="suggestions per call of the traced runs")
parser.add_argument("--cycle", type=int, default=4, help="local cycle: one global point in this many")
args = parser.parse_args()

runs = collections.defaultdict(list)
for line in open(args.trace):
    r = json.loads(line)
    runs[(r["problem"], r["variant"], r["method"], r["seed"])].append(r)

decades = collections.defaultdict(collections.Counter)
points = collections.defaultdict(collections.Counter)
count = collections.Counter()
for (problem, variant, method, _), rows in runs.items():
    rows.sort(key=lambda r: r["index"])
    n_init = sum(r["phase"] == "initial_design" for r in rows)
    key = (problem, variant, method)
    count[key] += 1
    best = math.inf
    for r in rows:
        regret = max(r["regret"], 1e-12)
        if r["phase"] != "initial_design":
            kind = ("G" if (r["index"] - n_init) % args.cycle == 0 else "L") + str(r["index"] % args.batch)
            points[key][kind] += 1
            if regret < best:
                decades[key][kind] += math.log10(best / regret)
        best = min(best, regret)

for key in sorted(count):
    n = count[key]
    cells = " ".join(
        f"{k}: {decades[key][k] / n:.2f} dec ({points[key][k] / n:.1f} pts)" for k in sorted(points[key])
    )
    total = sum(decades[key].values()) / n
    print(f"{'/'.join(key)} ({n} runs): {cells}; all model points {total:.2f} dec")
