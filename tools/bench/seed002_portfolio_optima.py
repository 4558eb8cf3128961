#!/usr/bin/env python3
"""Independent check of the seed002 portfolio F* constants (`seed002_problems::PORTFOLIO_*_OPTIMUM`), numpy/scipy.

F(x) = E_c[−m(x, c)], m the portfolio surrogate's posterior mean (`../shared/data/portfolio_gp.json`, the copy in
`crates/bench/data/`), the expectation by the suite's tensor Gauss–Legendre rule: 32 nodes per context coordinate
on [0, 1]; normal contexts N(0.5, 0.1²) clipped to [0, 1] add the clipped masses as nodes at 0 and 1. The search:
an 11³ grid of decisions under an 8-node rule, L-BFGS-B from the best 25 under the 32-node rule, and a 401-point
scan of the edge x₁ = 0, x₂ = 1 (where every local maximum found lies) listing its local maxima.

    python3 tools/bench/seed002_portfolio_optima.py        # ~2 min on one core
"""

import json
import os

import numpy as np
from scipy.optimize import minimize
from scipy.stats import norm

HERE = os.path.dirname(os.path.abspath(__file__))
d = json.load(open(os.path.join(HERE, "..", "..", "crates", "bench", "data", "portfolio_gp.json")))
h = d["hyperparameters"]
ls = np.array(h["lengthscales"])
train = np.array(d["x"]) / ls
weights = np.array(d["mean_weights"])
offset = h["outcome_mean"] + h["outcome_std"] * h["constant_mean"]


def surrogate(u):
    """The posterior mean in original units at the rows of u (Matérn-5/2 ARD, as the data file's formula)."""
    z = u / ls
    r2 = (z**2).sum(1)[:, None] + (train**2).sum(1)[None, :] - 2 * z @ train.T
    r = np.sqrt(5 * np.maximum(r2, 0))
    return offset + h["outcome_std"] * (h["outputscale"] * (1 + r + r * r / 3) * np.exp(-r)) @ weights


def rule(kind, n):
    x, w = np.polynomial.legendre.leggauss(n)
    x, w = 0.5 * (1 - x), w / 2
    if kind == "normal":
        m, s = 0.5, 0.1
        x = np.r_[0.0, 1.0, x]
        w = np.r_[norm.cdf(-m / s), norm.cdf(-(1 - m) / s), w * norm.pdf((x[2:] - m) / s) / s]
    points = np.array([[a, b] for b in x for a in x])
    return points, np.array([wa * wb for wb in w for wa in w])


def expectation(xs, r):
    points, w = r
    xs = np.atleast_2d(xs)
    u = np.hstack([np.repeat(xs, len(points), 0), np.tile(points, (len(xs), 1))])
    return -(surrogate(u).reshape(len(xs), len(points)) @ w)


def batched(xs, r, size=20):
    return np.concatenate([expectation(xs[i : i + size], r) for i in range(0, len(xs), size)])


for c in d["check_pairs"]:
    assert abs(surrogate(np.array([c["x"]]))[0] - c["value"]) < 1e-9 * (1 + abs(c["value"])), c["label"]

for kind in ["uniform", "normal"]:
    coarse, fine = rule(kind, 8), rule(kind, 32)
    g = np.linspace(0, 1, 11)
    grid = np.array([[a, b, c] for a in g for b in g for c in g])
    starts = grid[np.argsort(-batched(grid, coarse))[:25]]
    best = max(
        (minimize(lambda x: -expectation(x, fine)[0], s, method="L-BFGS-B", bounds=[(0, 1)] * 3) for s in starts),
        key=lambda res: -res.fun,
    )
    t = np.linspace(0, 1, 401)
    edge = batched(np.c_[np.zeros_like(t), np.ones_like(t), t], fine)
    peaks = [f"{edge[i]:.4f} at x3={t[i]:.4f}" for i in range(1, 400) if edge[i - 1] < edge[i] > edge[i + 1]]
    print(f"{kind}: F* = {-best.fun:.10f} at {best.x.tolist()}; local maxima on the edge x1=0, x2=1: {peaks}")
