#!/usr/bin/env python3
"""Tables of a (merged) seed002 result for the results note (standard library only).

    python3 tools/bench/seed002_tables.py docs/bench/seed002_full/seed002.json [--tail 50]

(the committed merge, compacted by tools/bench/compact.py --at 300 --min-step; on the full merge of the raw slices,
docs/bench/README.md, it prints the same).

Prints (1) a Markdown table of the final cumulative regret (or reward, Complicated Hartmann and the portfolio
variants as the suite reports them) per problem and method, mean ± s.e. (runs); (2) the paper's claims checked on
the means (Huang et al., AAAI 2024, Fig. 1 and 2): on the synthetic problems both KDE methods better than
stableopt, gp-ucb and drbo-mmd; drbo-kde at least as good as sbo-kde on Complicated Hartmann; on newsvendor only
the two KDE methods better than gp-ucb; on the portfolio variants the two KDE methods best (and the order of all
five by mean, which shows whether sbo-kde is the better of the two). A comparison whose methods are not all in the file says so instead of
guessing. (3) the median wall seconds per run (the result files' `wall_s`); (4) every run's final value by seed;
with `--tail N`, also each run's mean per-step regret over its last N evaluations (where a run ended up: on the
portfolio problems, which local maximum of F) and each problem's lowest single-step regret over all runs (below
zero: some decision beats F*). Both read the curves by evaluation count x, so a compacted file that kept x_last − N
and each run's lowest step (`compact.py --min-step`) prints what the full curves print.
"""

import argparse
import json
import math
import statistics

from seed000_tables import mean_se  # same directory: (mean, s.e., runs), NaN s.e. for one run

METHODS = ["sbo-kde", "drbo-kde", "stableopt", "gp-ucb", "drbo-mmd"]
KDE = ["sbo-kde", "drbo-kde"]
SYNTHETIC = ["ackley", "modified_branin", "hartmann", "complicated_hartmann", "ackley_2+4"]


def finals(method):
    """Final values of a method's runs."""
    return [run["y"][-1] for run in method["runs"] if run["y"]]


def fmt(m, se, n):
    if n == 0:
        return "—"
    if math.isnan(se):
        return f"{m:.4g} (1)"
    return f"{m:.4g} ± {se:.2g} ({n})"


def not_run(methods, present):
    """' (not run: …)' for the methods missing from `present`, or ''."""
    missing = [m for m in methods if m not in present]
    return f" (not run: {', '.join(missing)})" if missing else ""


def print_per_run(stats, value, regret_only=False):
    """One line per problem and method: `seed: value(run)` for each run `value` gives a number for."""
    for name, (_, higher, by_name) in stats.items():
        if regret_only and higher:
            continue
        for m in METHODS:
            if m in by_name:
                runs = ", ".join(f"{r['seed']}: {v:.4g}" for r in by_name[m]["runs"] if (v := value(r)) is not None)
                print(f"  {name} {m}: {runs}")


def tail_mean(run, n):
    """Mean step regret over the run's last n evaluations, or None where the curve lacks the point n before its end."""
    start = [y for x, y in zip(run["x"], run["y"]) if run["x"] and x == run["x"][-1] - n]
    return (run["y"][-1] - start[0]) / n if start else None


def adjacent_steps(run):
    """(y before, y after) of every single evaluation the curve holds both ends of (x counts evaluations from 1)."""
    points = list(zip(run["x"], run["y"]))
    pairs = [(0.0, y) for x, y in points[:1] if x == 1]
    return pairs + [(y0, y1) for (x0, y0), (x1, y1) in zip(points, points[1:]) if x1 - x0 == 1]


