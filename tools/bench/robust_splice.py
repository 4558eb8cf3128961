"""Replaces experiments of a `bench robust` result file by those of the same name in another run (e.g. the 2–4-D
problems rerun after a change that cannot act on the others), renaming the new runs' method to the base file's.

    python3 tools/bench/robust_splice.py BASE.json NEW.json OUT.json [--method bayesd]

Experiments of NEW that BASE lacks are skipped (one run may hold several variants, BASE one); at least one must
match. The output records which experiments came from which commit under
`spliced`; compact it afterwards with `robust_compact.py`.
"""
import argparse
import json

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("base")
parser.add_argument("new")
parser.add_argument("output")
parser.add_argument("--method", default="bayesd", help="method name the new runs get")
args = parser.parse_args()

base = json.load(open(args.base))
new = json.load(open(args.new))
index = {e["name"]: i for i, e in enumerate(base["experiments"])}
replaced = []
for e in new["experiments"]:
    if e["name"] not in index:
        continue
    for m in e["methods"]:
        m["name"] = args.method
    base["experiments"][index[e["name"]]] = e
    replaced.append(e["name"])
if not replaced:
    raise SystemExit(f"{args.new}: no experiment of {args.base}")
base.setdefault("spliced", []).append(
    {"git_commit": new.get("git_commit"), "created_at": new.get("created_at"), "experiments": replaced}
)
json.dump(base, open(args.output, "w"), separators=(",", ":"))
print(f"{args.output}: {len(replaced)} experiments from {args.new}")
