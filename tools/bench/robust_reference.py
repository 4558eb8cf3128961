"""Reference values for `crates/bench/src/suites/robust` (run with numpy, scipy and statsmodels from PyPI):
the minimisers of Hartmann-3, Hartmann-6 and Shekel-10 as the Rust constants state them, and exact Wilcoxon
signed-rank p-values, binomial tails and Holm rejection counts for `table::tests`. Prints what the Rust tests assert."""
import numpy as np
from scipy.optimize import minimize
from scipy.stats import PermutationMethod, binom, wilcoxon
from statsmodels.stats.multitest import multipletests

ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
A3 = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
P3 = np.array([[0.3689, 0.1170, 0.2673], [0.4699, 0.4387, 0.7470], [0.1091, 0.8732, 0.5547], [0.0381, 0.5743, 0.8828]])
A6 = np.array([[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]])
P6 = np.array([[0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886], [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
               [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650], [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381]])
BETA = 0.1 * np.array([1, 2, 2, 4, 4, 6, 3, 7, 5, 5.0])
C = np.array([[4, 1, 8, 6, 3, 2, 5, 8, 6, 7], [4, 1, 8, 6, 7, 9, 3, 1, 2, 3.6],
              [4, 1, 8, 6, 3, 2, 5, 8, 6, 7], [4, 1, 8, 6, 7, 9, 3, 1, 2, 3.6]])


def hartmann(a, p):
    return lambda z: -np.sum(ALPHA * np.exp(-np.sum(a * (z - p) ** 2, axis=1)))


def shekel(z):
    return -np.sum(1 / (np.sum((z[:, None] - C) ** 2, axis=0) + BETA))


for name, f, x0 in [("hartmann3", hartmann(A3, P3), [0.1146, 0.5556, 0.8525]),
                    ("hartmann6", hartmann(A6, P6), [0.2017, 0.15, 0.4769, 0.2753, 0.3117, 0.6573]),
                    ("shekel", shekel, [4.0, 4, 4, 4])]:
    r = minimize(f, x0, method="Nelder-Mead", options=dict(xatol=1e-13, fatol=1e-15, maxiter=100000, maxfev=100000))
    r = minimize(f, r.x, method="BFGS", options=dict(gtol=1e-12))
    print(name, [float(v) for v in r.x], float(r.fun))

for d, alt in [([-1, -2, -3, -4, -5], "less"), ([1, -2, 3, 4, 5, 6, 7, -8, 9, 10], "greater"),
               ([1, -1, 2, 2, 3, -3, 4], "greater"), ([-1, -2, -3, -4, 5, 6, 7, 8, 9, 10], "greater")]:
    # The exact permutation distribution of the mid-rank statistic (what `table::wilcoxon` computes; scipy's
    # method="exact" ignores ties).
    print("wilcoxon", d, alt, wilcoxon(d, alternative=alt, method=PermutationMethod(n_resamples=10**6)).pvalue)

# `table::binomial_tail(k, n, p)` is P(X >= k), scipy's binom.sf(k - 1, n, p).
for k, n, p in [(3, 26, 0.05), (1, 26, 0.05), (1, 10, 0.05), (6, 26, 0.05)]:
    print("binomial_tail", k, n, p, binom.sf(k - 1, n, p))

# `table::holm_rejections(p, 0.05)`: statsmodels' Holm step-down.
for ps in [[0.001, 0.0019, 0.002, 0.01, 0.04, 0.3], [0.2, 0.0125, 0.011, 0.0005]]:
    print("holm", ps, [int(i) for i in np.flatnonzero(multipletests(ps, alpha=0.05, method="holm")[0])])
