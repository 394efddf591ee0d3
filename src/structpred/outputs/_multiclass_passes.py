"""Per-pass numba loops of the dual block solvers (BCFW, GBCFW, SDCA) for the multiclass space.

Model: ``v_i = W^T x_i`` with ``W`` of shape ``(d, k)`` (row-major), dual blocks
``mu`` of shape ``(n, k)`` (rows in the simplex) and the primal-dual map
``W = (1 / (lam n)) sum_i x_i (e_{y_i} - mu_i)^T`` (M4N §5.1), kept incrementally.
The oracles come from :mod:`structpred.outputs._multiclass_kernels`.  The space hands
them to the solvers bound to its data (:class:`MulticlassPasses`, through
``Multiclass.pass_kernels``); the bound methods have the signatures of the solvers'
generic loop (:class:`structpred.solvers._generic_kernels.GenericKernels`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from structpred.features.joint import _rank1, _scores
from structpred.outputs._multiclass_kernels import exact_game, loss_augmented, matvec, spmp
from structpred.solvers.line_search import envelope_step


@njit(cache=True)
def _fw_step(X, i, yi, A, W, mu, lam, v, s, xnorm2, ell, coef, gaps):
    """BCFW's Frank-Wolfe step on block ``i`` towards ``e_s`` with exact line search."""
    n = X.shape[0]
    k = W.shape[1]
    scale = 1.0 / (lam * n)
    vmu = 0.0
    amu = 0.0
    nrm = 0.0
    for j in range(k):
        vmu += v[j] * mu[i, j]
        amu += A[yi, j] * mu[i, j]
        dj = -mu[i, j]
        if j == s:
            dj += 1.0
        nrm += dj * dj
    # block gap * n: <v, e_s - mu_i> + A[y_i, s] - A[y_i] . mu_i
    g = v[s] - vmu + A[yi, s] - amu
    gaps[i] = g / n
    denom = xnorm2[i] * nrm
    if denom <= 0.0 or g <= 0.0:
        gamma = 0.0
    else:
        gamma = lam * n * g / denom
        gamma = min(gamma, 1.0)
    if gamma > 0.0:
        for j in range(k):
            coef[j] = gamma * scale * mu[i, j]
        coef[s] -= gamma * scale
        _rank1(X, i, W, coef)
        ell[0] += gamma * (A[yi, s] - amu) / n
        for j in range(k):
            mu[i, j] *= 1.0 - gamma
        mu[i, s] += gamma


@njit(cache=True)
def _pairwise_steps(X, i, yi, A, W, mu, lam, v, s, xnorm2, ell, coef, gaps, block_steps):
    """Up to ``block_steps`` pairwise steps on block ``i`` (see :func:`bcfw_pass`)."""
    n = X.shape[0]
    k = W.shape[1]
    scale = 1.0 / (lam * n)
    dual = 0.0
    for j in range(k):
        dual += mu[i, j] * (A[yi, j] + v[j])
        coef[j] = 0.0
    gaps[i] = (A[yi, s] + v[s] - dual) / n
    moved = False
    for r in range(block_steps):
        if r > 0:
            s = loss_augmented(v, yi, A)
        a = -1
        low = 0.0
        for j in range(k):
            if mu[i, j] > 0.0:
                val = A[yi, j] + v[j]
                if a < 0 or val < low:
                    a = j
                    low = val
        g = A[yi, s] + v[s] - low
        if a == s or g <= 0.0 or xnorm2[i] <= 0.0:
            break
        gamma = min(lam * n * g / (2.0 * xnorm2[i]), mu[i, a])
        mu[i, s] += gamma
        mu[i, a] = 0.0 if gamma == mu[i, a] else mu[i, a] - gamma
        coef[s] -= gamma * scale
        coef[a] += gamma * scale
        dv = gamma * scale * xnorm2[i]
        v[s] -= dv
        v[a] += dv
        ell[0] += gamma * (A[yi, s] - A[yi, a]) / n
        moved = True
    if moved:
        _rank1(X, i, W, coef)


