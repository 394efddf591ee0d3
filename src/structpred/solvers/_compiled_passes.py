"""The step rules' compiled passes, each written once over the compiled oracle protocol.

A pass takes the bundle ``b`` of a space's compiled oracles (:mod:`structpred.outputs.compiled`)
and calls them per sample; numba compiles (and caches) it once per bundle class.  The rules'
math lives here: BCFW's Frank-Wolfe and pairwise steps with their exact line searches and
averaging, GBCFW's step (``2n / (t + 2n)`` or the envelope line search), SDCA's block step,
SGD's decaying step with weighted averaging, SVRG's variance-reduced step.  The dual passes keep
the blocks as rows of a dense ``(n, k)`` array of simplex weights over the space's corners.
:class:`CompiledPasses` binds them to a space's oracles object with the signatures of the
generic loop (:class:`structpred.solvers._generic_kernels.GenericKernels`), so the rules call
either without knowing which.
"""

from __future__ import annotations

from functools import partial

import numpy as np
from numba import njit
from numba.extending import overload

from structpred.errors import StructpredError
from structpred.outputs import compiled as C
from structpred.solvers.line_search import envelope_step


@njit(cache=True)
def average_weights(t, W, W_avg):
    """The weighted average ``W_avg <- (1 - rho_t) W_avg + rho_t W``, ``rho_t = 2 / (t + 2)``
    (Lacoste-Julien et al. 2013; the M4N authors' code averages GBCFW's iterates the same way)."""
    rho = 2.0 / (t + 2.0)
    Wf = W.reshape(W.size)
    Wa = W_avg.reshape(W_avg.size)
    for j in range(Wf.size):
        Wa[j] = (1.0 - rho) * Wa[j] + rho * Wf[j]


@njit(cache=True)
def _average(t, W, W_avg, ell, ell_avg):
    """BCFW's weighted averages ``rho_t = 2 / (t + 2)`` of the weights and the dual's loss term."""
    average_weights(t, W, W_avg)
    rho = 2.0 / (t + 2.0)
    ell_avg[0] = (1.0 - rho) * ell_avg[0] + rho * ell[0]


@njit(cache=True)
def bcfw_move(b, i, W, mu_i, dvec, gamma, scale, t, W_avg):
    """BCFW's move on block ``i`` for the generic loop (``GenericKernels.toward``): with ``gamma >
    0``, ``W += Psi_i (-gamma scale) dvec`` and ``mu_i += gamma dvec``; then, with ``t >= 0``, the
    weighted average ``W_avg <- (1 - rho) W_avg + rho W``, ``rho = 2 / (t + 2)``."""
    d = mu_i.shape[0]
    if gamma > 0.0:
        c = np.empty(d)
        f = -gamma * scale
        for m in range(d):
            c[m] = f * dvec[m]
        C.add(b, i, W, c)
        for m in range(d):
            mu_i[m] += gamma * dvec[m]
    if t >= 0:
        average_weights(t, W, W_avg)


@njit(cache=True)
def _frank_wolfe_step(b, i, W, mu, lam, v, s, ell, coef, gaps, fixed, t):
    """BCFW's step on block ``i`` towards corner ``s`` with exact line search
    ``gamma = min(lam n g / ||Psi_i (phi(s) - mu_i)||^2, 1)`` (Lacoste-Julien et al. 2013, Alg. 4),
    or with ``fixed`` the step ``2n / (t + 2n)`` of step ``t`` (Alg. 3, as the M4N authors' runs)."""
    n = C.n_blocks(b)
    m = C.block(b, mu, i)
    g, dl, denom = C.corner(b, i, v, s, m)
    gaps[i] = g / n
    if fixed:
        gamma = 2.0 * n / (t + 2.0 * n)
    elif denom <= 0.0 or g <= 0.0:
        gamma = 0.0
    else:
        gamma = lam * n * g / denom
        gamma = min(gamma, 1.0)
    if gamma > 0.0:
        C.toward(b, i, W, m, s, gamma, 1.0 / (lam * n), coef)
        ell[0] += gamma * dl / n


