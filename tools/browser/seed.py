"""Studies for the dashboard's browser test and screenshots, created over the public API (standard library only).

`seed_all(api)` creates a plain study with 30 observations (one of them failed, each with a cost) and one study per
block type (control sets, contexts, level set with noise levels, kernel candidates, indirect), each with a few
rounds of ask-tell, and returns {kind: study id}.
"""

import json
import math
import random
import urllib.error
import urllib.request


class Api:
    """A minimal JSON client for the bayesd API."""

    def __init__(self, base, token=None):
        self.base = base.rstrip("/")
        self.token = token

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=120) as res:
                return json.loads(res.read() or b"null")
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"{method} {path}: {e.code} {e.read().decode()[:500]}") from None

    def create(self, spec):
        return self.call("POST", "/v1/studies", spec)["id"]

    def suggest(self, sid, count=1, **extra):
        return self.call("POST", f"/v1/studies/{sid}/suggestions", {"count": count, **extra})["suggestions"]

    def observe(self, sid, body):
        return self.call("POST", f"/v1/studies/{sid}/observations", body)


def plain_value(a):
    """A smooth yield-like response of the README's reaction study."""
    t = (a["temperature"] - 20) / 60
    c = math.log10(a["catalyst_ppm"]) / 3
    s = (a["stir_rpm"] - 100) / 900
    bonus = {"water": 0.0, "ethanol": 4.0, "dmso": 2.0}[a["solvent"]]
    return 60 + 25 * math.exp(-((t - 0.6) ** 2 + (c - 0.4) ** 2) / 0.08) - 6 * (s - 0.5) ** 2 + bonus


PLAIN = {
    "name": "reaction yield",
    "objective": {"name": "yield", "goal": "maximize"},
    "parameters": [
        {"name": "temperature", "type": "float", "low": 20, "high": 80},
        {"name": "catalyst_ppm", "type": "float", "low": 1, "high": 1000, "scale": "log"},
        {"name": "stir_rpm", "type": "int", "low": 100, "high": 1000},
        {"name": "solvent", "type": "categorical", "choices": ["water", "ethanol", "dmso"]},
    ],
    "algorithm": {"name": "gp-ei", "options": {"raw_samples": 256, "restarts": 2}},
    "seed": 7,
}


def seed_plain(api, n=30):
    """n observations in batches of 5 by two clients; the 8th run fails; every run reports its cost."""
    sid = api.create(PLAIN)
    done = 0
    while done < n:
        client = "robot-1" if done % 10 < 5 else "robot-2"
        for s in api.suggest(sid, count=min(5, n - done), client_id=client):
            a = s["assignments"]
            cost = round(1 + a["temperature"] / 40, 3)
            if done == 7:
                api.observe(sid, {"suggestion_id": s["id"], "failed": True, "cost": cost})
            else:
                api.observe(sid, {"suggestion_id": s["id"], "value": plain_value(a), "cost": cost})
            done += 1
    api.suggest(sid, count=1, client_id="robot-1")  # one open suggestion
    return sid


def seed_control_sets(api, rounds=10):
    rng = random.Random(17)
    sets = [("x1", ["x1"], 0.5), ("x1x2", ["x1", "x2"], 0.7), ("all", ["x1", "x2", "x3"], 1.0)]
    sid = api.create({
        "name": "control sets",
        "parameters": [
            {"name": "x1", "type": "float", "low": 0.0, "high": 1.0},
            {"name": "x2", "type": "float", "low": 0.0, "high": 1.0,
             "distribution": {"type": "truncated_normal", "mean": 0.5, "std": 0.15}},
            {"name": "x3", "type": "float", "low": 0.0, "high": 1.0, "distribution": {"type": "uniform"}},
        ],
        "control_sets": [{"name": n, "parameters": p} for n, p, _ in sets],
        "objective": {"name": "yield", "goal": "maximize"},
        "algorithm": {"name": "auto", "options": {"tau": 2, "mc_samples": 64}},
        "seed": 17,
    })
    for _ in range(rounds):
        s = api.suggest(sid)[0]
        a = dict(s["assignments"])
        a.setdefault("x2", min(1.0, max(0.0, rng.gauss(0.5, 0.15))))
        a.setdefault("x3", rng.random())
        cost = dict((n, c) for n, _, c in sets)[s["control_set"]] * (1 + rng.uniform(-0.05, 0.05))
        v = -((a["x1"] - 0.3) ** 2 + (a["x2"] - 0.6) ** 2 + 0.5 * (a["x3"] - 0.4) ** 2)
        api.observe(sid, {"suggestion_id": s["id"], "assignments": a, "value": v, "cost": cost})
    return sid


