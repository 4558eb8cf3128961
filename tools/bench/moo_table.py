#!/usr/bin/env python3
"""The table of `bench moo` results: per problem, each method's median final score and bayesd's paired verdict
against every other method (one-sided Wilcoxon signed-rank tests over the seeds both ran, scipy's exact
distribution, each at 5 %: W when bayesd is better, L when worse, else T), plus the constrained problems' median
share of feasible suggestions after the initial design and the mixture's parameter-constraint violations, and
each method's median over runs of its runs' median suggest time.

    python3 tools/bench/moo_table.py docs/bench/moo/moo.json [more result files of the same suite…]

Needs scipy (e.g. the peers' venv: ~/peers-venv/bin/python).
"""

import json
import statistics
import sys

from scipy.stats import wilcoxon


def load(paths):
    exps = {}
    for path in paths:
        with open(path) as f:
            for e in json.load(f)["experiments"]:
                slot = exps.setdefault(e["name"], {"better": e["better"], "methods": {}})
                for m in e["methods"]:
                    slot["methods"].setdefault(m["name"], {}).update({r["seed"]: r for r in m["runs"]})
    return exps


def verdict(a, b, higher):
    """bayesd's scores a against b (paired lists)."""
    diffs = [(x - y) if higher else (y - x) for x, y in zip(a, b)]
    if all(d == 0 for d in diffs):
        return "T", 1.0
    better = wilcoxon(a, b, alternative="greater" if higher else "less").pvalue
    worse = wilcoxon(a, b, alternative="less" if higher else "greater").pvalue
    if better < 0.05:
        return "W", better
    if worse < 0.05:
        return "L", worse
    return "T", min(better, worse)


def main():
    exps = load(sys.argv[1:])
    for name, e in exps.items():
        methods = e["methods"]
        higher = e["better"] == "higher"
        if "bayesd" not in methods:
            continue
        mine = methods["bayesd"]
        cells = [f"{name:22s}"]
        for m, runs in methods.items():
            finals = [r["y"][-1] for r in runs.values()]
            cell = f"{m} {statistics.median(finals):.4g}"
            if m != "bayesd":
                seeds = sorted(set(mine) & set(runs))
                if len(seeds) >= 2:
                    v, p = verdict([mine[s]["y"][-1] for s in seeds], [runs[s]["y"][-1] for s in seeds], higher)
                    cell += f" [{v}, p={p:.3g}, {len(seeds)} seeds]"
            shares = [r["feasible_share"] for r in runs.values() if r.get("feasible_share") is not None]
            if shares:
                cell += f" feasible {statistics.median(shares):.2f}"
            ms = [r["suggest_ms"]["median"] for r in runs.values() if r.get("suggest_ms") and len(r["y"]) > 1]
            if ms:
                cell += f" {statistics.median(ms):.3g} ms"
            violations = [r["violations"] for r in runs.values() if r.get("violations") is not None]
            if violations:
                cell += f" violations {sum(violations)}"
            cells.append(cell)
        print(" | ".join(cells))


if __name__ == "__main__":
    main()