def _pairwise_steps(b, i, W, mu, lam, v, s, ell, coef, gaps, block_steps, val):
    """Up to ``block_steps`` pairwise steps on block ``i`` (see :func:`bcfw_pass`); ``val``: work.
    Dense ``(n, k)`` blocks only: for a flat array of ragged blocks it compiles to an error, so
    that :func:`bcfw_pass` compiles for both (``CompiledPasses`` offers the pairwise pass only
    where the space's oracles serve it)."""
    raise NotImplementedError("_pairwise_steps is compiled: call it from numba code")


def _pairwise_dense(b, i, W, mu, lam, v, s, ell, coef, gaps, block_steps, val):
    n, k = mu.shape
    scale = 1.0 / (lam * n)
    C.corner_values(b, i, v, val)
    dual = 0.0
    for j in range(k):
        dual += mu[i, j] * val[j]
        coef[j] = 0.0
    gaps[i] = (val[s] - dual) / n
    moved = False
    for r in range(block_steps):
        if r > 0:
            s = C.loss_augmented(b, i, v)
            C.corner_values(b, i, v, val)
        a = -1
        low = 0.0
        for j in range(k):
            if mu[i, j] > 0.0:
                if a < 0 or val[j] < low:
                    a = j
                    low = val[j]
        g = val[s] - low
        denom = C.pair_norm2(b, i)
        if a == s or g <= 0.0 or denom <= 0.0:
            break
        gamma = min(lam * n * g / denom, mu[i, a])
        mu[i, s] += gamma
        mu[i, a] = 0.0 if gamma == mu[i, a] else mu[i, a] - gamma
        coef[s] -= gamma * scale
        coef[a] += gamma * scale
        C.pair_scores(b, i, v, s, a, gamma * scale)
        ell[0] += gamma * (C.corner_loss(b, i, s) - C.corner_loss(b, i, a)) / n
        moved = True
    if moved:
        C.add(b, i, W, coef)


def _pairwise_ragged(b, i, W, mu, lam, v, s, ell, coef, gaps, block_steps, val):
    raise ValueError("pairwise BCFW steps need dense (n, k) dual blocks")


@overload(_pairwise_steps)
def _pairwise_typed(b, i, W, mu, lam, v, s, ell, coef, gaps, block_steps, val):
    return _pairwise_dense if mu.ndim == 2 else _pairwise_ragged


@njit(cache=True)
def bcfw_pass(b, W, mu, lam, order, t0, averaging, W_avg, ell, ell_avg, gaps, pairwise, block_steps, fixed):
    """One pass of BCFW for M3N with exact line search (Lacoste-Julien et al. 2013, Alg. 4) or the
    fixed step ``2n / (t + 2n)`` (``fixed``, Alg. 3), or with pairwise steps (Lacoste-Julien &
    Jaggi 2015; Osokin et al. 2016).

    ``ell[0]`` holds ``l = (1/n) sum_i L(y_i, mu_i)`` (the linear dual term), updated in place;
    with ``averaging`` the weighted averages (``rho_t = 2/(t+2)``) of ``W`` and ``l`` are kept in
    ``W_avg`` / ``ell_avg[0]``; ``gaps[i]`` receives the block's Frank-Wolfe gap at the visit
    (before its steps), which gap sampling draws by.

    Pairwise: at block ``i`` with scores ``v``, the Frank-Wolfe corner ``s = argmax_c L(y_i, c) +
    v_c`` and the away corner ``a = argmin_{c: mu_ic > 0} L(y_i, c) + v_c`` (the block's active
    set is the support of ``mu_i``); the step moves mass ``gamma`` from ``a`` to ``s``,
    ``gamma = min(lam n g_pw / ||Psi_i (e_s - e_a)||^2, mu_ia)``, the exact maximiser of the dual
    on the segment.  Up to ``block_steps`` pairwise steps are taken per visit on the scores
    updated in place (``pair_scores``), and ``W`` is updated once (pairwise: dense ``(n, k)``
    blocks only; the Frank-Wolfe step takes ``block(b, mu, i)``, a chain's too).  Returns the new
    step counter.
    """
    k = C.block_size(b)
    v = np.empty(k)
    coef = np.empty(k)
    val = np.empty(k)
    t = t0
    for p in range(order.shape[0]):
        i = order[p]
        C.scores(b, i, W, v)
        s = C.loss_augmented(b, i, v)
        if pairwise:
            _pairwise_steps(b, i, W, mu, lam, v, s, ell, coef, gaps, block_steps, val)
        else:
            _frank_wolfe_step(b, i, W, mu, lam, v, s, ell, coef, gaps, fixed, t)
        if averaging:
            _average(t, W, W_avg, ell, ell_avg)
        t += 1
    return t