def seed_contexts(api, rounds=16):
    rng = random.Random(5)
    sid = api.create({
        "name": "greenhouse (contexts)",
        "parameters": [
            {"name": "x", "type": "float", "low": 0.0, "high": 1.0},
            {"name": "temperature", "type": "float", "low": 0.0, "high": 1.0, "role": "context"},
        ],
        "objective": {"name": "reward", "goal": "maximize"},
        "algorithm": {"name": "auto", "options": {"context_samples": 128, "raw_samples": 64}},
        "seed": 21,
    })
    for _ in range(rounds):
        s = api.suggest(sid)[0]
        c = min(1.0, max(0.0, rng.gauss(0.4, 0.2)))
        x = s["assignments"]["x"]
        api.observe(sid, {"suggestion_id": s["id"], "assignments": {"temperature": c}, "value": 1 - 4 * (x - c) ** 2})
    return sid


def seed_level_set(api, rounds=12):
    rng = random.Random(3)
    levels = {"precise": (1e-4, 10.0), "rough": (0.01, 2.0)}
    sid = api.create({
        "name": "level set",
        "parameters": [
            {"name": "x", "type": "float", "low": 0.0, "high": 1.0},
            {"name": "y", "type": "float", "low": 0.0, "high": 1.0},
        ],
        "objective": {"name": "concentration", "goal": "maximize"},
        "candidates": {"grid": {"x": {"count": 8}, "y": {"count": 8}}},
        "noise_levels": [{"name": n, "noise_variance": v, "cost": c} for n, (v, c) in levels.items()],
        "level_set": {"threshold": 0.5},
        "algorithm": {"name": "truvar"},
        "seed": 8,
    })
    for _ in range(rounds):
        s = api.suggest(sid)[0]
        a = s["assignments"]
        var, cost = levels[s["noise_level"]]
        v = math.exp(-((a["x"] - 0.35) ** 2 + (a["y"] - 0.6) ** 2) / 0.08) + math.sqrt(var) * rng.gauss(0, 1)
        api.observe(sid, {"suggestion_id": s["id"], "noise_level": s["noise_level"], "value": v, "cost": cost})
    return sid


def seed_kernel(api, rounds=10):
    def f(x):
        k = lambda c: math.exp(-((x - c) ** 2) / (2 * 0.1 * 0.1))  # noqa: E731
        return 0.6 * k(0.2) - 0.5 * k(0.5) + 0.55 * k(0.8)

    sid = api.create({
        "name": "kernel candidates",
        "parameters": [{"name": "x", "type": "float", "low": 0.0, "high": 1.0}],
        "algorithm": {"name": "he-gp-ucb", "options": {"initial_design": 3}},
        "kernel": {
            "candidates": [
                {"name": "short", "family": "rbf", "lengthscale": 0.05},
                {"name": "medium", "family": "rbf", "lengthscale": 0.1},
                {"name": "long", "family": "rbf", "lengthscale": 1.0},
            ],
            "confidence": {"setting": "frequentist", "rkhs_norm_bound": 1.0, "noise_bound": 0.01, "delta": 0.1},
        },
        "seed": 11,
    })
    for _ in range(rounds):
        s = api.suggest(sid)[0]
        api.observe(sid, {"suggestion_id": s["id"], "value": f(s["assignments"]["x"])})
    return sid


