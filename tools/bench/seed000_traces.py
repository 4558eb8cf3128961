#!/usr/bin/env python3
"""What bocvs played, from the seed000 per-round traces (standard library only), for the results note.

    python3 tools/bench/seed000_traces.py /tmp/seed000_slices/*/seed000_*_trace.json.gz [--budget 100]

(the traces of the raw slices, which tools/bench/slices.py writes under its --root; they are not committed).

Per experiment and bocvs run, over the rounds whose cumulative cost is within the budget (as the regret curves):
the number of exploitation rounds, how often each control set (index in the listed order) was played in them, and
the best expected value E f([x^i, X^{-i}]) played during the initial design and exploration versus during
exploitation (their difference: what exploitation added). Then, per experiment, the ranges over the runs and the
number of runs whose exploitation never reached the exploration's best.
"""

import argparse
import collections
import gzip
import json


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def summarise(run, budget):
    spent, rounds = 0.0, []
    for r in run["rounds"]:
        spent += r["cost"]
        if spent > budget + 1e-9:
            break
        rounds.append(r)
    exploit = [r for r in rounds if r["phase"] == "exploitation"]
    explore = [r for r in rounds if r["phase"] != "exploitation"]
    best = lambda rs: max((r["expected_value"] for r in rs), default=float("nan"))
    return {
        "seed": run["seed"],
        "exploitation": len(exploit),
        "sets": collections.Counter(r["set"] for r in exploit),
        "explore_best": best(explore),
        "exploit_best": best(exploit),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--budget", type=float, default=100.0)
    args = ap.parse_args()
    by_exp = collections.defaultdict(list)
    for path in args.traces:
        t = load(path)
        for run in t["runs"]:
            if run["method"] == "bocvs":
                by_exp[t["experiment"]].append(summarise(run, args.budget))
    for exp in sorted(by_exp):
        runs = sorted(by_exp[exp], key=lambda s: s["seed"])
        print(f"{exp}: bocvs, {len(runs)} runs")
        for s in runs:
            sets = ", ".join(f"set {k}: {v}" for k, v in sorted(s["sets"].items()))
            gain = s["exploit_best"] - s["explore_best"]
            print(
                f"  seed {s['seed']}: {s['exploitation']} exploitation rounds ({sets or 'none'}); best expected value "
                f"exploration {s['explore_best']:.4g}, exploitation {s['exploit_best']:.4g} (gain {gain:+.3g})"
            )
        gains = [s["exploit_best"] - s["explore_best"] for s in runs if s["exploitation"]]
        never = sum(1 for g in gains if g < 0)
        counts = [s["exploitation"] for s in runs]
        top = [s["sets"].most_common(1)[0] if s["sets"] else (None, 0) for s in runs]
        print(
            f"  => exploitation rounds {min(counts)}-{max(counts)}; most played set per run "
            f"{[t[0] for t in top]} in {[t[1] for t in top]} rounds; gain over exploration's best: max "
            f"{max(gains, default=float('nan')):+.3g}, below it in {never} of {len(gains)} runs\n"
        )


if __name__ == "__main__":
    main()
