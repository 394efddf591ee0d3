"""SDCA for the CRF / multinomial logistic loss (Shalev-Shwartz & Zhang 2013)."""

from __future__ import annotations

import numpy as np

from structpred.solvers._common import (
    PassTimer,
    SolverResult,
    check_problem,
    entropy_rows,
    init_dual,
    make_rng,
    progress,
    val_record,
)
from structpred.solvers.registry import kernels_for
from structpred.surrogates.crf import crf_loss


def crf_objectives(space, X, y, W, lam, mu):
    V = X @ W
    val, _ = crf_loss(space, V, y)
    reg = 0.5 * lam * float(np.sum(W * W))
    return float(np.mean(val)) + reg, float(np.mean(entropy_rows(mu))) - reg


def sdca(space, X, y, lam, n_passes=50, random_state=None, X_val=None, y_val=None,
         tol=None, verbose=False, predict=None) -> SolverResult:
    """Minimise ``(1/n) sum_i [log Z(v_i) - v_i . phi(y_i)] + lam/2 ||W||^2``.

    Dual ``(1/n) sum_i H(mu_i) - lam/2 ||W(mu)||^2`` with ``W(mu) = (1/(lam n)) sum_i
    x_i (phi(y_i) - mu_i)^T``; each block is maximised exactly (a 1-D root find on
    the simplex multiplier with per-coordinate Newton, see ``_entropy_block``).
    History: primal, dual, exact gap, oracle_calls (marginal computations), seconds.
    ``predict`` maps rows to outputs for the validation loss (default Bayes decoding).
    """
    space.require_marginals()
    X, y, lam = check_problem(space, X, y, lam)
    kern = kernels_for(space)
    rng = make_rng(random_state)
    n, d = X.shape
    k = space.embedding_dim
    W = np.zeros((d, k))
    mu = init_dual(space, y)
    xnorm2 = np.einsum("ij,ij->i", X, X)
    timer = PassTimer()
    hist = []
    if predict is None:
        def predict(Xv):
            return space.bayes_decode(space.marginals(np.asarray(Xv, dtype=np.float64) @ W))

    for p in progress(range(1, int(n_passes) + 1), verbose, "SDCA"):
        order = rng.permutation(n).astype(np.int64)
        with timer:
            kern.sdca_pass(X, y, W, mu, lam, order, xnorm2)
        primal, dual = crf_objectives(space, X, y, W, lam, mu)
        rec = {"pass": p, "primal": primal, "dual": dual, "gap": primal - dual,
               "oracle_calls": p * n, "seconds": timer.total}
        hist.append(val_record(rec, predict, X_val, y_val, space))
        if tol is not None and primal - dual <= tol:
            break
    return SolverResult(W, mu, hist, {})
