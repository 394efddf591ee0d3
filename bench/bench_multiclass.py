"""Benchmark: our BCFW vs liblinear Crammer-Singer, our SDCA vs lbfgs, on letter.

Usage: python bench/bench_multiclass.py [--quick] [--cache DIR]   (set STRUCTPRED_MIRROR offline)

Letter (UCI letter-recognition): 15000 rows drawn with seed 0, the first 9000 are the
training set; inputs standardised; NystromGaussian(200, random_state=0) features;
lam = 2^-10.  Both sides are measured on the same objective
``(1/n) sum_i S(W^T x_i, y_i) + lam/2 ||W||^2``: liblinear minimises
``1/2 ||W||^2 + C sum_i S`` and LogisticRegression ``1/2 ||W||^2 + C sum_i logloss``, whose
minimisers coincide with ours for ``C = 1 / (lam n)``.  We time how long our solver
takes (training time, per-pass objective evaluation excluded; wall time including it
is printed too) to reach the reference's primal objective within 1e-3 relative and
print the ratio to the reference's own fit time.  Numba compilation is warmed up first.
BCFW is timed twice: plain Frank-Wolfe steps, and pairwise steps with gap sampling
(:data:`M3N_VARIANTS`).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

from structpred.data.acquire import fetch
from structpred.data.parsers import parse_view
from structpred.features import NystromGaussian
from structpred.outputs import Multiclass
from structpred.solvers import bcfw, primal_objective, sdca
from structpred.surrogates import Hinge, LogLoss


#: the BCFW variants timed against liblinear: the plain one (Lacoste-Julien et al. 2013) and the
#: one with pairwise steps, 5 steps per visit on the cached scores and gap sampling
M3N_VARIANTS = {
    "frank-wolfe": {},
    "pairwise+gap": {"steps": "pairwise", "block_steps": 5, "sampling": "gap"},
}


def load(cache, quick):
    """letter through the data layer (cache -> STRUCTPRED_MIRROR -> download, sha256-checked)."""
    arrays = parse_view("letter", fetch("letter", Path(cache) / "letter"))
    X, y = arrays["X"], arrays["y"]
    idx = np.random.default_rng(0).permutation(len(y))[:15000]
    n_train = 2000 if quick else 9000
    X, y = X[idx[:n_train]], y[idx[:n_train]]
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    F = NystromGaussian(200, random_state=0).fit_transform(X)
    return F, y


def time_to_target(run, target, max_passes):
    t0 = time.perf_counter()
    res = run(max_passes, target)
    wall = time.perf_counter() - t0
    for h in res.history:
        if h["primal"] <= target:
            return h["seconds"], h["pass"], wall, h["primal"]
    return np.inf, len(res.history), wall, res.history[-1]["primal"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="2000 training rows")
    ap.add_argument("--cache", default="data/raw", help="raw-data cache folder (as the workflow's)")
    ap.add_argument("--max-passes", type=int, default=1000)
    args = ap.parse_args()
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    X, y = load(args.cache, args.quick)
    n, d = X.shape
    lam = 2.0 ** -10
    C = 1.0 / (lam * n)
    sp = Multiclass.zero_one(26)
    print(f"letter: n={n}, d={d}, k=26, lam=2^-10, C={C:.4g}")
    # warm up numba (compilation / cache load not timed)
    for options in M3N_VARIANTS.values():
        bcfw(Hinge(sp), X[:50], y[:50], lam, n_passes=2, random_state=0, **options)
    sdca(LogLoss(sp), X[:50], y[:50], lam, n_passes=1, random_state=0)

    # --- M3N vs liblinear Crammer-Singer -------------------------------------------------
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        svc = LinearSVC(multi_class="crammer_singer", C=C, fit_intercept=False, max_iter=100000).fit(X, y)
        t_lib = time.perf_counter() - t0
    p_lib = primal_objective(Hinge(sp), X, y, svc.coef_.T, lam)
    target = p_lib * (1 + 1e-3)
    print(f"[M3N] liblinear CS: {t_lib:.3f}s primal={p_lib:.6f}; target primal <= {target:.6f}")
    for label, options in M3N_VARIANTS.items():
        t_ours, passes, wall, p_ours = time_to_target(
            lambda m, tg: bcfw(Hinge(sp), X, y, lam, n_passes=m, random_state=0, **options), target, args.max_passes)
        print(f"[M3N] BCFW {label}: reaches it after {passes} passes, {t_ours:.3f}s train ({wall:.3f}s wall incl. "
              f"eval), primal={p_ours:.6f}; ratio ours/liblinear = {t_ours / t_lib:.3f} (target <= 1)")

    # --- CRF vs lbfgs --------------------------------------------------------------------
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        lr = LogisticRegression(C=C, fit_intercept=False, max_iter=100000).fit(X, y)
        t_lbfgs = time.perf_counter() - t0
    p_lr = primal_objective(LogLoss(sp), X, y, lr.coef_.T, lam)
    target = p_lr * (1 + 1e-3)
    t_ours, passes, wall, p_ours = time_to_target(
        lambda m, tg: sdca(LogLoss(sp), X, y, lam, n_passes=m, random_state=0), target, min(args.max_passes, 100))
    print(f"[CRF] lbfgs: {t_lbfgs:.3f}s primal={p_lr:.6f} | SDCA reaches primal<= {target:.6f} "
          f"after {passes} passes, {t_ours:.3f}s train ({wall:.3f}s wall incl. eval), primal={p_ours:.6f}")
    print(f"[CRF] ratio ours/lbfgs = {t_ours / t_lbfgs:.3f} (target <= 1)")


if __name__ == "__main__":
    main()
