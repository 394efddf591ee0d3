"""The multiclass space's compiled oracles (:mod:`structpred.outputs.compiled`) on the linear
joint map ``v_i = W^T x_i``.

``W`` has shape ``(d, k)`` (row-major), the dual blocks ``mu`` shape ``(n, k)`` (rows in the
simplex, corner ``c`` is ``e_c``) and the primal-dual map is
``W = (1 / (lam n)) sum_i x_i (e_{y_i} - mu_i)^T`` (M4N §5.1).  :class:`MulticlassOracles`
binds them to a space, a :class:`~structpred.features.joint.LinearJoint` and the labels
(``Multiclass.compiled_oracles``); the dual step rules' compiled passes run on its bundle.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from structpred.features.joint import linear_add, linear_scores
from structpred.outputs import compiled
from structpred.outputs._fastmath import log_add_exp
from structpred.outputs._multiclass_kernels import exact_game, loss_augmented, matvec, spmp

#: the arrays of the oracles: inputs, their squared norms, labels, loss matrix, its kind, SP-MP's step
MulticlassBundle = namedtuple("MulticlassBundle", ["X", "xnorm2", "y", "A", "kind", "eta"])
#: the max-min oracle's settings, warm state and work buffers (per pass)
MulticlassGame = namedtuple("MulticlassGame", ["n_iter", "warm", "warm_mix", "exact", "LMU", "LNU", "gaps", "work",
                                               "nubar", "rank", "tmp"])


def _implements(stub):
    return compiled.implements(stub, MulticlassBundle)


@_implements(compiled.scores)
def _scores(b, i, W, v):
    linear_scores(b.X, i, W, v)


@_implements(compiled.add)
def _add(b, i, W, c):
    linear_add(b.X, i, W, c)


@_implements(compiled.loss_augmented)
def _loss_augmented(b, i, v):
    return loss_augmented(v, b.y[i], b.A)


@_implements(compiled.corner)
def _corner(b, i, v, s, mu_i):
    yi = b.y[i]
    vmu = 0.0
    amu = 0.0
    nrm = 0.0
    for j in range(v.shape[0]):
        vmu += v[j] * mu_i[j]
        amu += b.A[yi, j] * mu_i[j]
        dj = -mu_i[j]
        if j == s:
            dj += 1.0
        nrm += dj * dj
    return v[s] - vmu + b.A[yi, s] - amu, b.A[yi, s] - amu, b.xnorm2[i] * nrm


@_implements(compiled.toward)
def _toward(b, i, W, mu_i, s, gamma, scale, coef):
    for j in range(mu_i.shape[0]):
        coef[j] = gamma * scale * mu_i[j]
    coef[s] -= gamma * scale
    linear_add(b.X, i, W, coef)
    for j in range(mu_i.shape[0]):
        mu_i[j] *= 1.0 - gamma
    mu_i[s] += gamma


@_implements(compiled.corner_values)
def _corner_values(b, i, v, out):
    yi = b.y[i]
    for c in range(v.shape[0]):
        out[c] = b.A[yi, c] + v[c]


@_implements(compiled.corner_loss)
def _corner_loss(b, i, c):
    return b.A[b.y[i], c]


@_implements(compiled.pair_norm2)
def _pair_norm2(b, i):
    return 2.0 * b.xnorm2[i]


@_implements(compiled.pair_scores)
def _pair_scores(b, i, v, s, a, step):
    dv = step * b.xnorm2[i]
    v[s] -= dv
    v[a] += dv


@_implements(compiled.norm2)
def _norm2(b, i, d):
    nrm = 0.0
    for j in range(d.shape[0]):
        nrm += d[j] * d[j]
    return b.xnorm2[i] * nrm


@njit(cache=True)
def _mix_uniform(lz, eps):
    """``lz <- log((1 - eps) exp(lz) + eps / k)`` (keeps the warm start away from the
    simplex boundary, bounding the Bregman distance to any vertex by ``log(k / eps)``)."""
    k = lz.shape[0]
    a = np.log1p(-eps)
    b = np.log(eps / k)
    for j in range(k):
        lz[j] = log_add_exp(lz[j] + a, b)


@_implements(compiled.maxmin)
def _maxmin(b, game, i, v, mubar):
    """SP-MP with ``n_iter`` iterations (M4N Algorithm 2) from the per-sample state ``(LMU[i],
    LNU[i])`` (log of the last iterates of the previous call on sample ``i``) with ``warm``, else
    from the uniform pair; then mixed with the uniform pair by ``warm_mix``.  With ``exact``, the
    game's closed form (:func:`exact_game`; no state)."""
    if game.exact:
        lo, up = exact_game(v, b.A, b.kind, game.rank, mubar, game.nubar, game.tmp)
        game.gaps[i] = max(up - lo, 0.0)
        return lo
    if not game.warm:
        logk = -np.log(v.shape[0])
        for j in range(v.shape[0]):
            game.LMU[i, j] = logk
            game.LNU[i, j] = logk
    gap, lo, up = spmp(v, b.A, b.kind, b.eta, game.n_iter, game.LMU[i], game.LNU[i], mubar, game.nubar, game.work)
    game.gaps[i] = gap
    if game.warm and game.warm_mix > 0.0:
        _mix_uniform(game.LMU[i], game.warm_mix)
        _mix_uniform(game.LNU[i], game.warm_mix)
    return lo


