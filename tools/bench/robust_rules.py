#!/usr/bin/env python3
"""Split a `bench robust` result by recommendation rule, for `bench robust-table`.

A probe build of the bench (see docs/bench/robust.md, "The recommendation under noise") prints, after each noisy
run, one stderr line per alternative rule applied to the run's final state:

    RECPROBE <problem> <noise level> <seed> <rule> <true regret of that rule's recommendation>

This script reads the run's result file (whose `recommended` is the engine's own rule) and that stderr log, and
writes one result file per rule, with every run's `recommended` replaced by the rule's regret and the method
renamed `bayesd-<rule>`; `bench robust-table --methods bayesd-<rule> OUT/<rule>.json <adopted file> <peers>` then
judges the rule against the adopted one and the peers on the same trajectories.

    robust_rules.py RESULT.json STDERR.log OUTDIR
"""
import collections
import copy
import json
import os
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    result, log, outdir = sys.argv[1:]
    data = json.load(open(result))
    regret = collections.defaultdict(dict)  # rule -> (problem, seed) -> regret
    for line in open(log):
        if line.startswith("RECPROBE "):
            _, problem, _level, seed, rule, value = line.split()
            regret[rule][(problem, int(seed))] = float(value)
    os.makedirs(outdir, exist_ok=True)
    for rule, values in regret.items():
        out = copy.deepcopy(data)
        for e in out["experiments"]:
            problem = e["name"].split("/")[0]
            for m in e["methods"]:
                m["name"] = m["name"].replace("bayesd", f"bayesd-{rule}", 1)
                for r in m["runs"]:
                    key = (problem, r["seed"])
                    if key not in values:
                        sys.exit(f"{rule}: no RECPROBE line for {key}")
                    r["recommended"] = values[key]
        path = os.path.join(outdir, f"{rule}.json")
        json.dump(out, open(path, "w"))
        print(f"wrote {path} ({len(values)} runs)")


if __name__ == "__main__":
    main()
