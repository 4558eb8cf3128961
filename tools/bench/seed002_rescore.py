#!/usr/bin/env python3
"""Rescores seed002 cumulative-regret results against a corrected F* (standard library only).

A run's curve is y_t = Σ_{s≤t} [F* − F(x_s)] with t the evaluation count (the result's `x`), and nothing a method
suggests depends on F*, so moving F* from a to b changes every curve to y_t + t·(b − a), exactly what a rerun at
the corrected constant writes (up to rounding in the last digits). The files are rewritten in place: `optimum`, `y`,
the summaries (mean and median shift by the final t·(b − a); the standard error does not change), and a field
`rescored` = {from_optimum, to_optimum, script} on the experiment, so the file says what was done to it.

    python3 tools/bench/seed002_rescore.py --experiment portfolio_normal --from 19.8321620019 --to 21.5862387818 \
        /tmp/seed002_slices/portfolio_normal_*/seed002.json

Files whose experiment already has `optimum` == --to are left alone, so it can be run twice.
"""

import argparse
import json


def rescore(exp, old, new):
    delta = new - old
    for method in exp["methods"]:
        lasts = set()
        for run in method["runs"]:
            assert len(run["x"]) == len(run["y"]), (exp["name"], method["name"], run["seed"])
            run["y"] = [y + t * delta for t, y in zip(run["x"], run["y"])]
            lasts.add(run["x"][-1])
        if method["runs"]:
            assert len(lasts) == 1, f"{method['name']}: runs end at different t {lasts}"
            shift = lasts.pop() * delta
            method["summary"]["final_mean"] += shift
            method["summary"]["final_median"] += shift
    exp["optimum"] = new
    exp["rescored"] = {"from_optimum": old, "to_optimum": new, "script": "tools/bench/seed002_rescore.py"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiment", required=True)
    ap.add_argument("--from", dest="old", type=float, required=True)
    ap.add_argument("--to", dest="new", type=float, required=True)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    for path in args.files:
        with open(path) as f:
            result = json.load(f)
        for exp in result["experiments"]:
            if exp["name"] != args.experiment or exp["metric"] != "cumulative_regret":
                continue
            if exp["optimum"] == args.new:
                print(f"{path}: already at {args.new}")
                continue
            if exp["optimum"] != args.old:
                raise SystemExit(f"{path}: optimum {exp['optimum']} is neither --from nor --to")
            rescore(exp, args.old, args.new)
            with open(path, "w") as f:
                json.dump(result, f, indent=2, ensure_ascii=False)
                f.write("\n")
            print(f"{path}: {args.old} -> {args.new}")


if __name__ == "__main__":
    main()
