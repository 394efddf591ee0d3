"""SDCA for the CRF / multinomial logistic loss (Shalev-Shwartz & Zhang 2013)."""

from __future__ import annotations

import numpy as np

from structpred.features.joint import joint_map
from structpred.solvers._common import (
    PassTimer,
    SolverResult,
    check_problem,
    init_dual,
    make_rng,
    progress,
    val_record,
)
from structpred.solvers.registry import kernels_for
from structpred.surrogates.crf import crf_loss


def crf_objectives(space, fmap, y, W, lam, mu):
    """(primal, dual) of the CRF: ``(1/n) sum S_crf(v_i, y_i) + lam/2 ||W||^2`` and
    ``(1/n) sum H(mu_i) - lam/2 ||W||^2``."""
    val, _ = crf_loss(space, fmap.scores(W), y)
    reg = 0.5 * lam * float(np.sum(W * W))
    return float(np.mean(val)) + reg, float(np.mean(space.entropy(mu))) - reg


def sdca(space, X, y, lam, n_passes=50, random_state=None, X_val=None, y_val=None,
         tol=None, verbose=False, predict=None, eval_every=1) -> SolverResult:
    """Minimise ``(1/n) sum_i [log Z(v_i) - v_i . phi(y_i)] + lam/2 ||W||^2``.

    Dual ``(1/n) sum_i H(mu_i) - lam/2 ||W(mu)||^2`` with ``W(mu) = (1/(lam n)) sum_i
    x_i (phi(y_i) - mu_i)^T``; each block is maximised exactly (a 1-D root find on
    the simplex multiplier with per-coordinate Newton, see ``_entropy_block``).
    History: primal, dual, exact gap, oracle_calls (marginal computations), seconds.
    ``predict`` maps rows to outputs for the validation loss (default Bayes decoding).
    ``eval_every``: objectives and validation loss every that many passes and at the last.
    """
    space.require_marginals()
    fmap, y, lam = check_problem(space, X, y, lam)
    kern = kernels_for(space, fmap)
    rng = make_rng(random_state)
    n = fmap.n
    W = np.zeros(fmap.weight_shape)
    mu = init_dual(space, y)
    X = getattr(fmap, "X", None)
    timer = PassTimer()
    hist = []
    if predict is None:
        def predict(Xv):
            return space.bayes_decode(space.marginals(joint_map(space, Xv, like=fmap).scores(W)))

    for p in progress(range(1, int(n_passes) + 1), verbose, "SDCA"):
        order = rng.permutation(n).astype(np.int64)
        with timer:
            kern.sdca_pass(X, y, W, mu, lam, order, getattr(fmap, "xnorm2", None))
        if p % int(eval_every) != 0 and p != int(n_passes):
            continue
        primal, dual = crf_objectives(space, fmap, y, W, lam, mu)
        rec = {"pass": p, "primal": primal, "dual": dual, "gap": primal - dual,
               "oracle_calls": p * n, "seconds": timer.total}
        hist.append(val_record(rec, predict, X_val, y_val, space))
        if tol is not None and primal - dual <= tol:
            break
    return SolverResult(W, mu, hist, {})
