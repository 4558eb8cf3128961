#!/usr/bin/env python3
"""Compacts a bench result file for committing (standard library only): the general form of robust_compact.py.

Every run keeps its seed, its final values (the curve's last point, `evaluations`, `wall_s`, `suggest_ms`,
`recommended`, `min_batch_distance`) exactly, and its curve thinned to its last point plus checkpoints;
summaries, descriptions and every other field are kept as they are. Values are never rounded, so every table that
reads a run at a kept checkpoint prints the same numbers as on the full file. The document gets a `compacted` field
naming what was kept, and is written without whitespace.

    python3 tools/bench/compact.py IN.json OUT.json [--points N] [--at X,...] [--every S] [--min-step]
        [--rename old=new ...]

Checkpoints (their union is kept):
  --points N   N points by position: indices round(n·k/N) − 1, k = 1..N (robust_compact.py keeps these with N = 10)
  --at X,...   for each X, the last point with x ≤ X: the value the bench's checkpoint tables and the notes' table
               scripts (seed000_tables.py, seed002_tables.py) read at X
  --every S    the same for X = S, 2S, 3S, … up to the curve's last x
  --min-step   also the two adjacent points (x differing by 1) of each curve's lowest single step y_i − y_{i−1}, so
               that seed002_tables.py --tail prints the same lowest single-step regret
"""

import argparse
import json
import math


def last_at_or_before(xs, c):
    """Index of the last point with x ≤ c, or None."""
    best = None
    for i, x in enumerate(xs):
        if x <= c:
            best = i
        else:
            break
    return best


def kept_indices(xs, ys, points, at, every, min_step):
    n = len(ys)
    if n == 0:
        return []
    keep = {n - 1}
    if points:
        keep |= {max(0, round(n * k / points) - 1) for k in range(1, points + 1)}
    marks = list(at)
    if every:
        marks += [every * k for k in range(1, math.floor(xs[-1] / every) + 1)]
    for c in marks:
        i = last_at_or_before(xs, c)
        if i is not None:
            keep.add(i)
    if min_step:
        steps = [(ys[i] - ys[i - 1], i) for i in range(1, n) if xs[i] - xs[i - 1] == 1]
        if steps:
            i = min(steps)[1]
            keep |= {i - 1, i}
    return sorted(keep)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--points", type=int, default=0)
    ap.add_argument("--at", default="", help="comma-separated x values")
    ap.add_argument("--every", type=float, default=0.0)
    ap.add_argument("--min-step", action="store_true")
    ap.add_argument("--rename", action="append", default=[], help="old=new method name")
    args = ap.parse_args()
    at = [float(v) for v in args.at.split(",") if v.strip()]
    rename = dict(r.split("=", 1) for r in args.rename)

    doc = json.load(open(args.input, encoding="utf-8"))
    for e in doc["experiments"]:
        for m in e["methods"]:
            m["name"] = rename.get(m["name"], m["name"])
            for r in m["runs"]:
                assert len(r["x"]) == len(r["y"]), (e["name"], m["name"], r["seed"])
                keep = kept_indices(r["x"], r["y"], args.points, at, args.every, args.min_step)
                r["x"] = [r["x"][i] for i in keep]
                r["y"] = [r["y"][i] for i in keep]
    parts = ["last point"]
    if args.points:
        parts.append(f"{args.points} points by position")
    if at:
        parts.append("the last point at or before x = " + ", ".join(f"{c:g}" for c in at))
    if args.every:
        parts.append(f"the last point at or before every multiple of {args.every:g} in x")
    if args.min_step:
        parts.append("the lowest single step")
    note = "curves thinned to their " + "; ".join(parts) + " (tools/bench/compact.py)"
    doc["compacted"] = f"{doc['compacted']}; then {note}" if "compacted" in doc else note
    json.dump(doc, open(args.output, "w", encoding="utf-8"), separators=(",", ":"), ensure_ascii=False)


if __name__ == "__main__":
    main()