@njit(cache=True)
def bcfw_pass(X, y, A, W, mu, lam, order, xnorm2, t0, averaging, W_avg, ell, ell_avg, gaps, pairwise, block_steps):
    """One pass of BCFW for M3N with exact line search (Lacoste-Julien et al. 2013, Alg. 4), or
    with pairwise steps (Lacoste-Julien & Jaggi 2015; Osokin et al. 2016).

    ``ell[0]`` holds ``l = (1/n) sum_i A[y_i] . mu_i`` (the linear dual term), updated in
    place; with ``averaging`` the weighted averages (rho_t = 2/(t+2)) of W and l are
    kept in ``W_avg`` / ``ell_avg[0]``; ``gaps[i]`` receives the block's Frank-Wolfe gap at
    the visit (before its steps), which gap sampling draws by.

    Pairwise: at block ``i`` with scores ``v``, the Frank-Wolfe corner ``s = argmax_j A[y_i, j]
    + v_j`` and the away corner ``a = argmin_{j: mu_ij > 0} A[y_i, j] + v_j`` (the block's
    active set is the support of ``mu_i``); the step moves mass ``gamma`` from ``a`` to ``s``,
    ``gamma = min(lam n g_pw / (2 ||x_i||^2), mu_ia)``, the exact maximiser of the dual on the
    segment.  The scores after a step are ``v - gamma ||x_i||^2 / (lam n) (e_s - e_a)``: up to
    ``block_steps`` pairwise steps are taken per visit on those cached scores, and ``W`` is
    updated once.  Returns the new global step counter.
    """
    d, k = W.shape
    v = np.empty(k)
    coef = np.empty(k)
    t = t0
    for p in range(order.shape[0]):
        i = order[p]
        yi = y[i]
        _scores(X, i, W, v)
        s = loss_augmented(v, yi, A)
        if pairwise:
            _pairwise_steps(X, i, yi, A, W, mu, lam, v, s, xnorm2, ell, coef, gaps, block_steps)
        else:
            _fw_step(X, i, yi, A, W, mu, lam, v, s, xnorm2, ell, coef, gaps)
        if averaging:
            rho = 2.0 / (t + 2.0)
            for a in range(d):
                for j in range(k):
                    W_avg[a, j] = (1.0 - rho) * W_avg[a, j] + rho * W[a, j]
            ell_avg[0] = (1.0 - rho) * ell_avg[0] + rho * ell[0]
        t += 1
    return t


@njit(cache=True)
def _mix_uniform(lz, eps):
    """``lz <- log((1 - eps) exp(lz) + eps / k)`` (keeps the warm start away from the
    simplex boundary, bounding the Bregman distance to any vertex by ``log(k / eps)``)."""
    k = lz.shape[0]
    a = np.log1p(-eps)
    b = np.log(eps / k)
    for j in range(k):
        x = lz[j] + a
        m = max(b, x)
        lz[j] = m + np.log(np.exp(x - m) + np.exp(b - m))


@njit(cache=True)
def gbcfw_pass(X, y, A, kind, eta, W, mu, lam, order, t0, n_iter, warm, LMU, LNU, gaps, warm_mix, xnorm2,
               line_search, exact, block_gaps):
    """One pass of GBCFW for M4N (M4N Algorithm 1, step ``2n / (t + 2n)``, or with
    ``line_search`` the dual's maximiser on the segment: :func:`envelope_step` on the lines
    ``A mu_i + g A (s - mu_i)``, ``g0 = v.(s - mu_i)``, ``curv = ||x_i||^2 ||s - mu_i||^2 / (lam n)``).

    The max-min oracle is SP-MP with ``n_iter`` iterations (M4N Algorithm 2); with
    ``warm`` it starts from the per-sample state ``(LMU[i], LNU[i])`` (log of the last
    iterates of the previous call on sample i), otherwise from the uniform pair.  With
    ``exact`` it is the game's closed form (:func:`exact_game`; no state).
    ``gaps[i]`` receives the oracle's duality gap, ``block_gaps[i]`` block i's Frank-Wolfe gap
    ``(value(s) - min_j (A mu_i)_j - v.mu_i) / n``.  Returns the new step counter.
    """
    n, d = X.shape
    k = W.shape[1]
    v = np.empty(k)
    coef = np.empty(k)
    mubar = np.empty(k)
    nubar = np.empty(k)
    work = np.empty((6, k))
    dvec = np.empty(k)
    pl = np.empty(k)
    ql = np.empty(k)
    starts = np.array([0, k], dtype=np.int64)
    rank = np.empty(k, dtype=np.int64)
    scale = 1.0 / (lam * n)
    logk = -np.log(k)
    t = t0
    for p in range(order.shape[0]):
        i = order[p]
        _scores(X, i, W, v)
        if exact:
            lo, up = exact_game(v, A, kind, rank, mubar, nubar, pl)
            gaps[i] = max(up - lo, 0.0)
        else:
            if not warm:
                for j in range(k):
                    LMU[i, j] = logk
                    LNU[i, j] = logk
            gap, lo, up = spmp(v, A, kind, eta, n_iter, LMU[i], LNU[i], mubar, nubar, work)
            gaps[i] = gap
        if warm and warm_mix > 0.0 and not exact:
            _mix_uniform(LMU[i], warm_mix)
            _mix_uniform(LNU[i], warm_mix)
        matvec(A, kind, mu[i], pl)
        h = pl[0]
        vmu = 0.0
        for j in range(k):
            h = min(h, pl[j])
            vmu += v[j] * mu[i, j]
        block_gaps[i] = (lo - h - vmu) / n
        if line_search:
            g0 = 0.0
            nrm = 0.0
            for j in range(k):
                dvec[j] = mubar[j] - mu[i, j]
                g0 += v[j] * dvec[j]
                nrm += dvec[j] * dvec[j]
            matvec(A, kind, dvec, ql)
            gamma = envelope_step(pl, ql, starts, g0, xnorm2[i] * nrm * scale)
        else:
            gamma = 2.0 * n / (t + 2.0 * n)
        for j in range(k):
            coef[j] = gamma * scale * (mu[i, j] - mubar[j])
        _rank1(X, i, W, coef)
        for j in range(k):
            mu[i, j] = (1.0 - gamma) * mu[i, j] + gamma * mubar[j]
        t += 1
    return t


