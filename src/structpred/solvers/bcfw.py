"""Block-coordinate Frank-Wolfe for M3N (Lacoste-Julien et al. 2013, Algorithm 4).

Dual blocks ``mu_i`` (rows of an ``(n, k)`` array) instead of per-sample weight
matrices: ``W_i = x_i (phi(y_i) - mu_i)^T / (lam n)`` is reconstructed on the fly, so
memory is ``O(nk + dk)``.  Exact line search; optional weighted averaging
(``rho_t = 2 / (t + 2)``).
"""

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
from structpred.surrogates.hinge import hinge_loss


def m3n_objectives(space, fmap, y, W, lam, ell):
    """(primal, dual) of M3N for weights W and linear dual term ``ell`` (``fmap``: the joint
    feature map of the training inputs)."""
    h, _ = hinge_loss(space, fmap.scores(W), y)
    reg = 0.5 * lam * float(np.sum(W * W))
    return float(np.mean(h)) + reg, float(ell) - reg


def bcfw(space, X, y, lam, n_passes=50, averaging=False, random_state=None,
         X_val=None, y_val=None, tol=None, verbose=False, eval_every=1) -> SolverResult:
    """Minimise ``(1/n) sum_i max_y' [L(y_i,y') + <v_i, phi(y') - phi(y_i)>] + lam/2 ||W||^2``.

    ``v_i = W^T x_i``.  Per pass the history records the primal, the dual
    ``(1/n) sum_i [phi(y_i)^T A mu_i + a] - lam/2 ||W||^2`` (``a = space.loss_offset``) and
    their difference, the exact
    duality gap (equal to the sum of the per-sample block gaps at the end-of-pass
    weights).  With ``averaging`` the reported W / objectives are those of the averaged
    iterate.  Stops early when ``gap <= tol``.  ``seconds`` is cumulative training time
    (objective evaluation excluded).  ``eval_every``: objectives (and the validation loss)
    are evaluated and recorded every that many passes and at the last one (``tol`` is
    checked then); training is the same either way.
    """
    fmap, y, lam = check_problem(space, X, y, lam)
    kern = kernels_for(space, fmap)
    A = space.kernel_data()[0]
    rng = make_rng(random_state)
    n = fmap.n
    W = np.zeros(fmap.weight_shape)
    W_avg = np.zeros(fmap.weight_shape) if averaging else np.zeros((1, 1))
    mu = init_dual(space, y)
    # ell = (1/n) sum_i L(y_i, mu_i) (affine loss incl. its constant); mu_i = phi(y_i) here
    ell = np.array([float(np.mean(space.loss(y, y)))])
    ell_avg = ell.copy()
    X = getattr(fmap, "X", None)
    t = 0
    timer = PassTimer()
    hist = []

    def predict(Xv):
        return space.decode(joint_map(space, Xv, like=fmap).scores(W_avg if averaging else W))

    for p in progress(range(1, int(n_passes) + 1), verbose, "BCFW"):
        order = rng.permutation(n).astype(np.int64)
        with timer:
            t = kern.bcfw_pass(X, y, A, W, mu, lam, order, getattr(fmap, "xnorm2", None), t, bool(averaging), W_avg, ell, ell_avg)
        if p % int(eval_every) != 0 and p != int(n_passes):
            continue
        Wr, er = (W_avg, ell_avg[0]) if averaging else (W, ell[0])
        primal, dual = m3n_objectives(space, fmap, y, Wr, lam, er)
        rec = {"pass": p, "primal": primal, "dual": dual, "gap": primal - dual,
               "oracle_calls": p * n, "seconds": timer.total}
        hist.append(val_record(rec, predict, X_val, y_val, space))
        if tol is not None and primal - dual <= tol:
            break
    return SolverResult(W_avg.copy() if averaging else W, mu, hist, {"W_last": W, "steps": t})