@_implements(compiled.block)
def _block(b, mu, i):
    return mu[i]


@_implements(compiled.block_size)
def _block_size(b):
    return b.A.shape[0]


@_implements(compiled.n_blocks)
def _n_blocks(b):
    return b.X.shape[0]


@_implements(compiled.lines)
def _lines(b, i, m, out, starts):
    k = m.shape[0]
    matvec(b.A, b.kind, m, out[:k])
    starts[0] = 0
    starts[1] = k
    return 1


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


@_implements(compiled.entropy_block)
def _entropy(b, i, v, mu_i, scale, out, work):
    _entropy_block(v, mu_i, b.xnorm2[i] * scale, out, work)


class MulticlassOracles:
    """The oracles above bound to a multiclass space, a linear joint map and the labels."""

    #: the compiled passes its oracles serve
    passes = ("bcfw_pass", "bcfw_pairwise_pass", "gbcfw_pass", "sdca_pass")
    #: surrogate oracles with compiled primal passes: none (the primal rules step generically)
    oracles = ()

    def __init__(self, space, fmap, y):
        self.n = fmap.n
        self._bundle = MulticlassBundle(fmap.X, fmap.xnorm2, y, space.loss_matrix, np.int64(space.kind),
                                       float(space.eta))

    def bundle(self, oracle=None) -> MulticlassBundle:
        """The arrays of the oracles (the dual passes name no surrogate oracle)."""
        return self._bundle

    @staticmethod
    def dual_array(mu):
        """The dual passes' array of blocks: ``mu`` itself, ``(n, k)``."""
        return mu

    @staticmethod
    def serves_game(surrogate) -> bool:
        """Both games of the max-min surrogate (SP-MP and the closed form) are compiled."""
        return True

    def game(self, surrogate) -> MulticlassGame:
        """The max-min oracle of ``surrogate`` (its settings and warm state) for one pass."""
        s = surrogate
        k = self._bundle.A.shape[0]
        exact = s.game == "exact"
        none = np.empty((0, 0))     # the exact game keeps no SP-MP state
        return MulticlassGame(np.int64(s.n_iter), bool(s.warm_start), float(s.warm_mix), exact,
                              none if exact else s.LMU, none if exact else s.LNU, s.gaps, np.empty((6, k)),
                              np.empty(k), np.empty(k, dtype=np.int64), np.empty(k))