@njit(cache=True)
def _entropy_block(v, mu_i, q, out, u):
    """Exact maximiser over the simplex of ``H(m) + v.(m - mu_i) - q/2 ||m - mu_i||^2``.

    Stationarity: ``log m_j + q m_j = c_j - tau`` with ``c_j = v_j + q mu_ij - 1`` and
    ``tau`` fixing ``sum m = 1``.  Each coordinate solves ``u + q e^u = b`` (Newton from
    the right of the root: monotone), ``tau`` by safeguarded Newton on a bracket.
    """
    k = v.shape[0]
    cmax = -1e300
    for j in range(k):
        u[j] = v[j] + q * mu_i[j] - 1.0  # c_j stored in u temporarily
        cmax = max(cmax, u[j])
    c = u.copy()
    # bracket: g(tau) = sum m_j(tau) - 1 is decreasing
    lo = cmax - q - 1.0
    s = 0.0
    for j in range(k):
        s += np.exp(c[j] - cmax)
    hi = cmax + np.log(s)
    tau = 0.5 * (lo + hi)
    for it in range(100):
        gsum = -1.0
        dg = 0.0
        for j in range(k):
            b = c[j] - tau
            # initial point to the right of the root
            if b <= 0.0:
                w = b                  # f(b) = q e^b >= 0
            elif b <= q:
                w = 0.0                # f(0) = q - b >= 0
            else:
                w = np.log(b / q)      # f = log(b/q) > 0
            for _ in range(60):
                ew = np.exp(w)
                f = w + q * ew - b
                step = f / (1.0 + q * ew)
                w -= step
                if abs(step) < 1e-14 * (1.0 + abs(w)):
                    break
            m = np.exp(w)
            out[j] = m
            gsum += m
            dg -= m / (1.0 + q * m)
        if abs(gsum) < 1e-13:
            break
        if gsum > 0.0:
            lo = tau
        else:
            hi = tau
        tn = tau - gsum / dg
        if not (lo < tn < hi):
            tn = 0.5 * (lo + hi)
        if hi - lo < 1e-15 * (1.0 + abs(tau)):
            break
        tau = tn
    # exact renormalisation against round-off
    s = 0.0
    for j in range(k):
        s += out[j]
    for j in range(k):
        out[j] /= s


@njit(cache=True)
def sdca_pass(X, y, W, mu, lam, order, xnorm2):
    """One pass of SDCA for the CRF (Shalev-Shwartz & Zhang 2013, exact block maximisation).

    Dual: ``D(mu) = (1/n) sum_i H(mu_i) - lam/2 ||W(mu)||^2`` with Shannon entropy ``H``
    (the conjugate of log-sum-exp).  Each block is maximised exactly (``_entropy_block``).
    """
    n, d = X.shape
    k = W.shape[1]
    v = np.empty(k)
    coef = np.empty(k)
    new = np.empty(k)
    u = np.empty(k)
    scale = 1.0 / (lam * n)
    for p in range(order.shape[0]):
        i = order[p]
        _scores(X, i, W, v)
        q = xnorm2[i] * scale
        _entropy_block(v, mu[i], q, new, u)
        for j in range(k):
            coef[j] = scale * (mu[i, j] - new[j])
            mu[i, j] = new[j]
        _rank1(X, i, W, coef)


class MulticlassPasses:
    """The loops above bound to a multiclass space, a linear joint map and the labels."""

    #: surrogate oracles with compiled primal passes: none (the primal rules step generically)
    oracles = ()

    def __init__(self, space, fmap, y):
        self.X, self.xnorm2, self.y = fmap.X, fmap.xnorm2, y
        self.A, self.kind, self.eta = space.loss_matrix, np.int64(space.kind), float(space.eta)

    def bcfw_pass(self, W, mu, lam, order, t0, averaging, W_avg, ell, ell_avg, gaps):
        return bcfw_pass(self.X, self.y, self.A, W, mu, lam, order, self.xnorm2, t0, averaging, W_avg, ell, ell_avg,
                         gaps, False, 1)

    def bcfw_pairwise_pass(self, W, mu, lam, order, t0, averaging, W_avg, ell, ell_avg, gaps, block_steps):
        return bcfw_pass(self.X, self.y, self.A, W, mu, lam, order, self.xnorm2, t0, averaging, W_avg, ell, ell_avg,
                         gaps, True, block_steps)

    def gbcfw_pass(self, W, mu, lam, order, t0, surrogate, line_search, gaps):
        s = surrogate
        exact = s.game == "exact"
        none = np.empty((0, 0))     # the exact game keeps no SP-MP state
        return gbcfw_pass(self.X, self.y, self.A, self.kind, self.eta, W, mu, lam, order, t0, s.n_iter,
                          s.warm_start, none if exact else s.LMU, none if exact else s.LNU, s.gaps, s.warm_mix,
                          self.xnorm2, line_search, exact, gaps)

    def sdca_pass(self, W, mu, lam, order):
        sdca_pass(self.X, self.y, W, mu, lam, order, self.xnorm2)
