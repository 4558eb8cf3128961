#!/usr/bin/env python3
"""Minimise the Branin function through a running bayesd server with the Python client: 30 ask/tell rounds, then
print the best value.

Usage: pip install ./clients/python; python3 examples/quickstart.py [--url http://127.0.0.1:8080] [--rounds 30]
(run from a checkout, it falls back to the client's source in clients/python/src when the package is not installed).
examples/quickstart_stdlib.py does the same with the standard library only. The global minimum of Branin is 0.397887.
"""
import argparse
import math
import sys
from pathlib import Path

try:
    import bayesd
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "clients" / "python" / "src"))
    import bayesd


def branin(x, y):
    b, c, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 1 / (8 * math.pi)
    return (y - b * x * x + c * x - 6) ** 2 + 10 * (1 - t) * math.cos(x) + 10


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--token", default=None)
    args = ap.parse_args()
    client = bayesd.Client(args.url, token=args.token)
    study = client.create_study(
        "branin-quickstart",
        [bayesd.float_param("x", -5, 10), bayesd.float_param("y", 0, 15)],
        objective="branin",
        goal="minimize",
        seed=7,
    )

    def report(i, s, obs):
        print(f"round {i + 1:2d}: x={s['x']:8.4f} y={s['y']:8.4f} branin={obs.value:10.6f}")

    best = study.optimize(lambda a: branin(a["x"], a["y"]), args.rounds, callback=report)
    print(f"best value {best.value:.6f} at x={best.assignments['x']:.4f} y={best.assignments['y']:.4f}")
    print(f"gap to the optimum 0.397887: {best.value - 0.397887:.6f}")


if __name__ == "__main__":
    main()