@njit(cache=True)
def gbcfw_pass(b, game, W, mu, lam, order, t0, line_search, block_gaps, averaging, W_avg):
    """One pass of GBCFW for M4N (M4N Algorithm 1, step ``2n / (t + 2n)``, or with
    ``line_search`` the dual's maximiser on the segment: :func:`envelope_step` on the lines
    ``A mu_i + g A (s - mu_i)``, ``g0 = v.(s - mu_i)``, ``curv = ||Psi_i (s - mu_i)||^2 / (lam n)``).

    The max-min oracle (``maxmin``, its settings and state in ``game``) gives the corner ``s``
    and its value ``lo``; ``block_gaps[i]`` receives block ``i``'s Frank-Wolfe gap
    ``(lo - h(mu_i) - v.mu_i) / n``, ``h`` the sum of the minima of its min-loss line groups.
    Sample ``i``'s block is ``block(b, mu, i)`` (a row of ``mu``, or a slice of a flat ``mu``
    for ragged spaces).  With ``averaging``, ``W_avg`` keeps the weighted average of the
    iterates (:func:`average_weights`).  Returns the new step counter.
    """
    n = block_gaps.shape[0]
    kmax = C.block_size(b)
    v = np.empty(kmax)
    coef = np.empty(kmax)
    mubar = np.empty(kmax)
    dvec = np.empty(kmax)
    pl = np.empty(kmax)
    ql = np.empty(kmax)
    starts = np.empty(kmax + 1, dtype=np.int64)
    scale = 1.0 / (lam * n)
    t = t0
    for p in range(order.shape[0]):
        i = order[p]
        m = C.block(b, mu, i)
        k = m.shape[0]
        vi = v[:k]
        C.scores(b, i, W, vi)
        lo = C.maxmin(b, game, i, vi, mubar[:k])
        nb = C.lines(b, i, m, pl, starts)
        h = 0.0
        for g in range(nb):
            low = pl[starts[g]]
            for j in range(starts[g] + 1, starts[g + 1]):
                low = min(low, pl[j])
            h += low
        vmu = 0.0
        for j in range(k):
            vmu += v[j] * m[j]
        block_gaps[i] = (lo - h - vmu) / n
        if line_search:
            g0 = 0.0
            for j in range(k):
                dvec[j] = mubar[j] - m[j]
                g0 += v[j] * dvec[j]
            C.lines(b, i, dvec[:k], ql, starts)
            nl = starts[nb]
            gamma = envelope_step(pl[:nl], ql[:nl], starts[: nb + 1], g0, C.norm2(b, i, dvec[:k]) * scale)
        else:
            gamma = 2.0 * n / (t + 2.0 * n)
        for j in range(k):
            coef[j] = gamma * scale * (m[j] - mubar[j])
        C.add(b, i, W, coef[:k])
        for j in range(k):
            m[j] = (1.0 - gamma) * m[j] + gamma * mubar[j]
        if averaging:
            average_weights(t, W, W_avg)
        t += 1
    return t