def seed_indirect(api, rounds=6):
    pairs = []
    for i in range(8):
        for j in range(8):
            a1, a2 = (i + 0.5) / 8, (j + 0.5) / 8
            e = ((i * 7 + j * 3) % 5) * 0.1 - 0.2
            pairs.append({"target": {"x1": min(10, max(-5, 15 * a1 - 5 + e)), "x2": min(15, max(0, 15 * a2 - e))},
                          "query": {"a1": a1, "a2": a2}})

    def branin(x1, x2):
        b = 5.1 / (4 * math.pi ** 2)
        return (x2 - b * x1 * x1 + 5 / math.pi * x1 - 6) ** 2 + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x1) + 10

    sid = api.create({
        "name": "indirect queries",
        "parameters": [
            {"name": "x1", "type": "float", "low": -5.0, "high": 10.0},
            {"name": "x2", "type": "float", "low": 0.0, "high": 15.0},
        ],
        "objective": {"name": "branin", "goal": "minimize"},
        "algorithm": {"name": "auto", "options": {"candidates": 128, "target_grid": 64}},
        "indirect": {"query_parameters": [{"name": "a1", "type": "float", "low": 0.0, "high": 1.0},
                                          {"name": "a2", "type": "float", "low": 0.0, "high": 1.0}],
                     "pairs": pairs},
        "seed": 3,
    })
    for _ in range(rounds):
        s = api.suggest(sid)[0]
        q = s["query"]
        api.observe(sid, {"suggestion_id": s["id"], "assignments": {}, "query": q,
                          "value": branin(15 * q["a1"] - 5, 15 * q["a2"])})
    return sid


def seed_outcomes(api, n=16):
    """Two objectives, an outcome constraint and a mixture constraint: n runs in pairs, the 5th fails, and runs hot
    enough are infeasible (purity below its bound)."""
    sid = api.create({
        "name": "formulation",
        "parameters": [
            {"name": "water", "type": "float", "low": 0, "high": 1},
            {"name": "ethanol", "type": "float", "low": 0, "high": 1},
            {"name": "temperature", "type": "float", "low": 20, "high": 80},
        ],
        "objectives": [{"name": "yield"}, {"name": "cost", "goal": "minimize"}],
        "constraints": [{"name": "purity", "op": ">=", "bound": 0.95}],
        "parameter_constraints": [{"terms": {"water": 1, "ethanol": 1}, "op": "<=", "bound": 1}],
        "algorithm": {"name": "gp-parego", "options": {"raw_samples": 256, "restarts": 2}},
        "seed": 5,
    })
    done = 0
    while done < n:
        for s in api.suggest(sid, count=2):
            a = s["assignments"]
            t = (a["temperature"] - 20) / 60
            if done == 4:
                api.observe(sid, {"suggestion_id": s["id"], "failed": True})
            else:
                values = {"yield": a["water"] + 0.5 * a["ethanol"] + 0.3 * t, "cost": 2 + 5 * a["water"] + 3 * a["ethanol"] ** 2,
                          "purity": 1 - 0.15 * t * t}
                api.observe(sid, {"suggestion_id": s["id"], "values": values})
            done += 1
    return sid


SEEDERS = {
    "plain": seed_plain,
    "control_sets": seed_control_sets,
    "contexts": seed_contexts,
    "level_set": seed_level_set,
    "kernel": seed_kernel,
    "indirect": seed_indirect,
    "outcomes": seed_outcomes,
}


def seed_all(api):
    return {kind: f(api) for kind, f in SEEDERS.items()}


if __name__ == "__main__":
    import sys
    import time

    api = Api(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
    for kind, f in SEEDERS.items():
        t = time.monotonic()
        print(kind, f(api), f"{time.monotonic() - t:.1f} s", flush=True)
