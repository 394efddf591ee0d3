"""Max-min margin surrogate of M4N (eq. 10), the value of AGM's adversarial game."""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError
from structpred.outputs.base import AffineLoss, MaxMin
from structpred.outputs.batch import copy_rows, rowdot, rowsub
from structpred.surrogates.base import Surrogate


class MaxMinMargin(Surrogate):
    """``S(v, y) = max_mu min_y' phi(y')^T A mu + a + v^T (mu - phi(y))`` (M4N eq. 10).

    The inner max-min is solved by the space's SP-MP oracle with ``n_iter`` iterations;
    gradient (Danskin) ``mu* - phi(y)``.  Per training sample the oracle is warm started
    (``warm_start``) from its last pair mixed with the start state,
    ``z0 = (1 - warm_mix) z_last + warm_mix / k``: without the mix (``warm_mix=0``) the
    iterates become nearly vertices at small ``lam`` and the Bregman distance from the start
    to the next best response (which bounds the SP-MP gap) explodes (letter, lam = 2^-10:
    mean oracle gap 0.32 cold, ~7 pure warm, 0.12 with ``warm_mix=0.1``).

    State after :meth:`init_state`: ``LMU``, ``LNU`` (warm states, the space's layout) and
    ``gaps`` (the SP-MP gap of each sample's last call: M4N Table 2's "oracle error").
    ``value_grad`` starts from copies of the states (``n_iter_eval`` iterations, default
    ``n_iter``) and returns the certified upper bound of the value; :meth:`bounds` gives both.
    """

    requires = (MaxMin, AffineLoss)

    def __init__(self, space, n_iter: int = 10, warm_start: bool = True, warm_mix: float = 0.1,
                 n_iter_eval: int | None = None):
        super().__init__(space)
        self.n_iter = int(n_iter)
        if self.n_iter < 1:
            raise StructpredError(f"n_iter_oracle must be >= 1, got {n_iter}")
        self.warm_start = bool(warm_start)
        self.warm_mix = float(warm_mix)
        if not 0.0 <= self.warm_mix < 1.0:
            raise StructpredError(f"warm_mix must lie in [0, 1), got {warm_mix}")
        self.n_iter_eval = self.n_iter if n_iter_eval is None else int(n_iter_eval)
        self.LMU = self.LNU = self.gaps = None

    def init_state(self, n: int) -> None:
        self.LMU, self.LNU = self.space.init_maxmin_state(n)
        self.gaps = np.zeros(int(n))

    def oracle(self, i: int, v):
        """SP-MP on sample ``i`` from its warm state; stores the new state and gap."""
        sp = self.space
        res = sp.max_min(v, warm=(self.LMU[i], self.LNU[i]) if self.warm_start else None, n_iter=self.n_iter)
        self.gaps[i] = res.gap
        self.LMU[i], self.LNU[i] = res.state
        if self.warm_start and self.warm_mix > 0.0:
            sp.mix_warm_state(self.LMU[i], self.LNU[i], self.warm_mix)
        return res

    def sample_grad(self, i, v, y):
        return self.oracle(i, v).mu - self.space.embed(y)

    def bounds(self, v, y):
        """``(lower values, upper values, gradients)``: the values guaranteed by the averaged
        ``mu`` and by the averaged ``nu``; they differ by the oracle gap."""
        v, y = self.batch(v, y)
        sp = self.space
        warm = None if self.LMU is None else (copy_rows(self.LMU), copy_rows(self.LNU))
        res = sp.max_min(v, warm=warm, n_iter=self.n_iter_eval)
        phi_y = sp.embed(y)
        vy = rowdot(v, phi_y)
        a = sp.loss_offset
        mu = res.mu if sp.ragged else np.atleast_2d(res.mu)
        return np.atleast_1d(res.value) + a - vy, np.atleast_1d(res.upper) + a - vy, rowsub(mu, phi_y)

    def value_grad(self, v, y):
        _, upper, grad = self.bounds(v, y)
        return upper, grad
