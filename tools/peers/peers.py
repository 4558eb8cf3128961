#!/usr/bin/env python3
"""Run peer optimisers on the problems of `bench robust` and write bench-format JSON.

The problems, seeds and budgets come from `bench robust-spec`; every evaluation goes through one
long-lived `bench robust-eval` process, so the peers see exactly the objective (and the noise)
that bayesd sees. Methods, each used the way its documentation shows a user:

    optuna-gp    optuna.samplers.GPSampler(seed=seed)
    optuna-tpe   optuna.samplers.TPESampler(seed=seed)  (constant_liar=True with --batch Q>1)
    botorch      SingleTaskGP / MixedSingleTaskGP + LogEI (noiseless) or qLogNEI (noisy)
    ax           ax.Client(random_seed=seed) with its default generation strategy

See README.md next to this file for the details and example commands.
"""

import argparse
import itertools
import json
import math
import os
import platform
import shlex
import sys
import tempfile
import time
import traceback
import warnings
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

# One thread per process for every numerical library (must happen before numpy/torch load).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

warnings.filterwarnings("ignore", message=".*torch.jit.script.*is deprecated")

REPO_ROOT = Path(__file__).resolve().parents[2]
METHODS = ("optuna-gp", "optuna-tpe", "botorch", "ax")
PROGRESS_EVERY = 25


# --------------------------------------------------------------------------------------------
# Search space helpers


def is_cat(p):
    return p["type"] == "categorical"


def to_unit(p, v):
    """Coordinate of a float/int value in [0, 1] (in ln for log-scaled parameters)."""
    lo, hi, v = float(p["low"]), float(p["high"]), float(v)
    if p.get("scale") == "log":
        lo, hi, v = math.log(lo), math.log(hi), math.log(v)
    return (v - lo) / (hi - lo) if hi > lo else 0.0


def from_unit(p, u):
    """Value of a float/int parameter at unit coordinate u (integers rounded to the nearest)."""
    u = min(max(float(u), 0.0), 1.0)
    lo, hi = float(p["low"]), float(p["high"])
    if p.get("scale") == "log":
        v = math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))
    else:
        v = lo + u * (hi - lo)
    v = min(max(v, lo), hi)
    return int(min(max(round(v), p["low"]), p["high"])) if p["type"] == "int" else v


def clean(p, v):
    """A JSON-friendly value of parameter p (numpy/torch scalars to int/float/str)."""
    if is_cat(p):
        return p["choices"][[str(c) for c in p["choices"]].index(str(v))]
    return int(round(float(v))) if p["type"] == "int" else float(v)


def min_pairwise_distance(params, batch):
    """Smallest Euclidean distance between two points of a batch in the unit cube.

    float/int: unit coordinate (ln for log scale); categorical: 0 if equal else 1.
    """
    best = math.inf
    for a, b in itertools.combinations(batch, 2):
        s = 0.0
        for p in params:
            x, y = a[p["name"]], b[p["name"]]
            s += float(x != y) if is_cat(p) else (to_unit(p, x) - to_unit(p, y)) ** 2
        best = min(best, math.sqrt(s))
    return best


# --------------------------------------------------------------------------------------------
# Evaluator and per-run bookkeeping


class Evaluator:
    """A long-lived `bench robust-eval` subprocess speaking JSON lines."""

    def __init__(self, bench):
        self.cmd = [str(bench), "robust-eval"]
        self.proc = None

    def __call__(self, problem, variant, seed, index, assignments):
        """Evaluate one point; returns the evaluator's dict (value, true_value, regret)."""
        import subprocess

        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         text=True, bufsize=1)
        req = {"problem": problem, "variant": variant, "seed": seed, "index": index,
               "assignments": assignments}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"evaluator exited (code {self.proc.poll()}) on {req}")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"evaluator error: {answer['error']} on {req}")
        return answer

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


