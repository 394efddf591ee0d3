"""Compiled per-pass loops of a chain on Casimir's hashed window map (CoNLL NER).

:class:`HashedChainPasses` binds the loops to a :class:`~structpred.outputs.Chain`, a
:class:`~structpred.features.hashed.HashedWindowJoint` and checked labels (``Chain.pass_kernels``
returns it).  It compiles the primal rules' passes (SGD, SVRG and Casimir-SVRG) and their
evaluation for the two oracles that a surrogate may name in ``pass_oracle()``:
``"loss_augmented"`` (the hinge: ``phi(y*) - phi(y)`` of the loss-augmented Viterbi labelling)
and ``"smoothed_top_k"`` (Casimir's top-K l2-smoothed hinge, parameters ``(K, mu)``), and the
oracle and updates of each BCFW step.

Each loop does the floating-point operations of the generic path (the rules' ``step``, the
surrogates' ``value_grad``, ``GenericKernels.bcfw_pass``, the map's ``score`` / ``add``,
``Chain.decode``) in the same order, so results are bitwise identical; the dot products and
sums that the generic path leaves to numpy stay numpy calls (BLAS ``ddot``, whose summation
order is the library's and, for BCFW's ``||Psi_i dvec||^2`` over all weights, depends on its
thread count; numpy's pairwise sum): the hinge's two dot products per sample, BCFW's line
search.  One change of work, not of arithmetic: an SVRG pass reuses the oracle's answers at the
epoch's anchor ``Z`` from the full gradient (the K best labellings and their weights) instead
of calling the oracle at ``Z`` again, and adds each step's iterate to the running sum in the
next step's dense loop.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from structpred.errors import StructpredError
from structpred.features.hashed import _add, _score
from structpred.outputs._chain_kernels import (
    smoothed_value,
    top_k_weights,
    viterbi,
    weighted_embedding_minus,
)

#: oracle codes of the compiled loops (``pass_oracle()`` names)
HINGE, TOP_K = 0, 1
ORACLES = {"loss_augmented": HINGE, "smoothed_top_k": TOP_K}
#: samples per block of :meth:`HashedChainPasses.evaluate` (its buffers hold one block's scores)
BLOCK = 512


@njit(cache=True)
def _finite(v):
    for x in v:
        if not np.isfinite(x):
            return False
    return True


@njit(cache=True)
def _at(tok, a, b, R, W, y, pw, C, kind, K, mu, v, Ua, Y, S, u):
    """Score sample ``[a, b)`` at ``W`` into ``v`` and ask the oracle: the loss-augmented
    Viterbi labelling (``Y[0]``, ``u = [1]``) or the K best loss-augmented labellings with their
    smoothing weights; returns how many labellings (``-1``: non-finite scores)."""
    T = b - a
    _score(tok, a, b, R, W, v)
    if not _finite(v):
        return -1
    U = v[: T * R].reshape(T, R)
    P = v[T * R:].reshape(T - 1, R, R)
    for t in range(T):
        for j in range(R):
            Ua[t, j] = U[t, j] + pw[a + t] * C[y[a + t], j]
    if kind == HINGE:
        viterbi(Ua, P, Y[0])
        u[0] = 1.0
        return 1
    return top_k_weights(Ua, P, K, mu, Y, S, u)


@njit(cache=True)
def _buffers(off, R, K):
    """Work arrays for the longest sample: score, gradient, step, unaries."""
    Tmax = 1
    for i in range(off.shape[0] - 1):
        Tmax = max(Tmax, off[i + 1] - off[i])
    d = Tmax * R + (Tmax - 1) * R * R
    return np.empty(d), np.empty(d), np.empty(d), np.empty((Tmax, R)), np.empty(K * Tmax, dtype=np.int64)


@njit(cache=True)
def sgd_pass(tok, off, y, pw, C, kind, K, mu, W, W_avg, order, t, eta0, t0, lam):
    """SGD steps (``structpred.solvers.SGD.step``) for the samples in ``order`` from step ``t``;
    returns the new ``t`` (``-1``: non-finite scores)."""
    R = C.shape[0]
    v, g, c, Ua, Yb = _buffers(off, R, K)
    S = np.empty(K)
    u = np.empty(K)
    for p in range(order.shape[0]):
        i = order[p]
        a, b = off[i], off[i + 1]
        T = b - a
        d = T * R + (T - 1) * R * R
        Y = Yb[: K * T].reshape(K, T)
        found = _at(tok, a, b, R, W, y, pw, C, kind, K, mu, v[:d], Ua[:T], Y, S, u)
        if found < 0:
            return -1
        weighted_embedding_minus(Y, u, found, y[a:b], R, g[:d])
        eta = eta0 / (1.0 + t / t0)
        rho = 1.0 - eta * lam
        for j in range(W.shape[0]):
            W[j] *= rho
        for m in range(d):
            c[m] = -eta * g[m]
        _add(tok, a, b, R, W, c[:d])
        wa = t / (t + 2.0)
        wb = 2.0 / (t + 2.0)
        for j in range(W.shape[0]):
            W_avg[j] = wa * W_avg[j] + wb * W[j]
        t += 1
    return t


@njit(cache=True)
def anchor(tok, off, y, pw, C, kind, K, mu, Z, G, YZ, uZ, nZ):
    """``G += sum_i Psi_i g_i(Z)`` (the SVRG full gradient, samples in order) keeping the
    oracle's answers at ``Z``: sample ``i``'s labellings in ``YZ[K a: K b]``, their weights in
    ``uZ[i]``, their number in ``nZ[i]``; returns ``False`` on non-finite scores."""
    R = C.shape[0]
    v, g, _, Ua, _ = _buffers(off, R, K)
    S = np.empty(K)
    for i in range(off.shape[0] - 1):
        a, b = off[i], off[i + 1]
        T = b - a
        d = T * R + (T - 1) * R * R
        Y = YZ[K * a: K * b].reshape(K, T)
        found = _at(tok, a, b, R, Z, y, pw, C, kind, K, mu, v[:d], Ua[:T], Y, S, uZ[i])
        if found < 0:
            return False
        nZ[i] = found
        weighted_embedding_minus(Y, uZ[i], found, y[a:b], R, g[:d])
        _add(tok, a, b, R, G, g[:d])
    return True


@njit(cache=True)
def svrg_pass(tok, off, y, pw, C, kind, K, mu, W, D, inner_sum, rho, beta, order, YZ, uZ, nZ):
    """SVRG steps (``structpred.solvers.SVRG.step``: ``W <- rho W + beta D + Psi_i beta (g_i(W) -
    g_i(Z))``, then ``inner_sum += W``) with ``g_i(Z)`` from the anchor's answers; the sum of a
    step's iterate is added in the next step's dense loop (the same additions in the same
    order).  Returns ``False`` on non-finite scores."""
    R = C.shape[0]
    v, g, gz, Ua, Yb = _buffers(off, R, K)
    S = np.empty(K)
    u = np.empty(K)
    pending = False
    for p in range(order.shape[0]):
        i = order[p]
        a, b = off[i], off[i + 1]
        T = b - a
        d = T * R + (T - 1) * R * R
        Y = Yb[: K * T].reshape(K, T)
        found = _at(tok, a, b, R, W, y, pw, C, kind, K, mu, v[:d], Ua[:T], Y, S, u)
        if found < 0:
            return False
        weighted_embedding_minus(Y, u, found, y[a:b], R, g[:d])
        weighted_embedding_minus(YZ[K * a: K * b].reshape(K, T), uZ[i], nZ[i], y[a:b], R, gz[:d])
        for m in range(d):
            g[m] = beta * (g[m] - gz[m])
        if pending:
            for j in range(W.shape[0]):
                inner_sum[j] = 1.0 * inner_sum[j] + 1.0 * W[j]
                W[j] = rho * W[j] + beta * D[j]
        else:
            for j in range(W.shape[0]):
                W[j] = rho * W[j] + beta * D[j]
        _add(tok, a, b, R, W, g[:d])
        pending = True
    if pending:
        for j in range(W.shape[0]):
            inner_sum[j] = 1.0 * inner_sum[j] + 1.0 * W[j]
    return True


@njit(cache=True)
def evaluate(tok, off, sdo, y, pw, C, kind, K, mu, W, i0, i1, V, G, L, values, pred):
    """The samples ``i0 <= i < i1`` at ``W``: the MAP labelling into ``pred`` and, for the
    smoothed hinge, its ``values``; for the hinge, the scores ``V`` and gradients ``G`` (sample
    ``i`` at ``sdo[i] - sdo[i0]``) and the node losses ``L[a + t] = C[y_t, y*_t]`` of its value
    (summed by the caller).  Returns ``False`` on non-finite scores."""
    R = C.shape[0]
    _, _, _, Ua, Yb = _buffers(off, R, K)
    S = np.empty(K)
    u = np.empty(K)
    for i in range(i0, i1):
        a, b = off[i], off[i + 1]
        T = b - a
        v = V[sdo[i] - sdo[i0]: sdo[i + 1] - sdo[i0]]
        Y = Yb[: K * T].reshape(K, T)
        found = _at(tok, a, b, R, W, y, pw, C, kind, K, mu, v, Ua[:T], Y, S, u)
        if found < 0:
            return False
        U = v[: T * R].reshape(T, R)
        P = v[T * R:].reshape(T - 1, R, R)
        viterbi(U, P, pred[a:b])
        if kind == HINGE:
            weighted_embedding_minus(Y, u, found, y[a:b], R, G[sdo[i] - sdo[i0]: sdo[i + 1] - sdo[i0]])
            for t in range(T):
                L[a + t] = C[y[a + t], Y[0, t]]
        else:
            values[i] = smoothed_value(U, P, y[a:b], S, u, found, mu)
    return True


@njit(cache=True)
def bcfw_direction(tok, off, y, pw, C, i, W, mu_i, v, dvec, LM, L, G):
    """One BCFW step's oracle (``GenericKernels.bcfw_pass``): the score ``v`` at ``W``, the
    loss-augmented labelling ``s``, ``dvec = phi(s) - mu_i``, the products ``LM = A_y * Mu`` of
    the linear loss, the node losses ``L = C[y, s]`` and ``G = Psi_i dvec`` (its norm's vector);
    returns ``False`` on non-finite scores."""
    R = C.shape[0]
    a, b = off[i], off[i + 1]
    T = b - a
    d = T * R + (T - 1) * R * R
    _score(tok, a, b, R, W, v)
    if not _finite(v[:d]):
        return False
    U = v[: T * R].reshape(T, R)
    P = v[T * R: d].reshape(T - 1, R, R)
    Ua = np.empty((T, R))
    for t in range(T):
        for j in range(R):
            Ua[t, j] = U[t, j] + pw[a + t] * C[y[a + t], j]
    s = np.empty(T, dtype=np.int64)
    viterbi(Ua, P, s)
    dvec[:d] = 0.0
    for t in range(T):
        dvec[t * R + s[t]] = 1.0
        if t + 1 < T:
            dvec[T * R + t * R * R + s[t] * R + s[t + 1]] = 1.0
        L[t] = C[y[a + t], s[t]]
        for j in range(R):
            LM[t, j] = (pw[a + t] * C[y[a + t], j]) * mu_i[t * R + j]
    for m in range(d):
        dvec[m] = dvec[m] - mu_i[m]
    G[:] = 0.0
    _add(tok, a, b, R, G, dvec[:d])
    return True


@njit(cache=True)
def bcfw_update(tok, off, R, i, W, mu_i, dvec, gamma, scale, averaging, t, W_avg, c):
    """The rest of the step: ``W += Psi_i (-gamma scale) dvec``, ``mu_i += gamma dvec`` (if
    ``gamma > 0``), then the weighted average ``rho = 2 / (t + 2)``."""
    a, b = off[i], off[i + 1]
    d = mu_i.shape[0]
    if gamma > 0.0:
        f = -gamma * scale
        for m in range(d):
            c[m] = f * dvec[m]
        _add(tok, a, b, R, W, c[:d])
        for m in range(d):
            mu_i[m] += gamma * dvec[m]
    if averaging:
        rho = 2.0 / (t + 2.0)
        keep = 1.0 - rho
        for j in range(W.shape[0]):
            W_avg[j] = W_avg[j] * keep + rho * W[j]


class HashedChainPasses:
    """The loops above bound to a chain space, a hashed window map and the checked labels."""

    #: the surrogate oracles (``Surrogate.pass_oracle``) whose primal passes are compiled
    oracles = tuple(ORACLES)

    def __init__(self, space, fmap, y):
        self.space = space
        self.tok, self.off, self.n = fmap.X.tokens, fmap.X.offsets, fmap.n
        self.lengths = np.diff(self.off)
        self.y = np.concatenate(y).astype(np.int64)
        #: each sample's position weights (``space.position_weights``), flat in ``pw``
        self.pos = [space.position_weights(int(T)) for T in self.lengths]
        self.pw = np.concatenate(self.pos)
        self.C = space.node_loss
        R = space.n_labels
        self.sdo = np.concatenate([[0], np.cumsum(self.lengths * R + (self.lengths - 1) * R * R)])

    def _args(self, oracle):
        name, params = oracle
        K, mu = params if ORACLES[name] == TOP_K else (1, 1.0)
        return self.tok, self.off, self.y, self.pw, self.C, ORACLES[name], int(K), float(mu)

    @staticmethod
    def _check(ok) -> None:
        if not ok:
            raise StructpredError("scores contain NaN or infinite values")

    def bcfw_pass(self, W, mu, lam, order, t0, averaging, W_avg, ell, ell_avg, gaps):
        """``GenericKernels.bcfw_pass`` with each step's oracle and updates compiled; the step's
        dot products, sum and line search stay the same numpy calls and Python arithmetic (BLAS
        ``ddot``, whose order, for the 65,535 weights of ``||Psi_i dvec||^2``, depends on its
        thread count; numpy's pairwise sum)."""
        n = self.n
        a = float(self.space.loss_offset)
        scale = 1.0 / (lam * n)
        v, dvec, c, LM, _ = _buffers(self.off, self.C.shape[0], 1)
        L = np.empty(LM.shape[0])
        G = np.empty_like(W)
        t = t0
        for i in order:
            T = int(self.lengths[i])
            d = mu[i].shape[0]
            self._check(bcfw_direction(self.tok, self.off, self.y, self.pw, self.C, i, W, mu[i], v, dvec, LM, L, G))
            l_s = float(self.pos[i] @ L[:T])
            l_mu = float(np.sum(LM[:T])) + a
            g = float(v[:d] @ dvec[:d]) + l_s - l_mu
            gaps[i] = g / n
            denom = float(G @ G)
            gamma = 0.0 if (denom <= 0.0 or g <= 0.0) else min(lam * n * g / denom, 1.0)
            bcfw_update(self.tok, self.off, self.C.shape[0], i, W, mu[i], dvec, gamma, scale, averaging, t, W_avg, c)
            if gamma > 0.0:
                ell[0] += gamma * (l_s - l_mu) / n
            if averaging:
                rho = 2.0 / (t + 2.0)
                ell_avg[0] = (1.0 - rho) * ell_avg[0] + rho * ell[0]
            t += 1
        return t

    def sgd_pass(self, W, W_avg, order, t, eta0, t0, lam, oracle) -> int:
        t = sgd_pass(*self._args(oracle), W, W_avg, order, t, eta0, t0, lam)
        self._check(t >= 0)
        return int(t)

    def anchor(self, Z, oracle):
        """``(sum_i Psi_i g_i(Z), the oracle's answers at Z)`` for :meth:`svrg_pass`."""
        args = self._args(oracle)
        K = args[6]
        G = np.zeros_like(Z)
        answers = (np.zeros(K * self.off[-1], dtype=np.int64), np.empty((self.n, K)), np.empty(self.n, dtype=np.int64))
        self._check(anchor(*args, Z, G, *answers))
        return G, answers

    def svrg_pass(self, W, D, inner_sum, rho, beta, order, oracle, answers) -> None:
        self._check(svrg_pass(*self._args(oracle), W, D, inner_sum, rho, beta, order, *answers))

    def evaluate(self, W, oracle):
        """``(values of the surrogate per sample, MAP labellings)`` at ``W``, in blocks of
        :data:`BLOCK` samples; the hinge's values as ``Hinge.value_grad`` sums them, ``Chain.loss``
        (position weights @ node losses) plus ``rowdot(v, grad)``, each a numpy dot per sample."""
        tok, off, y, pw, C, kind, K, mu = self._args(oracle)
        sdo = self.sdo
        width = max(sdo[min(i + BLOCK, self.n)] - sdo[i] for i in range(0, self.n, BLOCK))
        V = np.empty(width)
        G = np.empty(width) if kind == HINGE else V[:0]
        L = np.empty(off[-1]) if kind == HINGE else V[:0]
        values = np.empty(self.n)
        pred = np.empty(off[-1], dtype=np.int64)
        loss, dots = [], []
        for i0 in range(0, self.n, BLOCK):
            i1 = min(i0 + BLOCK, self.n)
            self._check(evaluate(tok, off, sdo, y, pw, C, kind, K, mu, W, i0, i1, V, G, L, values, pred))
            if kind == HINGE:
                loss += [float(self.pos[i] @ L[off[i]: off[i + 1]]) for i in range(i0, i1)]
                dots += [float(V[sdo[i] - sdo[i0]: sdo[i + 1] - sdo[i0]] @ G[sdo[i] - sdo[i0]: sdo[i + 1] - sdo[i0]])
                         for i in range(i0, i1)]
        if kind == HINGE:
            values = np.asarray(loss) + np.array(dots)
        return values, np.split(pred, off[1:-1])
