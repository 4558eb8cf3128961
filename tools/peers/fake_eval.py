#!/usr/bin/env python3
"""A stand-in for `bench robust-spec` / `bench robust-eval`, for self-tests of peers.py.

    fake_eval.py robust-spec --out DIR   writes DIR/robust_problems.json (three small problems)
    fake_eval.py robust-eval             answers evaluation requests, one JSON line each

Every problem is a weighted sphere on the unit-cube coordinates (log parameters in ln), with its
minimiser at 0.3 for floats, at `low` for integers and at the second choice for categoricals, so
the optimum is 0. The noise variants add Gaussian noise of standard deviation 1 % / 10 % of the
objective's range, seeded by (problem, seed, index) exactly like the real evaluator's protocol.
Standard library only, so it runs with any python3.
"""

import hashlib
import json
import math
import os
import random
import sys

PROBLEMS = [
    {"name": "sphere2", "family": "fake", "dim": 2, "budget": 20,
     "parameters": [{"name": "x0", "type": "float", "low": -5.0, "high": 10.0},
                    {"name": "x1", "type": "float", "low": 0.0, "high": 15.0}]},
    {"name": "mixed4", "family": "fake", "dim": 4, "budget": 24,
     "parameters": [{"name": "x0", "type": "float", "low": -5.0, "high": 10.0},
                    {"name": "x1", "type": "float", "low": 0.001, "high": 10.0, "scale": "log"},
                    {"name": "x2", "type": "int", "low": 0, "high": 10},
                    {"name": "x3", "type": "categorical", "choices": ["c0", "c1", "c2"]}]},
    {"name": "sphere6", "family": "fake", "dim": 6, "budget": 60,
     "parameters": [{"name": f"x{i}", "type": "float", "low": 0.0, "high": 1.0} for i in range(6)]},
]
NOISE = {"noiseless": 0.0, "noise1": 0.01, "noise10": 0.10}


def unit(p, v):
    """Position of value v in [0, 1] (categoricals: 0 for the optimal choice, 1 otherwise)."""
    if p["type"] == "categorical":
        return 0.0 if v == p["choices"][1] else 1.0
    lo, hi, v = float(p["low"]), float(p["high"]), float(v)
    if p.get("scale") == "log":
        lo, hi, v = math.log(lo), math.log(hi), math.log(v)
    return (v - lo) / (hi - lo)


def objective(problem, assignments):
    """Noiseless value and the objective's range (for scaling the noise)."""
    total, span = 0.0, 0.0
    for i, p in enumerate(problem["parameters"]):
        target = 0.0 if p["type"] in ("int", "categorical") else 0.3
        w = 1.0 + i
        total += w * (unit(p, assignments[p["name"]]) - target) ** 2
        span += w
    return total, span


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "robust-spec":
        out = sys.argv[sys.argv.index("--out") + 1]
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "robust_problems.json"), "w") as f:
            json.dump({"problems": PROBLEMS, "variants": list(NOISE), "seeds": 3}, f, indent=1)
        return
    if len(sys.argv) < 2 or sys.argv[1] != "robust-eval":
        sys.exit("usage: fake_eval.py robust-spec --out DIR | robust-eval")
    by_name = {p["name"]: p for p in PROBLEMS}
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            problem = by_name[req["problem"]]
            true, span = objective(problem, req["assignments"])
            value = true
            if req["index"] >= 0 and NOISE[req["variant"]] > 0:
                key = f'{req["problem"]}/{req["variant"]}/{req["seed"]}/{req["index"]}'.encode()
                rng = random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "little"))
                value += rng.gauss(0.0, NOISE[req["variant"]] * span)
            answer = {"value": value, "true_value": true, "regret": true}
        except Exception as e:  # noqa: BLE001 - report any bad request as the real evaluator does
            answer = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
