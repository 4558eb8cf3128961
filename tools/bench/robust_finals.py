#!/usr/bin/env python3
"""Per-experiment finals of a `bench robust` (or tools/peers) result file, for the numbers `bench robust-table` does
not print: for each method, the median final regret of the best observed point (`runs[].y[-1]`), the median true
regret of the recommended point (`runs[].recommended`, noisy variants), in how many runs the recommendation was
better / worse than the best observed point, and in how many the final regret is below `--basin` (e.g. 0.5 on
Easom: the needle's basin reached) with those runs' median (how precisely the basin was refined). With
`--compare OTHER.json` it prints instead, per file pair, how many runs' curves (`y`, matched by experiment, method
and seed) differ: 0 means the two files hold the same trajectories and only `recommended` can differ.

    python3 tools/bench/robust_finals.py FILE.json [--only PREFIX] [--basin 0.5] [--compare OTHER.json]
"""
import argparse
import json
import statistics

parser = argparse.ArgumentParser()
parser.add_argument("file")
parser.add_argument("--only", default="", help="experiments whose name starts with this")
parser.add_argument("--basin", type=float, help="also count runs whose final regret is below this")
parser.add_argument("--compare", help="count the runs whose curves differ from this file's")
args = parser.parse_args()


def curves(path):
    return {
        (e["name"], m["name"], r["seed"]): r["y"]
        for e in json.load(open(path))["experiments"]
        if e["name"].startswith(args.only)
        for m in e["methods"]
        for r in m["runs"]
    }


if args.compare:
    a, b = curves(args.file), curves(args.compare)
    common = a.keys() & b.keys()
    differ = sum(a[k] != b[k] for k in common)
    print(f"{len(common)} runs in both files, {differ} with different curves, {len(a.keys() ^ b.keys())} in one only")
    raise SystemExit

for e in json.load(open(args.file))["experiments"]:
    if not e["name"].startswith(args.only):
        continue
    for m in e["methods"]:
        runs = m["runs"]
        final = [r["y"][-1] for r in runs]
        line = f"{e['name']:32} {m['name']:18} runs {len(runs):2}  best observed {statistics.median(final):.4g}"
        rec = [(r["recommended"], r["y"][-1]) for r in runs if r.get("recommended") is not None]
        if rec:
            better = sum(a < b for a, b in rec)
            worse = sum(a > b for a, b in rec)
            line += f"  recommended {statistics.median(a for a, _ in rec):.4g} (better {better}, worse {worse})"
        if args.basin is not None:
            inside = [y for y in final if y < args.basin]
            line += f"  below {args.basin:g}: {len(inside)}"
            if inside:
                line += f" (their median {statistics.median(inside):.4g})"
        print(line)
