"""AdaGrad stochastic subgradient on the primal (AGM's optimiser, Fathony et al. 2018 §3.3).

Works for any (output space, joint feature map, surrogate): per sample the surrogate's
gradient w.r.t. the score, back-propagated through the map, plus ``lam W``.
"""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError
from structpred.features.joint import joint_map
from structpred.solvers._common import (
    PassTimer,
    SolverResult,
    check_problem,
    copy_state,
    make_rng,
    progress,
    val_record,
)
from structpred.surrogates import crf_loss, hinge_loss, maxmin_loss

SURROGATES = ("maxmin", "hinge", "crf")


def adagrad(space, X, y, lam, surrogate="maxmin", n_passes=50, step=0.1, n_iter_oracle=10,
            warm_start=True, warm_mix=0.1, random_state=None, X_val=None, y_val=None, eval_every=1,
            verbose=False) -> SolverResult:
    """Minimise ``(1/n) sum_i S(v_i, y_i) + lam/2 ||W||^2`` by AdaGrad (Duchi et al. 2011).

    Step ``W <- W - step * g / sqrt(sum of past g^2)`` (per coordinate) with the stochastic
    subgradient ``g = Psi_i dS/dv_i + lam W`` of one sample in a random order per pass.
    ``surrogate``: ``"maxmin"`` (the adversarial game / M4N surrogate: ``dS/dv = mu* - phi(y)``
    from SP-MP with ``n_iter_oracle`` iterations, warm started per sample from the last pair
    mixed with the start state by ``warm_mix`` as in :func:`structpred.solvers.gbcfw`), ``"hinge"``
    (``phi(y*) - phi(y)``, loss-augmented decoding) or ``"crf"`` (``E phi - phi(y)``).
    History every ``eval_every`` passes: ``primal`` (the surrogate average plus the
    regulariser; for ``maxmin`` the SP-MP upper bound), ``oracle_calls``, ``seconds``.
    """
    if surrogate not in SURROGATES:
        raise StructpredError(f"unknown surrogate {surrogate!r}: use one of {', '.join(SURROGATES)}")
    if surrogate == "crf":
        space.require_marginals()
    if not float(step) > 0:
        raise StructpredError(f"step must be positive, got {step}")
    fmap, y, lam = check_problem(space, X, y, lam)
    rng = make_rng(random_state)
    n = fmap.n
    W = np.zeros(fmap.weight_shape)
    S = np.zeros(fmap.weight_shape)
    LMU, LNU = space.init_maxmin_state(n)
    timer = PassTimer()
    hist = []

    def grad_v(i, v):
        if surrogate == "maxmin":
            res = space.max_min(v, warm=(LMU[i], LNU[i]) if warm_start else None, n_iter=n_iter_oracle)
            LMU[i], LNU[i] = res.state
            if warm_start and warm_mix > 0.0:
                space.mix_warm_state(LMU[i], LNU[i], warm_mix)
            return res.mu - space.embed(y[i])
        if surrogate == "hinge":
            return space.embed(space.loss_augmented(v, y[i])) - space.embed(y[i])
        return space.marginals(v) - space.embed(y[i])

    def primal():
        V = fmap.scores(W)
        if surrogate == "maxmin":
            warm = (copy_state(LMU), copy_state(LNU)) if warm_start else None
            val, _ = maxmin_loss(space, V, y, n_iter=n_iter_oracle, warm=warm, bound="upper")
        else:
            val, _ = (hinge_loss if surrogate == "hinge" else crf_loss)(space, V, y)
        return float(np.mean(val)) + 0.5 * lam * float(np.sum(W * W))

    def predict(Xv):
        return space.decode(joint_map(space, Xv, like=fmap).scores(W))

    for p in progress(range(1, int(n_passes) + 1), verbose, "AdaGrad"):
        order = rng.permutation(n)
        with timer:
            for i in order:
                G = lam * W
                fmap.add(i, G, grad_v(i, fmap.score(i, W)))
                S += G * G
                W -= step * G / np.sqrt(np.where(S > 0, S, 1.0))
        if p % int(eval_every) != 0 and p != int(n_passes):
            continue
        rec = {"pass": p, "primal": primal(), "oracle_calls": p * n, "seconds": timer.total}
        hist.append(val_record(rec, predict, X_val, y_val, space))
    return SolverResult(W, None, hist, {"LMU": LMU, "LNU": LNU})
