"""Baselines of QS (NeurIPS 2016) Table 1: a linear score per (user, movie) trained on the
training users' preference pairs.

User ``u`` (features ``x_u``, a per-movie bias being a constant feature) scores movie ``m`` by
``s_um = <w_m, x_u>``, ``W`` of shape ``(n_items, d)``.  A training user's target movies with
ratings ``r`` give the pairs ``r_j > r_k`` of weight ``a_jk = (r_j - r_k) / Z_u``, ``Z_u =
sum_{r_j > r_k} (r_j - r_k)`` (normalised per user as the rank loss, QS eq. 22).  Prediction:
the test user's movies by decreasing score.

* Pairwise surrogates ``F(W) = (1/n) sum_u sum_{r_j > r_k} a_jk phi(s_uj - s_uk) + lam/2 ||W||^2``
  (:func:`fit_pairwise`, L-BFGS on the exact objective): ``linear`` ``phi(t) = -t``
  (Duchi et al. 2010; unbounded below without the regulariser, and its minimiser ``W = -B / lam``
  for a ``B`` fixed by the data ranks alike for every ``lam``), ``hinge`` ``max(0, 1 - t)``
  (Herbrich et al. 1999), ``logistic`` ``log(1 + e^-t)`` (Dekel et al. 2004).
* Structural SVM (:func:`fit_ssvm`, Tsochantaridis et al. 2005) with Joachims' joint feature
  ``Psi(x, y) = (1/P) sum_{j ranked above k} (x ⊗ e_j - x ⊗ e_k)`` over the user's ``m`` movies,
  ``P = m (m - 1) / 2``, i.e. ``<W, Psi(x, y)> = sum_j s_j c_j(y)`` with ``c_j(y) = (m - 1 - 2
  y_j) / P`` (``y_j`` = position); a truth with tied ratings is the weak order ``c_j(r) = (#{k:
  r_k < r_j} - #{k: r_k > r_j}) / P`` (tied pairs count 0), the average of its linear extensions,
  so the hinge still bounds the loss of the score-sorted ranking.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from numba import njit

from structpred.errors import ConfigError, check_positive
from structpred.outputs import _ranking_kernels as RK
from structpred.outputs.ranking import PairwiseRanking

log = logging.getLogger(__name__)

#: pairwise surrogates: name -> kernel code
SURROGATES = {"linear": 0, "hinge": 1, "logistic": 2}


@dataclass(frozen=True)
class Preferences:
    """Training users' features ``X (n, d)`` and target ratings compressed: user ``u``'s movies
    ``items[offs[u]:offs[u+1]]`` with ``ratings`` there; ``zinv[u] = 1 / Z_u`` (0 if ``Z_u = 0``)."""

    X: np.ndarray
    items: np.ndarray
    ratings: np.ndarray
    offs: np.ndarray
    zinv: np.ndarray
    n_items: int

    @classmethod
    def from_ratings(cls, X, R) -> Preferences:
        """From features ``X (n, d)`` and rating rows ``R (n, n_items)`` (0 = not a target movie)."""
        R = np.ascontiguousarray(R, dtype=np.float64)
        items, ratings, offs = RK.rated_lists(R)
        z = np.atleast_1d(PairwiseRanking(R.shape[1]).normalizer(R))
        zinv = np.divide(1.0, z, out=np.zeros_like(z), where=z > 0)
        return cls(np.ascontiguousarray(X, dtype=np.float64), items, ratings, offs, zinv, R.shape[1])

    @property
    def n(self) -> int:
        return self.X.shape[0]


@njit(cache=True)
def _scores(W, X, items, offs, S):
    """``S[e] = <W[items[e]], X[u]>`` for every rated entry ``e`` of user ``u``."""
    d = X.shape[1]
    for u in range(offs.shape[0] - 1):
        for e in range(offs[u], offs[u + 1]):
            w = W[items[e]]
            acc = 0.0
            for f in range(d):
                acc += w[f] * X[u, f]
            S[e] = acc


@njit(cache=True)
def _scatter(dS, X, items, offs, out):
    """``out[items[e]] += dS[e] X[u]``: the gradient in ``W`` of per-entry score gradients."""
    d = X.shape[1]
    for u in range(offs.shape[0] - 1):
        for e in range(offs[u], offs[u + 1]):
            g = dS[e]
            if g != 0.0:
                row = out[items[e]]
                for f in range(d):
                    row[f] += g * X[u, f]


@njit(cache=True)
def _pair_objective(S, ratings, offs, zinv, kind, dS):
    """``sum_u sum_{r_j > r_k} a_jk phi(s_j - s_k)`` and its gradient in the scores, added into ``dS``."""
    total = 0.0
    for u in range(offs.shape[0] - 1):
        w = zinv[u]
        if w == 0.0:
            continue
        for p in range(offs[u], offs[u + 1]):
            for q in range(p + 1, offs[u + 1]):
                d = ratings[p] - ratings[q]
                if d == 0.0:
                    continue
                hi, lo = p, q
                if d < 0.0:
                    hi, lo = q, p
                c = w * abs(d)
                t = S[hi] - S[lo]
                if kind == 0:
                    v, g = -t, -1.0
                elif kind == 1:
                    v, g = (1.0 - t, -1.0) if t < 1.0 else (0.0, 0.0)
                elif t > 0.0:
                    e = np.exp(-t)
                    v, g = np.log1p(e), -e / (1.0 + e)
                else:
                    e = np.exp(t)
                    v, g = np.log1p(e) - t, -1.0 / (1.0 + e)
                total += c * v
                dS[hi] += c * g
                dS[lo] -= c * g
    return total


def pairwise_objective(w, prefs: Preferences, lam: float, surrogate: str) -> tuple[float, np.ndarray]:
    """``(F(W), grad F)`` for flat weights ``w`` (module docstring), the surrogate by name."""
    W = w.reshape(prefs.n_items, prefs.X.shape[1])
    S = np.empty(prefs.items.shape[0])
    _scores(W, prefs.X, prefs.items, prefs.offs, S)
    dS = np.zeros_like(S)
    total = _pair_objective(S, prefs.ratings, prefs.offs, prefs.zinv, SURROGATES[surrogate], dS)
    grad = lam * W
    _scatter(dS / prefs.n, prefs.X, prefs.items, prefs.offs, grad)
    return total / prefs.n + 0.5 * lam * float(w @ w), grad.ravel()


def lbfgs(fun, x0: np.ndarray, max_iter: int, tol: float, memory: int = 10) -> tuple[np.ndarray, float, int]:
    """``(x, f(x), iterations)`` minimising ``fun(x) -> (value, gradient)`` by L-BFGS (Nocedal and
    Wright 2006, Alg. 7.4-7.5: two-loop recursion over the last ``memory`` pairs, curvature pairs
    with ``s^T y <= 0`` skipped) with a backtracking Armijo line search from the unit step; stops
    after ``max_iter`` iterations, when a step decreases ``f`` by less than ``tol max(1, |f|)``, or
    when no step decreases it.  (scipy's L-BFGS-B spends ~0.15 s per call on a million variables,
    longer than our objective.)"""
    x = x0.copy()
    f, g = fun(x)
    pairs = []
    for it in range(1, int(max_iter) + 1):
        d = -g
        alphas = []
        for s, y, rho in reversed(pairs):
            a = rho * (s @ d)
            d -= a * y
            alphas.append(a)
        if pairs:
            s, y, _ = pairs[-1]
            d *= (s @ y) / (y @ y)
        else:
            d /= max(float(np.sqrt(g @ g)), 1e-300)
        for (s, y, rho), a in zip(pairs, reversed(alphas)):
            d += (a - rho * (y @ d)) * s
        slope = float(g @ d)
        if slope >= 0.0:  # not a descent direction: restart from the gradient
            pairs.clear()
            d, slope = -g, -float(g @ g)
        step = 1.0
        while True:
            x_new = x + step * d
            f_new, g_new = fun(x_new)
            if f_new <= f + 1e-4 * step * slope or step < 1e-10:
                break
            step *= 0.5
        if f_new >= f:
            return x, f, it
        s, y = x_new - x, g_new - g
        if s @ y > 0.0:
            pairs.append((s, y, 1.0 / (s @ y)))
            del pairs[:-memory]
        done = f - f_new <= tol * max(1.0, abs(f_new))
        x, f, g = x_new, f_new, g_new
        if done:
            return x, f, it
    return x, f, int(max_iter)


def fit_pairwise(prefs: Preferences, surrogate: str, lam: float, max_iter: int, tol: float,
                 W0: np.ndarray | None = None) -> np.ndarray:
    """``argmin_W F(W)`` by :func:`lbfgs` from ``W0`` (default 0); ``(n_items, d)``."""
    if surrogate not in SURROGATES:
        raise ConfigError(f"unknown pairwise surrogate {surrogate!r}; known: {', '.join(SURROGATES)}")
    lam = check_positive(lam, "lam")
    x0 = np.zeros(prefs.n_items * prefs.X.shape[1]) if W0 is None else W0.ravel()
    w, f, it = lbfgs(lambda w: pairwise_objective(w, prefs, lam, surrogate), x0, max_iter, tol)
    log.debug("%s lam=%g: F=%.6g after %d L-BFGS iterations", surrogate, lam, f, it)
    return w.reshape(prefs.n_items, prefs.X.shape[1])


# --- structural SVM -----------------------------------------------------------------------------

@njit(cache=True)
def _truth_coef(r, out):
    """``c_j(r) = #{k: r_k < r_j} - #{k: r_k > r_j}`` (times ``1/P`` by the caller)."""
    m = r.shape[0]
    for j in range(m):
        c = 0.0
        for k in range(m):
            if r[k] < r[j]:
                c += 1.0
            elif r[k] > r[j]:
                c -= 1.0
        out[j] = c


