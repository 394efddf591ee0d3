"""Generic (Python-level) per-pass loops of the dual block solvers: the fallback.

Used for every (output space, joint map) pair whose space offers no compiled oracles for the
pass (``OutputSpace.compiled_oracles`` returns ``None``, or oracles that do not serve it).
Each step calls the space's public oracles on one sample (``loss_augmented``, ``embed``,
``loss``, ``linear_loss`` for BCFW; the max-min surrogate's warm-started oracle for GBCFW;
``marginals`` and ``entropy_coefficients`` for SDCA) and the map's ``score`` / ``add`` /
``norm2`` (:mod:`structpred.features.joint`).  The compiled passes
(:class:`~structpred.solvers._compiled_passes.CompiledPasses`) have the same methods, so the
step rules call either without knowing which.  A space whose dual blocks are not rows of one
array (a chain's) may still compile BCFW's Frank-Wolfe corner and move (``corner`` /
``toward``), which this loop then calls.
"""

from __future__ import annotations

import numpy as np

from structpred.outputs._entropy_step import entropy_segment_step
from structpred.solvers import _dense
from structpred.solvers._compiled_passes import _average, average_weights
from structpred.solvers.line_search import envelope_step


def _key(output) -> bytes:
    """A hashable key of one output (a label, a label sequence, a permutation)."""
    return np.ascontiguousarray(output).tobytes()


#: the per-pass loops of the dual solvers
DUAL_LOOPS = ("bcfw_pass", "bcfw_pairwise_pass", "gbcfw_pass", "sdca_pass")


