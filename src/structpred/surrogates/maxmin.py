"""Max-min margin surrogate of M4N (eq. 10), the value of AGM's adversarial game."""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError, check_positive
from structpred.outputs.base import AffineLoss, ExactMaxMin, MaxMin, require
from structpred.outputs.batch import copy_rows, rowdot, rowsub
from structpred.surrogates.base import Surrogate

#: solvers of the inner max-min game
GAMES = ("spmp", "exact")


class MaxMinMargin(Surrogate):
    """``S(v, y) = max_mu min_y' phi(y')^T A mu + a + v^T (mu - phi(y))`` (M4N eq. 10, AGM eq. 5).

    The inner max-min is solved by the space's SP-MP oracle with ``n_iter`` iterations
    (``game="spmp"``), or exactly (``game="exact"``: AGM §3.2, the space's ``max_min_exact``
    run to a certified gap ``tol``, warm started from each sample's last multipliers, kept in
    ``multipliers``; ``n_iter``, ``n_iter_eval`` and ``warm_mix`` are SP-MP's);
    gradient (Danskin) ``mu* - phi(y)``.  Per training sample the SP-MP oracle is warm started
    (``warm_start``) from its last pair mixed with the start state,
    ``z0 = (1 - warm_mix) z_last + warm_mix / k``: without the mix (``warm_mix=0``) the
    iterates become nearly vertices at small ``lam`` and the Bregman distance from the start
    to the next best response (which bounds the SP-MP gap) explodes (letter, lam = 2^-10:
    mean oracle gap 0.32 cold, ~7 pure warm, 0.12 with ``warm_mix=0.1``).

    State after :meth:`init_state`: ``LMU``, ``LNU`` (SP-MP's warm states, the space's layout) or
    ``multipliers`` (the exact game's), and ``gaps`` (the oracle gap of each sample's last call:
    M4N Table 2's "oracle error").
    ``value_grad`` starts from copies of the states (``n_iter_eval`` iterations, default
    ``n_iter``) and returns the certified upper bound of the value; :meth:`bounds` gives both.
    """

    requires = (MaxMin, AffineLoss)

    def __init__(self, space, n_iter: int = 10, warm_start: bool = True, warm_mix: float = 0.1,
                 n_iter_eval: int | None = None, game: str = "spmp", tol: float = 1e-9):
        super().__init__(space)
        if game not in GAMES:
            raise StructpredError(f"game must be one of {', '.join(GAMES)}, got {game!r}")
        if game == "exact":
            require(space, ExactMaxMin, "MaxMinMargin(game='exact')")
        self.game = game
        self.tol = check_positive(tol, "tol")
        self.n_iter = int(n_iter)
        if self.n_iter < 1:
            raise StructpredError(f"n_iter_oracle must be >= 1, got {n_iter}")
        self.warm_start = bool(warm_start)
        self.warm_mix = float(warm_mix)
        if not 0.0 <= self.warm_mix < 1.0:
            raise StructpredError(f"warm_mix must lie in [0, 1), got {warm_mix}")
        self.n_iter_eval = self.n_iter if n_iter_eval is None else int(n_iter_eval)
        self.LMU = self.LNU = self.multipliers = self.gaps = None

    def init_state(self, n: int) -> None:
        if self.game == "exact":
            self.multipliers = [None] * int(n)
        else:
            self.LMU, self.LNU = self.space.init_maxmin_state(n)
        self.gaps = np.zeros(int(n))

    def _solve(self, v, warm, n_iter):
        """The game at scores ``v`` (one or a batch) from ``warm`` (or cold; ``n_iter``: SP-MP's)."""
        if self.game == "exact":
            return self.space.max_min_exact(v, warm=warm, tol=self.tol)
        return self.space.max_min(v, warm=warm, n_iter=n_iter)

    def oracle(self, i: int, v):
        """The game on sample ``i`` from its warm state; stores the new state and gap."""
        sp = self.space
        if self.game == "exact":
            res = self._solve(v, self.multipliers[i] if self.warm_start else None, self.n_iter)
            self.multipliers[i] = res.state
        else:
            res = self._solve(v, (self.LMU[i], self.LNU[i]) if self.warm_start else None, self.n_iter)
            self.LMU[i], self.LNU[i] = res.state
            if self.warm_start and self.warm_mix > 0.0:
                sp.mix_warm_state(self.LMU[i], self.LNU[i], self.warm_mix)
        self.gaps[i] = res.gap
        return res

    def sample_grad(self, i, v, y):
        return self.oracle(i, v).mu - self.space.embed(y)

    def bounds(self, v, y):
        """``(lower values, upper values, gradients)``: the values guaranteed by the averaged
        ``mu`` and by the averaged ``nu``; they differ by the oracle gap."""
        v, y = self.batch(v, y)
        sp = self.space
        if self.game == "exact":
            warm = None if self.multipliers is None else copy_rows(self.multipliers)
        else:
            warm = None if self.LMU is None else (copy_rows(self.LMU), copy_rows(self.LNU))
        res = self._solve(v, warm, self.n_iter_eval)
        phi_y = sp.embed(y)
        vy = rowdot(v, phi_y)
        a = sp.loss_offset
        mu = res.mu if sp.ragged else np.atleast_2d(res.mu)
        return np.atleast_1d(res.value) + a - vy, np.atleast_1d(res.upper) + a - vy, rowsub(mu, phi_y)

    def value_grad(self, v, y):
        _, upper, grad = self.bounds(v, y)
        return upper, grad
