#!/usr/bin/env python3
"""Minimise the Branin function through a running bayesd server: 30 ask/tell rounds, then print the best value.

Standard library only, for machines where the client package cannot be installed (examples/quickstart.py is the
same loop with the bayesd client, clients/python). The global minimum of Branin is 0.397887.
Usage: python3 examples/quickstart_stdlib.py [--url http://127.0.0.1:8080] [--rounds 30] [--token TOKEN]
"""
import argparse
import json
import math
import urllib.request


def branin(x, y):
    b, c, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 1 / (8 * math.pi)
    return (y - b * x * x + c * x - 6) ** 2 + 10 * (1 - t) * math.cos(x) + 10


def call(base, method, path, body=None, token=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=120) as res:
        return json.load(res)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--token", default=None)
    args = ap.parse_args()
    study = call(args.url, "POST", "/v1/studies", {
        "name": "branin-quickstart",
        "parameters": [
            {"name": "x", "type": "float", "low": -5, "high": 10},
            {"name": "y", "type": "float", "low": 0, "high": 15},
        ],
        "objective": {"name": "branin", "goal": "minimize"},
        "seed": 7,
    }, args.token)
    sid = study["id"]
    for i in range(args.rounds):
        s = call(args.url, "POST", f"/v1/studies/{sid}/suggestions", {"count": 1}, args.token)["suggestions"][0]
        a = s["assignments"]
        value = branin(a["x"], a["y"])
        call(args.url, "POST", f"/v1/studies/{sid}/observations", {"suggestion_id": s["id"], "value": value}, args.token)
        print(f"round {i + 1:2d}: x={a['x']:8.4f} y={a['y']:8.4f} branin={value:10.6f}")
    best = call(args.url, "GET", f"/v1/studies/{sid}/best", token=args.token)["best_observed"]
    print(f"best value {best['value']:.6f} at x={best['assignments']['x']:.4f} y={best['assignments']['y']:.4f}")
    print(f"gap to the optimum 0.397887: {best['value'] - 0.397887:.6f}")


if __name__ == "__main__":
    main()
