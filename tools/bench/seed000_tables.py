#!/usr/bin/env python3
"""Tables of a (merged) seed000 result for the results note (standard library only).

    python3 tools/bench/seed000_tables.py docs/bench/seed000_full/seed000.json [--at 20,40,60,80,100]

Prints, per experiment, (1) the simple regret at the cost checkpoints and at the budget, mean ± s.e. over the runs
(the last value at cumulative cost ≤ the checkpoint, as the bench's curves); (2) the evaluations per unit cost
after exploration, (evaluations at 100 − evaluations at 60) / 40, the paper's Fig. 2 claim, mean ± s.e.; (3) a
Markdown table of the final regret per method and experiment, whether bocvs is below every baseline's mean, and at
which cost checkpoints it is; (4) a Markdown table of the evaluations per unit cost after exploration.
"""

import argparse
import json
import math


def at(run, x):
    """The last value of a run whose x is ≤ the checkpoint (None before the first)."""
    best = None
    for xi, yi in zip(run["x"], run["y"]):
        if xi <= x:
            best = yi
        else:
            break
    return best


def mean_se(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return float("nan"), float("nan"), 0
    m = sum(vals) / len(vals)
    if len(vals) < 2:
        return m, float("nan"), len(vals)
    var = sum((v - m) ** 2 for v in vals) / (len(vals) - 1)
    return m, math.sqrt(var / len(vals)), len(vals)


def fmt(m, se):
    if math.isnan(se):
        return f"{m:.3g}"
    return f"{m:.3g} ± {se:.2g}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("result")
    ap.add_argument("--at", default="20,40,60,80,100")
    ap.add_argument("--explore-end", type=float, default=60.0)
    args = ap.parse_args()
    checkpoints = [float(v) for v in args.at.split(",")]
    res = json.load(open(args.result))
    print(f"suite {res['suite']} at {res['git_commit']} ({'quick' if res['quick'] else 'full'})\n")
    finals = {}
    lowest_at = {}
    rates_md = {}
    for exp in res["experiments"]:
        budget = exp.get("budget") or checkpoints[-1]
        if exp["metric"] == "simple_regret":
            print(f"{exp['name']}: simple regret at cost (mean ± s.e., runs)")
            for m in exp["methods"]:
                cells = []
                for c in checkpoints:
                    mm, se, n = mean_se([at(r, c) for r in m["runs"]])
                    cells.append(f"{c:g}: {fmt(mm, se)}")
                print(f"  {m['name']:<9} n={len(m['runs'])}  " + "; ".join(cells))
                finals.setdefault(exp["name"], {})[m["name"]] = mean_se([at(r, budget) for r in m["runs"]])
            means = {
                c: {m["name"]: mean_se([at(r, c) for r in m["runs"]])[0] for m in exp["methods"]} for c in checkpoints
            }
            lowest_at[exp["name"]] = [
                c
                for c, row in means.items()
                if "bocvs" in row and all(row["bocvs"] < v for k, v in row.items() if k != "bocvs" and not math.isnan(v))
            ]
        elif exp["metric"] == "evaluations":
            e0 = args.explore_end
            print(f"{exp['name']}: evaluations per unit cost after cost {e0:g} (mean ± s.e.)")
            for m in exp["methods"]:
                rates = []
                for r in m["runs"]:
                    a, b = at(r, e0) or 0.0, at(r, budget)
                    if b is not None:
                        rates.append((b - a) / (budget - e0))
                mm, se, _ = mean_se(rates)
                tot, tse, _ = mean_se([at(r, budget) for r in m["runs"]])
                print(f"  {m['name']:<9} {fmt(mm, se)} per unit; {fmt(tot, tse)} evaluations in all")
                rates_md.setdefault(exp["name"].removesuffix("/evaluations"), {})[m["name"]] = fmt(mm, se)
        print()
    if finals:
        methods = []
        for row in finals.values():
            for k in row:
                if k not in methods:
                    methods.append(k)
        print("| experiment | " + " | ".join(methods) + " | bocvs lowest mean | costs where bocvs is lowest |")
        print("|---" * (len(methods) + 3) + "|")
        for name, row in finals.items():
            cells = [fmt(row[k][0], row[k][1]) + f" ({row[k][2]})" if k in row else "" for k in methods]
            lowest = ""
            if "bocvs" in row:
                others = [row[k][0] for k in row if k != "bocvs"]
                lowest = "yes" if others and row["bocvs"][0] < min(others) else "no"
            where = ", ".join(f"{c:g}" for c in lowest_at.get(name, [])) or "none"
            print(f"| {name} | " + " | ".join(cells) + f" | {lowest} | {where} |")
    if rates_md:
        methods = list(next(iter(rates_md.values())).keys())
        print(f"\n| experiment: evaluations per unit cost after cost {args.explore_end:g} | " + " | ".join(methods) + " |")
        print("|---" * (len(methods) + 1) + "|")
        for name, row in rates_md.items():
            print(f"| {name} | " + " | ".join(row.get(k, "") for k in methods) + " |")


if __name__ == "__main__":
    main()
