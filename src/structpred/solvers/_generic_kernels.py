"""Generic (Python-level) per-pass loops of the dual block solvers.

Used for output spaces without dedicated numba pass kernels, e.g. :class:`Permutation`,
whose Hungarian step (scipy) cannot run inside numba.  Each step calls the space's
public oracles on one sample (``loss_augmented``, ``embed``, ``loss``, ``linear_loss``
for BCFW; ``max_min`` with its warm-start state for GBCFW); only the score and the
rank-one weight update reuse the (space-agnostic) numba helpers.  The methods have the
signatures of the numba pass kernels (see :mod:`structpred.solvers._multiclass_kernels`)
so the drivers in ``bcfw.py`` / ``gbcfw.py`` call either without knowing which; the
``A`` / ``kind`` / ``eta`` arguments are ignored (the space carries its own data).

Any future space (Chain, Tree...) that implements those oracles works here unchanged;
a numba pass kernel is an optimisation registered in :mod:`structpred.solvers.registry`.
"""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError
from structpred.solvers._multiclass_kernels import _rank1, _scores


class GenericKernels:
    """Per-pass loops over samples calling the oracles of ``space``."""

    def __init__(self, space):
        self.space = space

    def bcfw_pass(self, X, y, A, W, mu, lam, order, xnorm2, t0, averaging, W_avg, ell, ell_avg):
        """One BCFW pass (Lacoste-Julien et al. 2013, Alg. 4) with exact line search; same
        contract as the numba ``bcfw_pass``: ``ell[0]`` tracks ``(1/n) sum_i L(y_i, mu_i)``
        (affine loss, constant included)."""
        sp = self.space
        n = X.shape[0]
        k = W.shape[1]
        a = float(sp.loss_offset)
        v = np.empty(k)
        scale = 1.0 / (lam * n)
        t = t0
        for i in order:
            _scores(X, i, W, v)
            s = sp.loss_augmented(v, y[i])
            dvec = sp.embed(s) - mu[i]
            l_s = float(sp.loss(y[i], s))
            l_mu = float(sp.linear_loss(y[i], mu[i])[0]) + a
            # block gap * n: <v, phi(s) - mu_i> + L(y_i, s) - L(y_i, mu_i)
            g = float(v @ dvec) + l_s - l_mu
            denom = xnorm2[i] * float(dvec @ dvec)
            gamma = 0.0 if (denom <= 0.0 or g <= 0.0) else min(lam * n * g / denom, 1.0)
            if gamma > 0.0:
                _rank1(X, i, W, (-gamma * scale) * dvec)
                ell[0] += gamma * (l_s - l_mu) / n
                mu[i] += gamma * dvec
            if averaging:
                rho = 2.0 / (t + 2.0)
                W_avg *= 1.0 - rho
                W_avg += rho * W
                ell_avg[0] = (1.0 - rho) * ell_avg[0] + rho * ell[0]
            t += 1
        return t

    def gbcfw_pass(self, X, y, A, kind, eta, W, mu, lam, order, t0, n_iter, warm, LMU, LNU, gaps, warm_mix):
        """One GBCFW pass (M4N Algorithm 1, step ``2n / (t + 2n)``) with the space's
        ``max_min`` oracle warm started from the per-sample state rows ``LMU[i]``,
        ``LNU[i]`` (layout of ``space.init_maxmin_state``); same contract as the numba
        ``gbcfw_pass``."""
        sp = self.space
        n = X.shape[0]
        k = W.shape[1]
        v = np.empty(k)
        scale = 1.0 / (lam * n)
        s0_mu, s0_nu = sp.init_maxmin_state(1)
        t = t0
        for i in order:
            _scores(X, i, W, v)
            if not warm:
                LMU[i] = s0_mu[0]
                LNU[i] = s0_nu[0]
            res = sp.max_min(v, warm=(LMU[i], LNU[i]), n_iter=n_iter)
            gaps[i] = res.gap
            LMU[i] = res.state[0]
            LNU[i] = res.state[1]
            if warm and warm_mix > 0.0:
                sp.mix_warm_state(LMU[i], LNU[i], warm_mix)
            gamma = 2.0 * n / (t + 2.0 * n)
            _rank1(X, i, W, (gamma * scale) * (mu[i] - res.mu))
            mu[i] *= 1.0 - gamma
            mu[i] += gamma * res.mu
            t += 1
        return t

    def sdca_pass(self, X, y, W, mu, lam, order, xnorm2):
        self.space.require_marginals()
        raise StructpredError(f"SDCA has no pass loop for output space {type(self.space).__name__}")
