"""Generalized BCFW for M4N (M4N Algorithm 1) with the SP-MP max-min oracle (Algorithm 2)."""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError
from structpred.features.joint import joint_map
from structpred.outputs.base import rowdot
from structpred.solvers._common import (
    PassTimer,
    SolverResult,
    check_problem,
    copy_state,
    init_dual,
    make_rng,
    progress,
    val_record,
)
from structpred.solvers.registry import kernels_for


def m4n_objectives(space, fmap, y, W, lam, mu, warm_state=None, n_iter=20):
    """M4N primal and dual estimates.

    Dual (exact): ``(1/n) sum_i min_y' phi(y')^T A mu_i + a - lam/2 ||W||^2`` (M4N (D)).
    Primal: ``(1/n) sum_i [maxmin(v_i) + a - v_i . phi(y_i)] + lam/2 ||W||^2`` where the
    max-min value (M4N eq. 14) is estimated by SP-MP with ``n_iter`` iterations started
    from ``warm_state`` (copied, not modified).  Returns ``(primal_upper, primal_lower,
    dual)``: the SP-MP upper bound makes ``primal_upper - dual`` a certified upper bound
    on the true duality gap; ``primal_lower`` uses the value of the averaged ``mu``.
    ``a = space.loss_offset`` is the constant of the affine loss (0 for Multiclass).
    """
    V = fmap.scores(W)
    warm = None if warm_state is None else (copy_state(warm_state[0]), copy_state(warm_state[1]))
    res = space.max_min(V, warm=warm, n_iter=n_iter)
    vy = rowdot(V, space.embed(y))
    a = float(space.loss_offset)
    reg = 0.5 * lam * float(np.sum(W * W))
    up = float(np.mean(res.upper - vy)) + a + reg
    lo = float(np.mean(res.value - vy)) + a + reg
    dual = float(np.mean(space.min_loss(mu))) + a - reg
    return up, lo, dual


def gbcfw(space, X, y, lam, n_passes=50, n_iter_oracle=20, warm_start=True, random_state=None,
          X_val=None, y_val=None, n_iter_eval=None, tol=None, verbose=False, warm_mix=0.1, eval_every=1) -> SolverResult:
    """Minimise ``(1/n) sum_i S_maxmin(W^T x_i, y_i) + lam/2 ||W||^2`` (M4N eq. 3, 10).

    Each step picks the next sample of a random permutation, calls SP-MP with
    ``n_iter_oracle`` iterations (warm started from that sample's previous oracle state
    when ``warm_start``), and moves the dual block with step ``2n / (t + 2n)``.

    Warm start: the state is the last SP-MP iterate pair in the log domain, mixed with the
    uniform distribution, ``z0 = (1 - warm_mix) z_last + warm_mix / k``.  Without the mix
    (``warm_mix=0``) the iterates become nearly vertices at small ``lam`` and the
    Bregman distance from the start to the new best response (which bounds the SP-MP
    gap) explodes: on letter at lam = 2^-10 the average oracle gap went from 0.32 (cold)
    to ~7 (pure warm start), versus 0.12 with ``warm_mix=0.1`` (bound ``log(k/eps)``
    on the distance to any vertex).

    History per pass: ``primal`` (SP-MP upper-bound estimate with ``n_iter_eval``
    iterations, default ``n_iter_oracle``, warm started from the oracle state),
    ``primal_lower``, ``dual`` (exact), ``gap = primal - dual`` (upper bound on the true
    gap up to the evaluation oracle's accuracy), ``oracle_gap`` = mean SP-MP duality gap
    over the pass's oracle calls (M4N Table 2 "average oracle error"),
    ``oracle_calls``, ``seconds`` (training time only).  The objectives cost about one
    extra oracle pass; ``eval_every`` evaluates (and records) only every that many passes
    and at the last one.
    """
    fmap, y, lam = check_problem(space, X, y, lam)
    n_iter_oracle = int(n_iter_oracle)
    if n_iter_oracle < 1:
        raise StructpredError(f"n_iter_oracle must be >= 1, got {n_iter_oracle}")
    n_iter_eval = n_iter_oracle if n_iter_eval is None else int(n_iter_eval)
    kern = kernels_for(space, fmap)
    A, kind, eta = space.kernel_data()
    rng = make_rng(random_state)
    n = fmap.n
    W = np.zeros(fmap.weight_shape)
    X = getattr(fmap, "X", None)
    mu = init_dual(space, y)
    LMU, LNU = space.init_maxmin_state(n)
    gaps = np.zeros(n)
    t = 0
    timer = PassTimer()
    hist = []

    def predict(Xv):
        return space.decode(joint_map(space, Xv, like=fmap).scores(W))

    for p in progress(range(1, int(n_passes) + 1), verbose, "GBCFW"):
        order = rng.permutation(n).astype(np.int64)
        with timer:
            t = kern.gbcfw_pass(X, y, A, kind, eta, W, mu, lam, order, t, n_iter_oracle,
                                bool(warm_start), LMU, LNU, gaps, float(warm_mix))
        if p % int(eval_every) != 0 and p != int(n_passes):
            continue
        up, lo, dual = m4n_objectives(space, fmap, y, W, lam, mu, (LMU, LNU), n_iter_eval)
        rec = {"pass": p, "primal": up, "primal_lower": lo, "dual": dual, "gap": up - dual,
               "oracle_gap": float(gaps.mean()), "oracle_calls": p * n, "seconds": timer.total}
        hist.append(val_record(rec, predict, X_val, y_val, space))
        if tol is not None and up - dual <= tol:
            break
    return SolverResult(W, mu, hist, {"LMU": LMU, "LNU": LNU, "oracle_gaps": gaps, "steps": t})