@njit(cache=True)
def loss_augmented(s, r, zinv):
    """``argmax_y L(r, y) + sum_j s_j c_j(y)`` over rankings of the ``m`` movies, by the greedy
    FAS order (Eades et al. 1993) of the net weights ``D[j, k] = 2 (s_j - s_k) / P - (r_j - r_k)
    / Z`` (``D[j, k] > 0``: ``j`` above ``k`` gains): a heuristic, exact when the positive
    weights are acyclic; returns positions."""
    m = s.shape[0]
    P = 0.5 * m * (m - 1)
    D = np.empty((m, m))
    for j in range(m):
        for k in range(m):
            D[j, k] = 2.0 * (s[j] - s[k]) / P - (r[j] - r[k]) * zinv
    return RK.order_to_positions(RK.fas_order(D))


@njit(cache=True)
def _bcfw_pass(W, X, items, ratings, offs, zinv, G, ell, lam, order):
    """One BCFW pass (Lacoste-Julien et al. 2013, Alg. 4) with exact line search.  Block ``i`` is
    ``w_i = x_i ⊗ G[offs[i]:offs[i+1]]`` (over the user's movies) and its loss ``ell[i]``;
    ``W = sum_i w_i``."""
    n = offs.shape[0] - 1
    for i in order:
        a, b = offs[i], offs[i + 1]
        m = b - a
        if m < 2:  # no ranking to learn
            continue
        x = X[i]
        s = np.empty(m)
        for p in range(m):
            s[p] = np.dot(W[items[a + p]], x)
        r = ratings[a:b]
        y = loss_augmented(s, r, zinv[i])
        P = 0.5 * m * (m - 1)
        ct = np.empty(m)
        _truth_coef(r, ct)
        diff = np.empty(m)  # g_i - h, h = (c(r) - c(y*)) / (lam n P)
        for p in range(m):
            diff[p] = G[a + p] - (ct[p] - (m - 1 - 2.0 * y[p])) / (P * lam * n)
        ls = RK.pair_loss(r, y, True) / n
        num = lam * np.dot(diff, s) - ell[i] + ls
        den = lam * np.dot(x, x) * np.dot(diff, diff)
        gamma = min(max(num / den, 0.0), 1.0) if den > 0.0 else 0.0
        if gamma == 0.0:
            continue
        for p in range(m):
            step = gamma * diff[p]
            G[a + p] -= step
            row = W[items[a + p]]
            for f in range(x.shape[0]):
                row[f] -= step * x[f]
        ell[i] += gamma * (ls - ell[i])