@njit(cache=True)
def sdca_pass(b, W, mu, lam, order):
    """One pass of SDCA for the CRF (Shalev-Shwartz & Zhang 2013, exact block maximisation).

    Dual: ``D(mu) = (1/n) sum_i H(mu_i) - lam/2 ||W(mu)||^2`` with Shannon entropy ``H`` (the
    conjugate of log-sum-exp); each block ``block(b, mu, i)`` moves to ``entropy_block``'s point
    (the exact block maximiser on the simplex; a chain's marginals: the dual's maximiser on the
    segment towards the marginals of its scores, Le Priol et al. 2018)."""
    n = C.n_blocks(b)
    kmax = C.block_size(b)
    v = np.empty(kmax)
    coef = np.empty(kmax)
    new = np.empty(kmax)
    work = np.empty(kmax)
    scale = 1.0 / (lam * n)
    for p in range(order.shape[0]):
        i = order[p]
        m = C.block(b, mu, i)
        k = m.shape[0]
        C.scores(b, i, W, v[:k])
        C.entropy_block(b, i, v[:k], m, scale, new[:k], work[:k])
        for j in range(k):
            coef[j] = scale * (m[j] - new[j])
            m[j] = new[j]
        C.add(b, i, W, coef[:k])


@njit(cache=True)
def sgd_pass(b, W, W_avg, order, t, eta0, t0, lam):
    """SGD steps (``structpred.solvers.SGD.step``: ``W <- (1 - eta_t lam) W - eta_t Psi_i g_i(W)``,
    ``eta_t = eta0 / (1 + t / t0)``, then ``W_avg <- t/(t+2) W_avg + 2/(t+2) W``) for the samples
    in ``order`` from step ``t``; returns the new ``t`` (``-1``: non-finite scores)."""
    g = np.empty(C.grad_size(b))
    c = np.empty(g.shape[0])
    ws = C.workspace(b)
    Wf = W.reshape(W.size)
    Wa = W_avg.reshape(W_avg.size)
    for p in range(order.shape[0]):
        i = order[p]
        d = C.grad(b, i, W, g, ws)
        if d < 0:
            return -1
        eta = eta0 / (1.0 + t / t0)
        rho = 1.0 - eta * lam
        for j in range(Wf.shape[0]):
            Wf[j] *= rho
        for m in range(d):
            c[m] = -eta * g[m]
        C.add(b, i, W, c[:d])
        wa = t / (t + 2.0)
        wb = 2.0 / (t + 2.0)
        for j in range(Wf.shape[0]):
            Wa[j] = wa * Wa[j] + wb * Wf[j]
        t += 1
    return t


@njit(cache=True)
def anchor(b, n, Z, G, answers):
    """``G += sum_i Psi_i g_i(Z)`` (the SVRG full gradient, samples in order) keeping the
    oracle's answers at ``Z`` in ``answers``; returns ``False`` on non-finite scores."""
    g = np.empty(C.grad_size(b))
    ws = C.workspace(b)
    for i in range(n):
        d = C.grad_kept(b, i, Z, g, ws, answers)
        if d < 0:
            return False
        C.add(b, i, G, g[:d])
    return True


@njit(cache=True)
def svrg_pass(b, W, D, inner_sum, rho, beta, order, answers):
    """SVRG steps (``structpred.solvers.SVRG.step``: ``W <- rho W + beta D + Psi_i beta (g_i(W) -
    g_i(Z))``, then ``inner_sum += W``) with ``g_i(Z)`` from the anchor's answers; the sum of a
    step's iterate is added in the next step's dense loop (the same additions in the same
    order).  Returns ``False`` on non-finite scores."""
    g = np.empty(C.grad_size(b))
    gz = np.empty(g.shape[0])
    ws = C.workspace(b)
    Wf = W.reshape(W.size)
    Df = D.reshape(D.size)
    S = inner_sum.reshape(inner_sum.size)
    pending = False
    for p in range(order.shape[0]):
        i = order[p]
        d = C.grad(b, i, W, g, ws)
        if d < 0:
            return False
        C.kept_grad(b, i, answers, gz)
        for m in range(d):
            g[m] = beta * (g[m] - gz[m])
        if pending:
            for j in range(Wf.shape[0]):
                S[j] = 1.0 * S[j] + 1.0 * Wf[j]
                Wf[j] = rho * Wf[j] + beta * Df[j]
        else:
            for j in range(Wf.shape[0]):
                Wf[j] = rho * Wf[j] + beta * Df[j]
        C.add(b, i, W, g[:d])
        pending = True
    if pending:
        for j in range(Wf.shape[0]):
            S[j] = 1.0 * S[j] + 1.0 * Wf[j]
    return True