class Run:
    """One optimisation loop: evaluates the batches a method proposes and records the curve."""

    def __init__(self, evaluator, problem, variant, seed, budget, label):
        self.evaluator, self.problem, self.variant = evaluator, problem, variant
        self.params, self.seed, self.budget, self.label = problem["parameters"], seed, budget, label
        self.noisy = variant != "noiseless"
        self.points, self.values, self.regrets, self.suggest_ms, self.batch_dists = [], [], [], [], []
        self.noise_sd = None  # the evaluator's noise sd (for --trace)
        self.optimum = None  # true_value - regret, as reported by the evaluator
        self.t0 = time.perf_counter()

    @property
    def remaining(self):
        return self.budget - len(self.values)

    def evaluate(self, batch, suggest_s):
        """Evaluate a batch (list of assignments); suggest_s = time the method took to propose it."""
        batch = [{p["name"]: clean(p, a[p["name"]]) for p in self.params} for a in batch]
        if len(batch) > 1:
            self.batch_dists.append(min_pairwise_distance(self.params, batch))
        values = []
        for a in batch:
            r = self.evaluator(self.problem["name"], self.variant, self.seed, len(self.values), a)
            self.points.append(a)
            self.values.append(float(r["value"]))
            self.regrets.append(float(r["regret"]))
            self.noise_sd = float(r.get("noise_sd", 0.0))
            self.optimum = round(float(r["true_value"]) - float(r["regret"]), 10)
            self.suggest_ms.append(1000.0 * suggest_s / len(batch))
            values.append(float(r["value"]))
            if len(self.values) % PROGRESS_EVERY == 0:
                log(f"{self.label}: {len(self.values)}/{self.budget} evaluations, "
                    f"regret {self.curve()[-1]:.4g}, {time.perf_counter() - self.t0:.1f} s")
        return values

    def best_observed(self):
        """The evaluated point with the lowest observed value."""
        return self.points[int(np.argmin(self.values))]

    def curve(self):
        """y[t]: noiseless: min regret so far; noisy: regret of the best observed value so far."""
        if not self.noisy:
            return np.minimum.accumulate(self.regrets).tolist()
        best, out = 0, []
        for t, v in enumerate(self.values):
            if v < self.values[best]:
                best = t
            out.append(self.regrets[best])
        return out


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# Methods. Each runs the loop until run.remaining == 0 and returns its recommendation for
# noisy variants (the driver uses the best observed point on noiseless variants).


