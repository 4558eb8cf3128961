#!/usr/bin/env python3
"""Suggest latency of BoTorch's qLogNEHVI with one outcome constraint, the way its tutorials run it, for comparison
with `bench moo-latency` in the same sitting.

The study: d = 6 unit parameters, two objectives and one constraint of `bench moo-latency`'s problem (DTLZ2 with
two objectives; the constraint is x0 + x1 <= 1 observed as an outcome), n random observations. Each repetition fits
a ModelListGP of three SingleTaskGPs (fit_gpytorch_mll) and maximises qLogNEHVI (q = 1, 10 restarts, 512 raw samples,
the constraint as `constraints=[...]`) with the reference point (1.1, 1.1) in the maximisation sign. Prints one JSON
line per n: the median and each repetition's seconds, with the versions.

    ~/peers-venv/bin/python tools/peers/moo_latency.py --sizes 100 --reps 3
"""

import argparse
import json
import math
import os
import statistics
import time
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "2")
warnings.filterwarnings("ignore")

import torch  # noqa: E402
from botorch import __version__ as botorch_version  # noqa: E402
from botorch.acquisition.multi_objective.logei import qLogNoisyExpectedHypervolumeImprovement  # noqa: E402
from botorch.acquisition.multi_objective.objective import IdentityMCMultiOutputObjective  # noqa: E402
from botorch.fit import fit_gpytorch_mll  # noqa: E402
from botorch.models import ModelListGP, SingleTaskGP  # noqa: E402
from botorch.models.transforms import Normalize, Standardize  # noqa: E402
from botorch.optim import optimize_acqf  # noqa: E402
from botorch.sampling import SobolQMCNormalSampler  # noqa: E402
from gpytorch.mlls import SumMarginalLogLikelihood  # noqa: E402


def dtlz2(x):
    g = ((x[..., 1:] - 0.5) ** 2).sum(-1)
    f1 = (1 + g) * torch.cos(x[..., 0] * math.pi / 2)
    f2 = (1 + g) * torch.sin(x[..., 0] * math.pi / 2)
    return torch.stack([f1, f2], -1)


def one_suggestion(n, d, seed):
    torch.manual_seed(seed)
    x = torch.rand(n, d, dtype=torch.double)
    y = -dtlz2(x)  # maximised
    slack = (1.0 - x[:, 0] - x[:, 1]).unsqueeze(-1)  # feasible when >= 0
    started = time.perf_counter()
    models = [
        SingleTaskGP(x, out, input_transform=Normalize(d), outcome_transform=Standardize(1))
        for out in (y[:, :1], y[:, 1:], slack)
    ]
    model = ModelListGP(*models)
    fit_gpytorch_mll(SumMarginalLogLikelihood(model.likelihood, model))
    acq = qLogNoisyExpectedHypervolumeImprovement(
        model=model,
        ref_point=[-1.1, -1.1],
        X_baseline=x,
        sampler=SobolQMCNormalSampler(torch.Size([128])),
        objective=IdentityMCMultiOutputObjective(outcomes=[0, 1]),
        constraints=[lambda z: -z[..., 2]],
        prune_baseline=True,
    )
    bounds = torch.stack([torch.zeros(d), torch.ones(d)]).double()
    optimize_acqf(acq, bounds=bounds, q=1, num_restarts=10, raw_samples=512)
    return time.perf_counter() - started


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100", help="comma-separated numbers of observations")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dim", type=int, default=6)
    args = ap.parse_args()
    for n in (int(s) for s in args.sizes.split(",")):
        secs = [one_suggestion(n, args.dim, seed) for seed in range(args.reps)]
        print(json.dumps({"method": "botorch-qlognehvi", "n": n, "d": args.dim, "median_s": statistics.median(secs),
                          "runs_s": secs, "botorch": botorch_version, "torch": torch.__version__,
                          "threads": torch.get_num_threads()}), flush=True)


if __name__ == "__main__":
    main()
