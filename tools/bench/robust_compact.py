"""Compacts a `bench robust` (or tools/peers) result file for committing: every run keeps its seed, final values
(`recommended`, `min_batch_distance`), timings and its curve at 10 evaluation checkpoints (the last one included, so
`bench robust-table` reads the same final regrets); `--rename old=new` renames methods (e.g. a build's `--label`).

    python3 tools/bench/robust_compact.py IN.json OUT.json [--rename bayesd-warp3=bayesd ...]
"""
import argparse
import json

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("input")
parser.add_argument("output")
parser.add_argument("--rename", action="append", default=[], help="old=new method name")
args = parser.parse_args()
rename = dict(r.split("=", 1) for r in args.rename)

doc = json.load(open(args.input))
for e in doc["experiments"]:
    for m in e["methods"]:
        m["name"] = rename.get(m["name"], m["name"])
        for r in m["runs"]:
            n = len(r["y"])
            keep = sorted({max(0, round(n * k / 10) - 1) for k in range(1, 11)})
            r["x"] = [r["x"][i] for i in keep]
            r["y"] = [r["y"][i] for i in keep]
doc["compacted"] = "curves at 10 checkpoints (tools/bench/robust_compact.py)"
json.dump(doc, open(args.output, "w"), separators=(",", ":"))