def run_optuna(run, q, kind):
    """Optuna ask-and-tell with GPSampler or TPESampler defaults, Q trials asked per batch."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    if kind == "gp":
        sampler = optuna.samplers.GPSampler(seed=run.seed)
    else:
        sampler = optuna.samplers.TPESampler(seed=run.seed, **({"constant_liar": True} if q > 1 else {}))
    study = optuna.create_study(direction="minimize", sampler=sampler)

    def suggest(trial, p):
        log_scale = p.get("scale") == "log"
        if p["type"] == "float":
            return trial.suggest_float(p["name"], p["low"], p["high"], log=log_scale)
        if p["type"] == "int":
            return trial.suggest_int(p["name"], p["low"], p["high"], log=log_scale)
        return trial.suggest_categorical(p["name"], p["choices"])

    while run.remaining:
        t = time.perf_counter()
        trials, batch = [], []
        for _ in range(min(q, run.remaining)):  # suggest before the next ask: pending trials count
            trial = study.ask()
            trials.append(trial)
            batch.append({p["name"]: suggest(trial, p) for p in run.params})
        values = run.evaluate(batch, time.perf_counter() - t)
        for trial, v in zip(trials, values):
            study.tell(trial, v)
    return study.best_trial.params


def run_botorch(run, q):
    """BoTorch by hand: Sobol design, (Mixed)SingleTaskGP, LogEI / qLogNEI, optimize_acqf(_mixed).

    Inputs are the unit cube (ln for log scale); integers are relaxed to continuous and rounded
    after the acquisition optimisation; a categorical is its choice index with a categorical
    kernel (MixedSingleTaskGP) and every combination of choices is enumerated by
    optimize_acqf_mixed. The objective is negated (BoTorch maximises).
    """
    import torch
    from botorch.acquisition import (LogExpectedImprovement, qLogExpectedImprovement,
                                     qLogNoisyExpectedImprovement)
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import MixedSingleTaskGP, SingleTaskGP
    from botorch.optim import optimize_acqf, optimize_acqf_mixed
    from gpytorch.mlls import ExactMarginalLogLikelihood
    from torch.quasirandom import SobolEngine

    torch.set_num_threads(1)
    torch.manual_seed(run.seed)
    params, d = run.params, len(run.params)
    cat_dims = [i for i, p in enumerate(params) if is_cat(p)]
    sizes = {i: len(params[i]["choices"]) for i in cat_dims}
    bounds = torch.tensor([[0.0] * d, [float(sizes.get(i, 2) - 1) for i in range(d)]],
                          dtype=torch.double)
    fixed_features_list = [dict(zip(cat_dims, map(float, combo)))
                           for combo in itertools.product(*(range(sizes[i]) for i in cat_dims))]

    def encode(a):
        return [float(p["choices"].index(a[p["name"]])) if is_cat(p) else to_unit(p, a[p["name"]])
                for p in params]

    def decode(x):
        return {p["name"]: p["choices"][int(round(float(x[i])))] if is_cat(p) else from_unit(p, x[i])
                for i, p in enumerate(params)}

    def fit():
        X = torch.tensor([encode(a) for a in run.points], dtype=torch.double)
        Y = -torch.tensor(run.values, dtype=torch.double).unsqueeze(-1)
        model = MixedSingleTaskGP(X, Y, cat_dims=cat_dims) if cat_dims else SingleTaskGP(X, Y)
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        return model, X, Y

    # Initial design: scrambled Sobol, max(5, 2 d) points (like Ax), evaluated Q at a time.
    t = time.perf_counter()
    n_init = min(max(5, 2 * d), run.budget)
    u = SobolEngine(d, scramble=True, seed=run.seed).draw(n_init).double()
    for i in cat_dims:
        u[:, i] = torch.clamp(torch.floor(u[:, i] * sizes[i]), max=sizes[i] - 1)
    init = [decode(x) for x in u]
    init_s = time.perf_counter() - t
    for k in range(0, n_init, q):
        chunk = init[k:k + q]
        run.evaluate(chunk, init_s * len(chunk) / n_init)

    while run.remaining:
        t = time.perf_counter()
        model, X, Y = fit()
        n = min(q, run.remaining)
        if run.noisy:
            acqf = qLogNoisyExpectedImprovement(model, X_baseline=X, prune_baseline=True)
        elif n == 1:
            acqf = LogExpectedImprovement(model, best_f=Y.max())
        else:
            acqf = qLogExpectedImprovement(model, best_f=Y.max())
        if cat_dims:
            cand, _ = optimize_acqf_mixed(acqf, bounds=bounds, q=n, num_restarts=10, raw_samples=512,
                                          fixed_features_list=fixed_features_list)
        else:
            cand, _ = optimize_acqf(acqf, bounds=bounds, q=n, num_restarts=10, raw_samples=512,
                                    sequential=False)
        batch = [decode(x) for x in cand.detach()]
        run.evaluate(batch, time.perf_counter() - t)

    if not run.noisy:
        return None
    model, X, _ = fit()  # the final model, on all observations
    with torch.no_grad():
        mean = model.posterior(X).mean.squeeze(-1)
    return run.points[int(torch.argmax(mean))]


def run_ax(run, q):
    """Ax 1.x Client with its default generation strategy (center + Sobol, then BO)."""
    import logging

    import torch
    from ax import ChoiceParameterConfig, Client, RangeParameterConfig

    torch.set_num_threads(1)
    for h in logging.getLogger("ax").handlers:
        h.setLevel(logging.WARNING)

    def config(p):
        if is_cat(p):
            kind = {int: "int", float: "float", bool: "bool"}.get(type(p["choices"][0]), "str")
            return ChoiceParameterConfig(name=p["name"], values=list(p["choices"]),
                                         parameter_type=kind, is_ordered=False)
        return RangeParameterConfig(name=p["name"], bounds=(p["low"], p["high"]),
                                    parameter_type=p["type"],
                                    scaling="log" if p.get("scale") == "log" else "linear")

    client = Client(random_seed=run.seed)
    client.configure_experiment(parameters=[config(p) for p in run.params])
    client.configure_optimization(objective="-f")  # minimise f
    while run.remaining:
        t = time.perf_counter()
        trials = client.get_next_trials(max_trials=min(q, run.remaining))
        if not trials:
            raise RuntimeError("Ax generated no trial")
        values = run.evaluate(list(trials.values()), time.perf_counter() - t)
        for index, v in zip(trials, values):
            client.complete_trial(trial_index=index, raw_data={"f": v})
    if not run.noisy:
        return None
    return client.get_best_parameterization()[0]


def preload(method):
    """Import the method's libraries up front, so that no run's timings include the imports."""
    if method.startswith("optuna"):
        import optuna  # noqa: F401
    if method != "optuna-tpe":
        import scipy.optimize  # noqa: F401
        import torch

        torch.set_num_threads(1)
    if method == "optuna-gp":
        import optuna._gp.gp  # noqa: F401
    if method in ("botorch", "ax"):
        import botorch.acquisition  # noqa: F401
        import botorch.models  # noqa: F401
        import botorch.optim  # noqa: F401
    if method == "ax":
        import ax  # noqa: F401


def optimise(method, run, q):
    """Dispatch to the method; returns its recommendation for noisy variants (or None)."""
    if method == "optuna-gp":
        return run_optuna(run, q, "gp")
    if method == "optuna-tpe":
        return run_optuna(run, q, "tpe")
    if method == "botorch":
        return run_botorch(run, q)
    return run_ax(run, q)


# --------------------------------------------------------------------------------------------
# Output


def method_name(method, q):
    if q == 1:
        return method
    return f"optuna-tpe-cl-q{q}" if method == "optuna-tpe" else f"{method}-q{q}"


def summarise(runs):
    finals = np.array([r.get("recommended", r["y"][-1]) for r in runs], dtype=float)
    n = len(finals)
    return {"final_mean": float(finals.mean()),
            "final_stderr": float(finals.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0,
            "final_median": float(np.median(finals)), "n_runs": n}


def write_atomic(path, doc):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def versions(method):
    pkgs = {"optuna-gp": ["optuna", "torch"], "optuna-tpe": ["optuna"],
            "botorch": ["botorch", "gpytorch", "torch"], "ax": ["ax-platform", "botorch", "torch"]}
    out = {}
    for pkg in pkgs[method] + ["numpy", "scipy"]:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def experiment_entry(doc, problem, variant, budget, q, name, description_suffix):
    """Find or create the experiment and method entries of the output document."""
    exp_name = f"{problem['name']}/{variant}" + (f"/q{q}" if q > 1 else "")
    exp = next((e for e in doc["experiments"] if e["name"] == exp_name), None)
    if exp is None:
        desc = (f"{problem['name']} ({problem.get('family', '?')}, {problem['dim']}-D), {variant}, "
                f"budget {budget}" + (f", batches of {q}" if q > 1 else "") + description_suffix)
        exp = {"name": exp_name, "description": desc, "metric": "simple_regret", "better": "lower",
               "x_axis": "iteration", "optimum": problem.get("optimum"),  # else set from a run
               "budget": budget, "methods": []}
        doc["experiments"].append(exp)
    entry = next((m for m in exp["methods"] if m["name"] == name), None)
    if entry is None:
        entry = {"name": name, "role": "reference", "runs": [], "failed": [], "summary": {}}
        exp["methods"].append(entry)
    return exp, entry


# --------------------------------------------------------------------------------------------
# Driver


def append_trace(path, problem, variant, method, seed, run):
    """One line per evaluation of `run`, in the format of `bench robust --trace` (peers have no phase)."""
    with open(path, "a") as f:
        for i, (v, r) in enumerate(zip(run.values, run.regrets)):
            f.write(json.dumps({"problem": problem, "variant": variant, "method": method, "seed": seed,
                                "index": i, "value": v, "regret": r, "noise_sd": run.noise_sd,
                                "phase": None}) + "\n")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--method", required=True, choices=METHODS)
    ap.add_argument("--spec", required=True, help="robust_problems.json from `bench robust-spec`")
    ap.add_argument("--bench", default=str(REPO_ROOT / "target" / "release" / "bench"),
                    help="bench binary (default: REPO/target/release/bench)")
    ap.add_argument("--problems", help="comma-separated problem names (default: all)")
    ap.add_argument("--variants", default="noiseless", help="comma-separated (default: noiseless)")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, help="number of seeds (default: up to the spec's count)")
    ap.add_argument("--batch", type=int, default=1, help="evaluations proposed at once (Q)")
    ap.add_argument("--budget-cap", type=int, help="smoke tests only: cap every budget (marks quick)")
    ap.add_argument("--out", required=True, help="output JSON file (rewritten after every run)")
    ap.add_argument("--trace", help="also append one JSON line per evaluation to this file, as `bench robust "
                                    "--trace` writes (for tools/bench/robust_trace.py)")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    spec = json.loads(Path(args.spec).read_text())
    problems = spec["problems"]
    if args.problems:
        wanted = args.problems.split(",")
        unknown = set(wanted) - {p["name"] for p in problems}
        if unknown:
            sys.exit(f"unknown problems {sorted(unknown)}; the spec has {[p['name'] for p in problems]}")
        problems = [p for p in problems if p["name"] in wanted]
    variants = args.variants.split(",")
    unknown = set(variants) - set(spec.get("variants", variants))
    if unknown:
        sys.exit(f"unknown variants {sorted(unknown)}; the spec has {spec['variants']}")
    n_seeds = args.seeds if args.seeds is not None else max(spec["seeds"] - args.first_seed, 0)
    seeds = range(args.first_seed, args.first_seed + n_seeds)
    q, name = args.batch, method_name(args.method, args.batch)

    doc = {"suite": "robust", "git_commit": "peers",
           "created_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "quick": args.budget_cap is not None,
           "machine": {"cpus": os.cpu_count(), "os": platform.system().lower()},
           "peer_versions": versions(args.method), "command": shlex.join([sys.executable] + sys.argv),
           "experiments": []}
    suffix = f"; {name} " + ", ".join(f"{k} {v}" for k, v in doc["peer_versions"].items())
    preload(args.method)
    evaluator = Evaluator(args.bench)
    try:
        for problem in problems:
            budget = problem["budget"] if args.budget_cap is None else min(problem["budget"], args.budget_cap)
            for variant in variants:
                exp, entry = experiment_entry(doc, problem, variant, budget, q, name, suffix)
                for seed in seeds:
                    label = f"{name} {problem['name']}/{variant} seed {seed}"
                    run = Run(evaluator, problem, variant, seed, budget, label)
                    try:
                        rec = optimise(args.method, run, q)
                        wall = time.perf_counter() - run.t0
                        rec = run.best_observed() if rec is None or not run.noisy else rec
                        rec = {p["name"]: clean(p, rec[p["name"]]) for p in problem["parameters"]}
                        recommended = float(evaluator(problem["name"], variant, seed, -1, rec)["regret"])
                    except Exception as e:  # keep going: one failed run must not lose a slice
                        log(f"{label}: FAILED after {len(run.values)} evaluations: {e!r}")
                        traceback.print_exc()
                        entry["failed"].append({"seed": seed, "evaluations": len(run.values),
                                                "error": repr(e)})
                        write_atomic(args.out, doc)
                        continue
                    y = run.curve()
                    record = {"seed": seed, "x": list(range(1, len(y) + 1)), "y": y,
                              "evaluations": len(y), "wall_s": round(wall, 3),
                              "suggest_ms": {"median": float(np.median(run.suggest_ms)),
                                             "p95": float(np.percentile(run.suggest_ms, 95))},
                              "recommended": recommended}
                    if q > 1 and run.batch_dists:
                        record["min_batch_distance"] = min(run.batch_dists)
                    if exp["optimum"] is None:
                        exp["optimum"] = run.optimum
                    entry["runs"].append(record)
                    if args.trace:
                        append_trace(args.trace, problem["name"], variant, name, seed, run)
                    entry["summary"] = summarise(entry["runs"])
                    write_atomic(args.out, doc)
                    log(f"{label}: done, final regret {y[-1]:.4g}, recommended {recommended:.4g}, "
                        f"{wall:.1f} s ({1000 * wall / len(y):.0f} ms/evaluation)")
    finally:
        evaluator.close()


if __name__ == "__main__":
    main()
