#!/usr/bin/env python3
"""Run peer optimisers on the problems of `bench moo` and write bench-format JSON (the suite `moo`).

The problems, budgets and reference points come from `bench moo-spec`; every evaluation goes through one long-lived
`bench moo-eval` process, so the peers see exactly the objectives (and the noise) that bayesd sees. Each method is
used as its documentation shows a user, with bayesd's initial-design size (clamp(2·d + 1, 10, 50) Sobol points,
on the mixture's polytope for the mixture):

    botorch    several objectives: a ModelListGP of SingleTaskGPs and qLogNEHVI (Daulton et al. 2021; Ament et al.
               2023) over the reference point; constraints: qLogNEI with the constraints' models as `constraints`;
               the mixture: LogEI with optimize_acqf's equality and inequality constraints
    optuna-gp  optuna.samplers.GPSampler(seed=seed, constraints_func=…), directions per objective (no mixture:
               Optuna has no equality constraints)
    nsga2      optuna.samplers.NSGAIISampler(seed=seed, constraints_func=…) (several objectives and constraints)

Metrics as `bench moo` computes them: the hypervolume of the evaluated points' true objectives above the reference
point, the best feasible true value (the problem's `worst` before the first feasible point) with the share of
feasible suggestions after the initial design, or the mixture's regret.

    ~/peers-venv/bin/python tools/peers/moo.py --method botorch --spec /tmp/moospec/moo_problems.json \\
        --out /tmp/moo-peers/botorch.json [--problems zdt1,gardner] [--seeds 10] [--first-seed 0]

The JSON is written after every run, so a long protocol can be stopped and run again in slices (`--first-seed`).
"""

import argparse
import json
import math
import os
import shlex
import subprocess
import sys
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import REPO_ROOT, log, summarise, write_atomic  # noqa: E402

warnings.filterwarnings("ignore")
METHODS = ("botorch", "optuna-gp", "nsga2")