def better(a, b, higher):
    return a > b if higher else a < b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("result")
    ap.add_argument("--tail", type=int, default=0, help="print each run's mean step regret over its last N steps")
    args = ap.parse_args()
    res = json.load(open(args.result))
    print(f"suite {res['suite']} at {res['git_commit']} ({'quick' if res['quick'] else 'full'})\n")

    stats = {}
    print("| problem (metric) | " + " | ".join(METHODS) + " |")
    print("|---|" + "---|" * len(METHODS))
    for exp in res["experiments"]:
        if exp["metric"] not in ("cumulative_regret", "cumulative_reward"):
            continue
        by_name = {m["name"]: m for m in exp["methods"]}
        higher = exp["better"] == "higher"
        row = {}
        for name in METHODS:
            row[name] = mean_se(finals(by_name[name])) if name in by_name else (float("nan"), float("nan"), 0)
        stats[exp["name"]] = (row, higher, by_name)
        metric = "reward" if higher else "regret"
        print(f"| {exp['name']} ({metric}) | " + " | ".join(fmt(*row[n]) for n in METHODS) + " |")

    print("\nClaims (on the means):")
    for name, (row, higher, _) in stats.items():
        present = [m for m in METHODS if row[m][2] > 0]
        if name in SYNTHETIC:
            others = ["stableopt", "gp-ucb", "drbo-mmd"]
            verdicts = []
            for k in KDE:
                if k not in present:
                    continue
                beaten = [o for o in others if o in present and better(row[k][0], row[o][0], higher)]
                lost = [o for o in others if o in present and o not in beaten]
                verdicts.append(f"{k} better than {', '.join(beaten) or 'none'}"
                                + (f", not than {', '.join(lost)}" if lost else ""))
            print(f"  {name}: {'; '.join(verdicts)}{not_run(KDE + others, present)}")
            if name == "complicated_hartmann" and all(k in present for k in KDE):
                ok = not better(row["sbo-kde"][0], row["drbo-kde"][0], higher)
                print(f"  {name}: drbo-kde ≥ sbo-kde: {'holds' if ok else 'does not hold'}")
        elif name.startswith("portfolio"):
            order = sorted(present, key=lambda m: row[m][0], reverse=higher)
            top = sorted(order[:2]) == sorted(KDE)
            print(f"  {name}: order by mean {' < '.join(order)}; the two KDE methods best: "
                  f"{'holds' if top else 'does not hold'}{not_run(METHODS, present)}")
        elif name == "newsvendor" and "gp-ucb" in present:
            beat = [m for m in present if m != "gp-ucb" and better(row[m][0], row["gp-ucb"][0], higher)]
            ok = sorted(beat) == sorted(KDE)
            note = not_run(METHODS, present)
            print(f"  {name}: better than gp-ucb: {', '.join(beat) or 'none'} — "
                  f"'only the two KDE methods' {'holds' if ok else 'does not hold'}{note}")

    print("\n| problem: median wall s per run | " + " | ".join(METHODS) + " |")
    print("|---|" + "---|" * len(METHODS))
    for name, (_, _, by_name) in stats.items():
        cells = []
        for m in METHODS:
            walls = [r["wall_s"] for r in by_name[m]["runs"] if "wall_s" in r] if m in by_name else []
            cells.append(f"{statistics.median(walls):.0f}" if walls else "—")
        print(f"| {name} | " + " | ".join(cells) + " |")

    print("\nFinal value per run (seed: value):")
    print_per_run(stats, lambda r: r["y"][-1] if r["y"] else None)

    if args.tail:
        n = args.tail
        print(f"\nMean step regret over each run's last {n} evaluations (seed: value):")
        print_per_run(stats, lambda r: tail_mean(r, n), True)
        print("\nLowest single-step regret over all runs:")
        if "compacted" in res and "single step" not in res["compacted"]:
            print("  (not in this file: compacted without --min-step)")
        for name, (_, higher, by_name) in stats.items():
            if not higher and not ("compacted" in res and "single step" not in res["compacted"]):
                steps = [b - a for m in by_name.values() for r in m["runs"] for a, b in adjacent_steps(r)]
                print(f"  {name}: {min(steps):.4g}")

if __name__ == "__main__":
    main()
