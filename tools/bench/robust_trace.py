#!/usr/bin/env python3
"""Summaries of per-evaluation traces (`bench robust --trace`, `tools/peers/peers.py --trace FILE`): where a
method sampled and how much of its choice of the best observed point was luck.

Per (experiment, method), over the seeds:

- `evaluated q1/q2/q3`: quartiles of the true regrets of all evaluated points, all seeds pooled;
- `best evaluated`: median over seeds of the smallest true regret among the evaluated points (what the search
  reached, whatever was recommended);
- `best observed`: median over seeds of the true regret of the point with the best observed value (the benchmark's
  noise, as `runs[].y[-1]` of the result file);
- `redrawn mean / median`: the same point chosen again with the observation noise redrawn `--draws` times at the
  same evaluated points (Gaussian, the trace's `noise_sd`): per seed the mean and the median of the true regret of
  the best observed point over the draws, each then taken at its median over seeds. It separates the quality of
  the evaluated points from the luck of the one draw of noise the benchmark uses. The per-seed median is the one to
  set beside `best observed` (one draw per seed), since the distribution over draws is skewed;
- `luck`: per seed, the share of the draws whose best observed point is better than the benchmark's one (ties
  count half), averaged over seeds: 0.5 for a typical draw, lower for a lucky one;
- `re-runs min/median/max`: per seed, the evaluations whose phase is `replicate` (scheduled replicates and
  challengers' re-runs; peers have no phase and print `-`).

With `--hit X` a second table gives, per (experiment, method), in how many seeds an evaluated point's true regret
fell below X (e.g. 0.5 on Easom: the needle's basin found), the median evaluation index (from 0) of the first such
point, and, over those seeds, the median of the best true regret evaluated by the end (how far the basin was refined
in the evaluations left).

    python3 tools/bench/robust_trace.py TRACE.jsonl [MORE.jsonl …] [--only PREFIX] [--draws 2000] [--seed 0] [--hit X]

Two traces of one method (e.g. two builds without `--label`) are refused rather than mixed: a run's evaluation index
may appear once.

The redrawing uses Python's `random`, seeded per run by `--seed`, the experiment, the method and the run's seed, so
a run's numbers do not depend on the other traces given.
"""
import argparse
import json
import random
import statistics
from collections import defaultdict


def quartiles(xs):
    """The quartiles with linear interpolation (numpy's default percentile)."""
    return statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else [xs[0]] * 3


def redrawn_regrets(rows, draws, rng):
    """The true regret of the best observed point in each of `draws` redraws of every evaluation's noise."""
    truths = [r["regret"] for r in rows]
    sd = rows[0]["noise_sd"] or 0.0
    if sd == 0.0:
        return [min(truths)]
    out = []
    for _ in range(draws):
        noisy = [t + rng.gauss(0.0, sd) for t in truths]  # regret + noise: the argmin of value − f* + noise
        out.append(truths[noisy.index(min(noisy))])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--only", default="", help="experiments (problem/variant) starting with this")
    ap.add_argument("--draws", type=int, default=2000, help="redraws of the noise per seed (default 2000)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the redrawing (default 0)")
    ap.add_argument("--hit", type=float, help="also tabulate when each run first evaluated a regret below this")
    args = ap.parse_args()

    runs = defaultdict(list)  # (experiment, method, seed) -> rows
    for path in args.traces:
        with open(path) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    exp = f"{r['problem']}/{r['variant']}"
                    if exp.startswith(args.only):
                        rows = runs[(exp, r["method"], r["seed"])]
                        if any(o["index"] == r["index"] for o in rows):
                            raise SystemExit(f"{path}: {exp} {r['method']} seed {r['seed']} evaluation {r['index']} "
                                             "is in an earlier trace too; give the runs distinct --label names")
                        rows.append(r)
    groups = defaultdict(list)  # (experiment, method) -> [rows of one seed]
    for (exp, method, seed), rows in sorted(runs.items()):
        groups[(exp, method)].append(sorted(rows, key=lambda r: r["index"]))

    print(f"{'experiment':32} {'method':22} {'seeds':>5} {'evaluated q1/q2/q3':>26} {'best evaluated':>14} {'best observed':>13} "
          f"{'redrawn mean / median':>22} {'luck':>5} {'re-runs':>12}")
    for (exp, method), seeds in sorted(groups.items()):
        q1, q2, q3 = quartiles([r["regret"] for rows in seeds for r in rows])
        evaluated = [min(r["regret"] for r in rows) for rows in seeds]
        observed = [min(rows, key=lambda r: r["value"])["regret"] for rows in seeds]
        # One generator per run, so a run's numbers do not depend on which other traces were given.
        redrawn = [
            redrawn_regrets(rows, args.draws, random.Random(f"{args.seed}/{exp}/{method}/{rows[0]['seed']}"))
            for rows in seeds
        ]
        luck = statistics.fmean(
            (sum(d < o for d in ds) + 0.5 * sum(d == o for d in ds)) / len(ds) for ds, o in zip(redrawn, observed)
        )
        phases = [[r.get("phase") for r in rows] for rows in seeds]
        if any(p is not None for ps in phases for p in ps):
            reruns = sorted(sum(p == "replicate" for p in ps) for ps in phases)
            rerun_text = f"{reruns[0]}/{statistics.median(reruns):g}/{reruns[-1]}"
        else:
            rerun_text = "-"
        print(f"{exp:32} {method:22} {len(seeds):>5} {q1:>8.4g}/{q2:.4g}/{q3:.4g} "
              f"{statistics.median(evaluated):>14.4g} {statistics.median(observed):>13.4g} "
              f"{statistics.median(map(statistics.fmean, redrawn)):>10.4g} / "
              f"{statistics.median(map(statistics.median, redrawn)):<9.4g} {luck:>5.2f} {rerun_text:>12}")

    if args.hit is not None:
        print(f"\n{'experiment':32} {'method':22} {'seeds':>5} {'below ' + format(args.hit, 'g'):>10} "
              f"{'first index':>11} {'their best':>10}")
        for (exp, method), seeds in sorted(groups.items()):
            firsts = [next((r["index"] for r in rows if r["regret"] < args.hit), None) for rows in seeds]
            hit = [(first, min(r["regret"] for r in rows)) for first, rows in zip(firsts, seeds) if first is not None]
            first_text = f"{statistics.median(f for f, _ in hit):g}" if hit else "-"
            best_text = f"{statistics.median(b for _, b in hit):.4g}" if hit else "-"
            print(f"{exp:32} {method:22} {len(seeds):>5} {len(hit):>10} {first_text:>11} {best_text:>10}")


if __name__ == "__main__":
    main()