class Evaluator:
    """A long-lived `bench moo-eval` subprocess speaking JSON lines."""

    def __init__(self, bench):
        self.proc = subprocess.Popen([str(bench), "moo-eval"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)

    def __call__(self, problem, seed, index, x):
        self.proc.stdin.write(json.dumps({"problem": problem, "seed": seed, "index": index, "x": list(x)}) + "\n")
        self.proc.stdin.flush()
        r = json.loads(self.proc.stdout.readline())
        if "error" in r:
            raise RuntimeError(f"moo-eval: {r['error']}")
        return r

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


class Run:
    """One run: evaluates points in order and keeps the metric's curve."""

    def __init__(self, evaluator, problem, seed):
        self.ev, self.p, self.seed = evaluator, problem, seed
        self.xs, self.observed, self.truths, self.constraints, self.y, self.ms = [], [], [], [], [], []
        self.best = problem["worst"] if problem["kind"] == "constrained" else None
        self.n_init = min(max(2 * problem["dim"] + 1, 10), 50)
        self.feasible_after = self.model_points = 0
        self.t0 = time.perf_counter()

    def done(self):
        return len(self.xs) >= self.p["budget"]

    def evaluate(self, x, suggest_s):
        x = [min(max(float(v), 0.0), 1.0) for v in x]
        r = self.ev(self.p["name"], self.seed, len(self.xs), x)
        self.xs.append(x)
        self.observed.append(r["objectives"])
        self.truths.append(r["true_objectives"])
        self.constraints.append(r["constraints"])
        self.ms.append(1000.0 * suggest_s)
        kind = self.p["kind"]
        if kind == "pareto":
            self.y.append(hypervolume([[-v for v in t] for t in self.truths], [-r for r in self.p["reference"]]))
        elif kind == "constrained":
            feasible = all(c <= 0 for c in r["constraints"])
            if len(self.xs) > self.n_init:
                self.model_points += 1
                self.feasible_after += int(feasible)
            if feasible:
                self.best = min(self.best, r["true_objectives"][0])
            self.y.append(self.best)
        else:
            self.best = r["true_objectives"][0] if self.best is None else max(self.best, r["true_objectives"][0])
            self.y.append(self.p["optimum"] - self.best)
        return r


def hypervolume(points, ref):
    """Hypervolume (maximisation) of `points` above `ref`, by BoTorch's exact box decomposition."""
    import torch
    from botorch.utils.multi_objective.box_decompositions.dominated import DominatedPartitioning

    # Only points above the reference in every objective add volume (the box decomposition assumes it).
    above = [q for q in points if all(v > r for v, r in zip(q, ref))]
    if not above:
        return 0.0
    y = torch.tensor(above, dtype=torch.double)
    return float(DominatedPartitioning(ref_point=torch.tensor(ref, dtype=torch.double), Y=y).compute_hypervolume())


def initial_design(p, seed):
    """bayesd's initial-design size of scrambled Sobol points (on the polytope for the mixture)."""
    import torch
    from torch.quasirandom import SobolEngine

    n = min(max(2 * p["dim"] + 1, 10), 50)
    if p["kind"] == "mixture":
        from botorch.utils.sampling import get_polytope_samples

        eq, ineq = linear_constraints(p)
        bounds = torch.stack([torch.zeros(p["dim"]), torch.ones(p["dim"])]).double()
        return get_polytope_samples(n, bounds, inequality_constraints=ineq, equality_constraints=eq, seed=seed).tolist()
    return SobolEngine(p["dim"], scramble=True, seed=seed).draw(n).double().tolist()


def linear_constraints(p):
    """The mixture's constraints in optimize_acqf's form: (indices, coefficients, rhs), ≥ for inequalities."""
    import torch

    eq, ineq = [], []
    for c in p["parameter_constraints"]:
        idx = torch.tensor([int(k[1:]) for k in c["terms"]])
        coef = torch.tensor([float(v) for v in c["terms"].values()], dtype=torch.double)
        if c["op"] == "==":
            eq.append((idx, coef, float(c["bound"])))
        elif c["op"] == "<=":
            ineq.append((idx, -coef, -float(c["bound"])))
        else:
            ineq.append((idx, coef, float(c["bound"])))
    return eq, ineq


def run_botorch(run):
    import torch
    from botorch.acquisition import LogExpectedImprovement, qLogNoisyExpectedImprovement
    from botorch.acquisition.multi_objective.logei import qLogNoisyExpectedHypervolumeImprovement
    from botorch.acquisition.objective import GenericMCObjective
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import ModelListGP, SingleTaskGP
    from botorch.models.transforms import Standardize
    from botorch.optim import optimize_acqf
    from gpytorch.mlls import ExactMarginalLogLikelihood, SumMarginalLogLikelihood

    p = run.p
    d = p["dim"]
    bounds = torch.stack([torch.zeros(d), torch.ones(d)]).double()
    for x in initial_design(p, run.seed):
        run.evaluate(x, 0.0)
    torch.manual_seed(run.seed)
    while not run.done():
        t = time.perf_counter()
        x = torch.tensor(run.xs, dtype=torch.double)
        obs = torch.tensor(run.observed, dtype=torch.double)
        if p["kind"] == "pareto":
            models = [SingleTaskGP(x, -obs[:, k:k + 1], outcome_transform=Standardize(1)) for k in range(obs.shape[1])]
            model = ModelListGP(*models)
            fit_gpytorch_mll(SumMarginalLogLikelihood(model.likelihood, model))
            acq = qLogNoisyExpectedHypervolumeImprovement(model=model, ref_point=[-r for r in p["reference"]],
                                                          X_baseline=x, prune_baseline=True)
            cand, _ = optimize_acqf(acq, bounds=bounds, q=1, num_restarts=10, raw_samples=512)
        elif p["kind"] == "constrained":
            cons = torch.tensor(run.constraints, dtype=torch.double)
            outs = torch.cat([-obs[:, :1], cons], dim=1)
            models = [SingleTaskGP(x, outs[:, k:k + 1], outcome_transform=Standardize(1)) for k in range(outs.shape[1])]
            model = ModelListGP(*models)
            fit_gpytorch_mll(SumMarginalLogLikelihood(model.likelihood, model))
            constraints = [(lambda z, k=k: z[..., k]) for k in range(1, outs.shape[1])]
            acq = qLogNoisyExpectedImprovement(model=model, X_baseline=x, prune_baseline=True,
                                               objective=GenericMCObjective(lambda z, X=None: z[..., 0]),
                                               constraints=constraints)
            cand, _ = optimize_acqf(acq, bounds=bounds, q=1, num_restarts=10, raw_samples=512)
        else:
            model = SingleTaskGP(x, obs[:, :1], outcome_transform=Standardize(1))
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
            eq, ineq = linear_constraints(p)
            acq = LogExpectedImprovement(model, best_f=obs[:, 0].max())
            cand, _ = optimize_acqf(acq, bounds=bounds, q=1, num_restarts=10, raw_samples=512,
                                    equality_constraints=eq, inequality_constraints=ineq)
        run.evaluate(cand[0].tolist(), time.perf_counter() - t)


def run_optuna(run, method):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    p = run.p
    if p["kind"] == "mixture":
        raise RuntimeError(f"{method} has no equality constraints; the mixture is not run")
    constraints_func = (lambda t: t.user_attrs["c"]) if p["kind"] == "constrained" else None
    cls = optuna.samplers.GPSampler if method == "optuna-gp" else optuna.samplers.NSGAIISampler
    n_objectives = p["objectives"] if p["kind"] == "pareto" else 1
    kwargs = {"seed": run.seed, "constraints_func": constraints_func}
    if method == "optuna-gp":
        kwargs["n_startup_trials"] = run.n_init
    study = optuna.create_study(directions=["minimize"] * n_objectives, sampler=cls(**kwargs))
    for x in initial_design(p, run.seed):
        study.enqueue_trial({f"x{j}": v for j, v in enumerate(x)})
    while not run.done():
        t = time.perf_counter()
        trial = study.ask()
        x = [trial.suggest_float(f"x{j}", 0.0, 1.0) for j in range(p["dim"])]
        r = run.evaluate(x, time.perf_counter() - t)
        if p["kind"] == "constrained":
            trial.set_user_attr("c", r["constraints"])
        values = r["objectives"] if p["kind"] == "pareto" else r["objectives"][0]
        study.tell(trial, values)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--method", required=True, choices=METHODS)
    ap.add_argument("--spec", required=True, help="moo_problems.json from `bench moo-spec`")
    ap.add_argument("--bench", default=str(REPO_ROOT / "target" / "release" / "bench"))
    ap.add_argument("--problems", help="comma-separated problem names (default: all)")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    spec = json.loads(Path(args.spec).read_text())
    problems = [p for p in spec["problems"] if not args.problems or p["name"] in args.problems.split(",")]
    n_seeds = args.seeds if args.seeds is not None else spec["seeds"] - args.first_seed
    doc = {"suite": "moo", "git_commit": "peers", "created_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "quick": False, "machine": {"cpus": os.cpu_count(), "os": sys.platform},
           "command": shlex.join([sys.executable] + sys.argv), "experiments": []}
    ev = Evaluator(args.bench)
    try:
        for p in problems:
            metric, better = {"pareto": ("hypervolume", "higher"), "constrained": ("best_feasible_value", "lower"),
                              "mixture": ("simple_regret", "lower")}[p["kind"]]
            exp = {"name": p["name"], "description": f"{p['name']} ({p['dim']}-D), {p['budget']} evaluations; {args.method}",
                   "metric": metric, "better": better, "x_axis": "iteration",
                   "optimum": 0.0 if p["kind"] == "mixture" else None, "budget": p["budget"],
                   "methods": [{"name": args.method, "role": "reference", "runs": [], "summary": {}}]}
            entry = exp["methods"][0]
            doc["experiments"].append(exp)
            for seed in range(args.first_seed, args.first_seed + n_seeds):
                run = Run(ev, p, seed)
                try:
                    run_botorch(run) if args.method == "botorch" else run_optuna(run, args.method)
                except Exception as e:  # a method that cannot run a problem is reported, not fatal
                    log(f"{args.method} {p['name']} seed {seed}: {type(e).__name__}: {e}")
                    break
                ms = sorted(run.ms[run.n_init:]) or [0.0]
                r = {"seed": seed, "x": list(range(1, len(run.y) + 1)), "y": run.y, "evaluations": len(run.y),
                     "wall_s": time.perf_counter() - run.t0,
                     "suggest_ms": {"median": ms[len(ms) // 2], "p95": ms[min(len(ms) - 1, math.ceil(0.95 * len(ms)) - 1)]}}
                if p["kind"] == "constrained" and run.model_points:
                    r["feasible_share"] = run.feasible_after / run.model_points
                entry["runs"].append(r)
                entry["summary"] = summarise(entry["runs"])
                write_atomic(args.out, doc)
                log(f"{args.method} {p['name']} seed {seed}: final {run.y[-1]:.5g}, {r['wall_s']:.1f} s")
    finally:
        ev.close()


if __name__ == "__main__":
    main()