def fit_ssvm(prefs: Preferences, lam: float, n_passes: int, rng: np.random.Generator) -> np.ndarray:
    """Structural SVM ``min_W (1/n) sum_u max_y [L(r_u, y) + <W, Psi_u(y) - Psi_u(r_u)>] + lam/2
    ||W||^2`` by ``n_passes`` BCFW passes in the orders ``rng`` draws (module docstring).  The
    loss-augmented decoding is a heuristic (:func:`loss_augmented`), so a duality gap computed with
    it is not a certified bound: the trainer runs a fixed number of passes and reports none."""
    lam = check_positive(lam, "lam")
    W = np.zeros((prefs.n_items, prefs.X.shape[1]))
    G = np.zeros(prefs.items.shape[0])
    ell = np.zeros(prefs.n)
    for _ in range(int(n_passes)):
        _bcfw_pass(W, prefs.X, prefs.items, prefs.ratings, prefs.offs, prefs.zinv, G, ell, lam,
                   rng.permutation(prefs.n))
    return W


def fit_path(method: str, prefs: Preferences, lams, settings: dict, rng: np.random.Generator) -> list[np.ndarray]:
    """Weights ``(n_items, d)`` of a Table 1 baseline (``Linear``, ``Hinge``, ``Logistic``,
    ``SVM-Struct``) for each ``lam`` of ``lams``; the pairwise surrogates' fits run from the
    largest ``lam`` down, each started from the previous solution."""
    out = {}
    W = None
    for lam in sorted(lams, reverse=True):
        if method == "SVM-Struct":
            out[lam] = fit_ssvm(prefs, lam, settings["ssvm_passes"], rng)
        else:
            W = out[lam] = fit_pairwise(prefs, method.lower(), lam, settings["lbfgs_max_iter"],
                                        settings["lbfgs_tol"], W)
    return [out[lam] for lam in lams]