class GenericKernels:
    """Per-pass loops over samples calling the oracles of ``space`` through the map ``fmap``
    (labels ``y``) for the problem's regularisation ``lam`` (:meth:`Problem.pass_kernels
    <structpred.solvers.problem.Problem.pass_kernels>` builds them: the rules never relay ``lam``);
    each loop that ``compiled`` (the space's compiled passes) serves, for the
    max-min ``surrogate`` where the loop calls its oracle, replaces the generic one, and so do its
    ``corner`` / ``toward`` (BCFW's step on one block)."""

    def __init__(self, space, fmap, y, lam: float, compiled=None, surrogate=None):
        self.space = space
        self.fmap = fmap
        self.y = y
        self.lam = lam
        self.active = None  # per-block active sets of the pairwise steps (created on first use)
        for name in DUAL_LOOPS:
            if compiled is not None and compiled.serves(name, surrogate):
                setattr(self, name, getattr(compiled, name))
        for name in ("corner", "toward"):
            if hasattr(compiled, name):
                setattr(self, name, getattr(compiled, name))

    def corner(self, i, W, mu_i):
        """Block ``i``'s Frank-Wolfe corner at ``W``: ``(v, dvec, L(y_i, s), L(y_i, mu_i),
        ||Psi_i dvec||^2)`` with ``v = Psi_i^T W``, ``s`` the loss-augmented output and ``dvec =
        phi(s) - mu_i`` (affine loss, constant included)."""
        sp, fm, y = self.space, self.fmap, self.y
        v = fm.score(i, W)
        s = sp.loss_augmented(v, y[i])
        dvec = sp.embed(s) - mu_i
        l_s = float(sp.loss(y[i], s))
        l_mu = float(sp.linear_loss(y[i], mu_i)[0]) + float(sp.loss_offset)
        return v, dvec, l_s, l_mu, fm.norm2(i, dvec)

    def toward(self, i, W, mu_i, dvec, gamma, scale, t, W_avg) -> None:
        """With ``gamma > 0``, ``W += Psi_i (-gamma scale) dvec`` and ``mu_i += gamma dvec``; then,
        with ``t >= 0``, BCFW's weighted average ``W_avg <- (1 - rho) W_avg + rho W``, ``rho = 2 / (t + 2)``."""
        if gamma > 0.0:
            self.fmap.add(i, W, (-gamma * scale) * dvec)
            mu_i += gamma * dvec
        if t >= 0:
            rho = 2.0 / (t + 2.0)
            _dense.mix(W_avg, 1.0 - rho, W, rho)

    def bcfw_pass(self, W, mu, order, t0, averaging, W_avg, ell, ell_avg, gaps, fixed=False):
        """One BCFW pass (Lacoste-Julien et al. 2013, Alg. 4) with exact line search at each
        block's Frank-Wolfe corner (:meth:`corner`), or with ``fixed`` the step ``2n / (t + 2n)``
        (Alg. 3); same contract as the compiled ``bcfw_pass``:
        ``ell[0]`` tracks ``(1/n) sum_i L(y_i, mu_i)`` (affine loss, constant included),
        ``gaps[i]`` receives block i's gap at its visit."""
        n, lam = self.fmap.n, self.lam
        scale = 1.0 / (lam * n)
        t = t0
        for i in order:
            v, dvec, l_s, l_mu, denom = self.corner(i, W, mu[i])
            # block gap * n: <v, phi(s) - mu_i> + L(y_i, s) - L(y_i, mu_i)
            g = float(v @ dvec) + l_s - l_mu
            gaps[i] = g / n
            if fixed:
                gamma = 2.0 * n / (t + 2.0 * n)
            else:
                gamma = 0.0 if (denom <= 0.0 or g <= 0.0) else min(lam * n * g / denom, 1.0)
            self.toward(i, W, mu[i], dvec, gamma, scale, t if averaging else -1, W_avg)
            if gamma > 0.0:
                ell[0] += gamma * (l_s - l_mu) / n
            if averaging:
                rho = 2.0 / (t + 2.0)
                ell_avg[0] = (1.0 - rho) * ell_avg[0] + rho * ell[0]
            t += 1
        return t

    def bcfw_pairwise_pass(self, W, mu, order, t0, averaging, W_avg, ell, ell_avg, gaps, block_steps):
        """One BCFW pass with pairwise steps over each block's active set (Lacoste-Julien &
        Jaggi 2015; Osokin et al. 2016).

        Block i's dual ``mu_i = sum_c w_c phi(c)`` is kept as its active set: outputs ``c``
        with weights ``w_c > 0`` (``{y_i: 1}`` at the start, as :meth:`Problem.init_dual`).  A
        visit calls the oracle once: the Frank-Wolfe corner ``s``, joined to the set; then up
        to ``block_steps`` pairwise steps, each moving ``gamma = min(lam n g / ||Psi_i (phi(s)
        - phi(a))||^2, w_a)`` from the away corner ``a`` (lowest ``<v, phi(c)> + L(y_i, c)``
        over the set) to the best corner ``s`` (the oracle's answer at the first step, the
        set's best at the scores recomputed after each step: the cached answers).  Each step is
        the exact maximiser of the dual on its segment, so ``mu_i`` stays in the polytope."""
        sp, fm, y, lam = self.space, self.fmap, self.y, self.lam
        n = fm.n
        scale = 1.0 / (lam * n)
        if self.active is None:
            self.active = [None] * n
        t = t0
        for i in order:
            act = self.active[i]
            if act is None:
                act = self.active[i] = {_key(y[i]): [y[i], sp.embed(y[i]), float(sp.loss(y[i], y[i])), 1.0]}
            v = fm.score(i, W)
            s = sp.loss_augmented(v, y[i])
            phi_s = sp.embed(s)
            l_s = float(sp.loss(y[i], s))
            l_mu = float(sp.linear_loss(y[i], mu[i])[0]) + float(sp.loss_offset)
            gaps[i] = (float(v @ (phi_s - mu[i])) + l_s - l_mu) / n
            best = act.setdefault(_key(s), [s, phi_s, l_s, 0.0])
            for r in range(block_steps):
                if r > 0:
                    v = fm.score(i, W)
                    best = max(act.values(), key=lambda c: float(v @ c[1]) + c[2])
                away = min((c for c in act.values() if c[3] > 0.0), key=lambda c: float(v @ c[1]) + c[2])
                g = float(v @ (best[1] - away[1])) + best[2] - away[2]
                dvec = best[1] - away[1]
                denom = fm.norm2(i, dvec) if away is not best and g > 0.0 else 0.0
                if denom <= 0.0:
                    break
                gamma = min(lam * n * g / denom, away[3])
                fm.add(i, W, (-gamma * scale) * dvec)
                mu[i] += gamma * dvec
                ell[0] += gamma * (best[2] - away[2]) / n
                best[3] += gamma
                away[3] = 0.0 if gamma == away[3] else away[3] - gamma
            for key in [key for key, c in act.items() if c[3] <= 0.0]:
                del act[key]
            if averaging:
                _average(t, W, W_avg, ell, ell_avg)
            t += 1
        return t

    def gbcfw_pass(self, W, mu, order, t0, surrogate, line_search, gaps, W_avg=None):
        """One GBCFW pass (M4N Algorithm 1, step ``2n / (t + 2n)``, or with ``line_search`` the
        dual's maximiser on the segment, :func:`envelope_step`) with the max-min surrogate's
        warm-started oracle (:meth:`MaxMinMargin.oracle`); ``gaps[i]`` receives block i's
        Frank-Wolfe gap ``(value(s) - min_loss(mu_i) - <v, mu_i>) / n``; with ``W_avg``, the
        weighted average of the iterates is kept there (:func:`average_weights`)."""
        sp, fm = self.space, self.fmap
        n = fm.n
        scale = 1.0 / (self.lam * n)
        t = t0
        for i in order:
            v = fm.score(i, W)
            res = surrogate.oracle(i, v)
            gaps[i] = (float(res.value) - float(np.atleast_1d(sp.min_loss(mu[i]))[0]) - float(v @ mu[i])) / n
            if line_search:
                d = res.mu - mu[i]
                p, q, starts = sp.min_loss_lines(mu[i], d)
                gamma = envelope_step(p, q, starts, float(v @ d), fm.norm2(i, d) * scale)
            else:
                gamma = 2.0 * n / (t + 2.0 * n)
            fm.add(i, W, (gamma * scale) * (mu[i] - res.mu))
            mu[i] *= 1.0 - gamma
            mu[i] += gamma * res.mu
            if W_avg is not None:
                average_weights(t, W, W_avg)
            t += 1
        return t

    def sdca_pass(self, W, mu, order):
        """One SDCA pass for the CRF with the step of Le Priol et al. (2018): move the dual
        block towards the marginals of the current score, ``mu_i + g (q_i - mu_i)``, with
        ``g`` maximising the dual ``(1/n) sum H(mu_i) - lam/2 ||W||^2`` on the segment."""
        sp, fm = self.space, self.fmap
        n = fm.n
        scale = 1.0 / (self.lam * n)
        for i in order:
            v = fm.score(i, W)
            d = sp.marginals(v) - mu[i]
            # dual along the segment: H(mu + g d)/n + g <v, d>/n - g^2 ||Psi d||^2 / (2 lam n^2)
            b = fm.norm2(i, d) * scale
            g = entropy_segment_step(mu[i], d, sp.entropy_coefficients(mu[i]), float(v @ d), b)
            if g > 0.0:
                fm.add(i, W, (-g * scale) * d)
                mu[i] += g * d
