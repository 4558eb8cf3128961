"""Compacts a `bench robust` (or tools/peers) result file for committing: every run keeps its seed, final values
(`recommended`, `min_batch_distance`), timings and its curve at 10 evaluation checkpoints (the last one included, so
`bench robust-table` reads the same final regrets); `--rename old=new` renames methods (e.g. a build's `--label`);
`--checkpoints K` keeps K checkpoints instead (1: the final value only, for ablation files the tables alone read);
`--drop-timings` leaves out each run's wall time and suggest latencies; `--variant V` keeps only the experiments of
variant V (e.g. `noise1`), to split a run of several variants into one file per variant; `--seeds A-B` keeps only
the runs of seeds A to B (inclusive), to split a run of many seeds into the committed seed ranges.

    python3 tools/bench/robust_compact.py IN.json OUT.json [--rename bayesd-warp3=bayesd ...] [--checkpoints K] [--drop-timings] [--variant V] [--seeds A-B]
"""
import argparse
import json

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("input")
parser.add_argument("output")
parser.add_argument("--rename", action="append", default=[], help="old=new method name")
parser.add_argument("--drop-timings", action="store_true", help="drop wall_s and suggest_ms")
parser.add_argument("--checkpoints", type=int, default=10, help="curve points kept per run (the last included)")
parser.add_argument("--variant", help="keep only the experiments of this variant (name segment /V, e.g. x/noise1 or x/noise1/q4)")
parser.add_argument("--seeds", help="keep only the runs of seeds A-B (inclusive)")
args = parser.parse_args()
rename = dict(r.split("=", 1) for r in args.rename)

doc = json.load(open(args.input))
if args.variant:
    doc["experiments"] = [e for e in doc["experiments"] if args.variant in e["name"].split("/")[1:]]
if args.seeds:
    first, last = (int(v) for v in args.seeds.split("-", 1))
for e in doc["experiments"]:
    for m in e["methods"]:
        m["name"] = rename.get(m["name"], m["name"])
        if args.seeds:
            m["runs"] = [r for r in m["runs"] if first <= r["seed"] <= last]
        for r in m["runs"]:
            n = len(r["y"])
            k_max = max(1, args.checkpoints)
            keep = sorted({max(0, round(n * k / k_max) - 1) for k in range(1, k_max + 1)})
            r["x"] = [r["x"][i] for i in keep]
            r["y"] = [r["y"][i] for i in keep]
            if args.drop_timings:
                r.pop("wall_s", None)
                r.pop("suggest_ms", None)
doc["compacted"] = f"curves at {max(1, args.checkpoints)} checkpoints (tools/bench/robust_compact.py)"
json.dump(doc, open(args.output, "w"), separators=(",", ":"))