class CompiledPasses:
    """The passes above bound to a space's compiled oracles (``space.compiled_oracles``) and the
    problem's regularisation ``lam`` (:attr:`Problem.compiled <structpred.solvers.problem.Problem.compiled>`
    builds them), with the signatures of :class:`~structpred.solvers._generic_kernels.GenericKernels`; only the passes
    its oracles serve (``oracles.passes``) are set, with its ``evaluate``; a space whose oracles
    give BCFW's Frank-Wolfe ``corner`` (for the generic BCFW loop, its blocks not being rows of
    one array) gets the compiled move ``toward`` on its ``add`` too."""

    def __init__(self, oracles, lam: float):
        self.space_oracles = oracles
        self.lam = lam
        #: the surrogate oracles (``pass_oracle()`` names) whose primal passes are compiled
        self.oracles = oracles.oracles
        for name in oracles.passes:
            setattr(self, name, getattr(self, "_" + name))
        if hasattr(oracles, "evaluate"):
            self.evaluate = oracles.evaluate
        if hasattr(oracles, "corner"):
            self.corner = oracles.corner
            self.toward = partial(bcfw_move, oracles.bundle(("loss_augmented", ())))

    def _bcfw_pass(self, W, mu, order, t0, averaging, W_avg, ell, ell_avg, gaps, fixed=False):
        o = self.space_oracles
        return bcfw_pass(o.bundle(None), W, o.dual_array(mu), self.lam, order, t0, averaging, W_avg, ell, ell_avg, gaps,
                         False, 1, fixed)

    def _bcfw_pairwise_pass(self, W, mu, order, t0, averaging, W_avg, ell, ell_avg, gaps, block_steps):
        return bcfw_pass(self.space_oracles.bundle(None), W, mu, self.lam, order, t0, averaging, W_avg, ell, ell_avg, gaps,
                         True, block_steps, False)

    def _gbcfw_pass(self, W, mu, order, t0, surrogate, line_search, gaps, W_avg=None):
        o = self.space_oracles
        t = gbcfw_pass(o.bundle(None), o.game(surrogate), W, o.dual_array(mu), self.lam, order, t0, line_search, gaps,
                       W_avg is not None, np.zeros((1, 1)) if W_avg is None else W_avg)
        if not np.all(np.isfinite(W)):
            raise StructpredError("scores contain NaN or infinite values")
        return t

    def serves(self, name, surrogate=None) -> bool:
        """Whether the pass ``name`` is compiled here, for ``surrogate``'s oracle where it calls
        one (GBCFW: the oracles' ``serves_game``; no surrogate named: whether any is served)."""
        if not hasattr(self, name):
            return False
        return name != "gbcfw_pass" or surrogate is None or self.space_oracles.serves_game(surrogate)

    def _sdca_pass(self, W, mu, order):
        o = self.space_oracles
        sdca_pass(o.bundle(None), W, o.dual_array(mu), self.lam, order)

    def _sgd_pass(self, W, W_avg, order, t, eta0, t0, oracle) -> int:
        o = self.space_oracles
        t = sgd_pass(o.bundle(oracle), W, W_avg, order, t, eta0, t0, self.lam)
        o.check(t >= 0)
        return int(t)

    def _anchor(self, Z, oracle):
        """``(sum_i Psi_i g_i(Z), the oracle's answers at Z)`` for :meth:`_svrg_pass`."""
        o = self.space_oracles
        G = np.zeros_like(Z)
        answers = o.answers(oracle)
        o.check(anchor(o.bundle(oracle), o.n, Z, G, answers))
        return G, answers

    def _svrg_pass(self, W, D, inner_sum, rho, beta, order, oracle, answers) -> None:
        o = self.space_oracles
        o.check(svrg_pass(o.bundle(oracle), W, D, inner_sum, rho, beta, order, answers))
