"""A chain's compiled oracles (:mod:`structpred.outputs.compiled`) on Casimir's hashed window map
(CoNLL NER).

:class:`HashedChainOracles` binds them to a :class:`~structpred.outputs.Chain`, a
:class:`~structpred.features.hashed.HashedWindowJoint` and checked labels
(``Chain.compiled_oracles`` returns it).  The primal rules' compiled passes (SGD, SVRG and
Casimir-SVRG, in :mod:`structpred.solvers._compiled_passes`) run on its bundle for the two
oracles that a surrogate may name in ``pass_oracle()``: ``"loss_augmented"`` (the hinge:
``phi(y*) - phi(y)`` of the loss-augmented Viterbi labelling) and ``"smoothed_top_k"``
(Casimir's top-K l2-smoothed hinge, parameters ``(K, mu)``).  It also gives the surrogate's
evaluation over all samples and BCFW's Frank-Wolfe corner of one block, for the solvers'
BCFW loop.

Each oracle does the floating-point operations of the generic path (the surrogates'
``value_grad``, the map's ``score`` / ``add``, ``Chain.decode``, ``GenericKernels.corner``) in
the same order, so results are bitwise identical; the dot products and sums that the generic
path leaves to numpy stay numpy calls (BLAS ``ddot``, whose summation order is the library's
and, for BCFW's ``||Psi_i dvec||^2`` over all weights, depends on its thread count; numpy's
pairwise sum): the hinge's two dot products per sample, BCFW's gap and curvature.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from structpred.errors import StructpredError
from structpred.features.hashed import window_add, window_scores
from structpred.outputs import compiled
from structpred.outputs._chain_kernels import (
    smoothed_value,
    top_k_weights,
    viterbi,
    weighted_embedding_minus,
)

#: oracle codes of the compiled loops (``pass_oracle()`` names)
HINGE, TOP_K = 0, 1
ORACLES = {"loss_augmented": HINGE, "smoothed_top_k": TOP_K}
#: samples per block of :meth:`HashedChainOracles.evaluate` (its buffers hold one block's scores)
BLOCK = 512
#: the arrays of the oracles: token ids, sentence offsets, flat labels, position weights, node
#: loss, the surrogate's oracle code and its (K, mu)
HashedChainBundle = namedtuple("HashedChainBundle", ["tok", "off", "y", "pw", "C", "kind", "K", "mu"])


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
    window_scores(tok, a, b, R, W, v)
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
def _sizes(off, R):
    """``(longest sentence, its score length)``."""
    Tmax = 1
    for i in range(off.shape[0] - 1):
        Tmax = max(Tmax, off[i + 1] - off[i])
    return Tmax, Tmax * R + (Tmax - 1) * R * R


def _implements(stub):
    return compiled.implements(stub, HashedChainBundle)


@_implements(compiled.grad_size)
def _grad_size(b):
    return _sizes(b.off, b.C.shape[0])[1]


@_implements(compiled.workspace)
def _workspace(b):
    R = b.C.shape[0]
    Tmax, d = _sizes(b.off, R)
    return np.empty(d), np.empty((Tmax, R)), np.empty(b.K * Tmax, dtype=np.int64), np.empty(b.K), np.empty(b.K)


@_implements(compiled.add)
def _add(b, i, W, c):
    window_add(b.tok, b.off[i], b.off[i + 1], b.C.shape[0], W, c)


@_implements(compiled.grad)
def _grad(b, i, W, g, ws):
    v, Ua, Yb, S, u = ws
    R = b.C.shape[0]
    a, e = b.off[i], b.off[i + 1]
    T = e - a
    d = T * R + (T - 1) * R * R
    Y = Yb[: b.K * T].reshape(b.K, T)
    found = _at(b.tok, a, e, R, W, b.y, b.pw, b.C, b.kind, b.K, b.mu, v[:d], Ua[:T], Y, S, u)
    if found < 0:
        return -1
    weighted_embedding_minus(Y, u, found, b.y[a:e], R, g[:d])
    return d


@_implements(compiled.grad_kept)
def _grad_kept(b, i, W, g, ws, answers):
    """Sample ``i``'s labellings in ``YZ[K a: K b]``, their weights in ``uZ[i]``, their number in
    ``nZ[i]`` (``answers = (YZ, uZ, nZ)``)."""
    v, Ua, _, S, _ = ws
    YZ, uZ, nZ = answers
    R = b.C.shape[0]
    a, e = b.off[i], b.off[i + 1]
    T = e - a
    d = T * R + (T - 1) * R * R
    Y = YZ[b.K * a: b.K * e].reshape(b.K, T)
    found = _at(b.tok, a, e, R, W, b.y, b.pw, b.C, b.kind, b.K, b.mu, v[:d], Ua[:T], Y, S, uZ[i])
    if found < 0:
        return -1
    nZ[i] = found
    weighted_embedding_minus(Y, uZ[i], found, b.y[a:e], R, g[:d])
    return d


@_implements(compiled.kept_grad)
def _kept_grad(b, i, answers, g):
    YZ, uZ, nZ = answers
    R = b.C.shape[0]
    a, e = b.off[i], b.off[i + 1]
    T = e - a
    d = T * R + (T - 1) * R * R
    weighted_embedding_minus(YZ[b.K * a: b.K * e].reshape(b.K, T), uZ[i], nZ[i], b.y[a:e], R, g[:d])
    return d


@njit(cache=True)
def evaluate(tok, off, sdo, y, pw, C, kind, K, mu, W, i0, i1, V, G, L, values, pred):
    """The samples ``i0 <= i < i1`` at ``W``: the MAP labelling into ``pred`` and, for the
    smoothed hinge, its ``values``; for the hinge, the scores ``V`` and gradients ``G`` (sample
    ``i`` at ``sdo[i] - sdo[i0]``) and the node losses ``L[a + t] = C[y_t, y*_t]`` of its value
    (summed by the caller).  Returns ``False`` on non-finite scores."""
    R = C.shape[0]
    Tmax, _ = _sizes(off, R)
    Ua = np.empty((Tmax, R))
    Yb = np.empty(K * Tmax, dtype=np.int64)
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
def frank_wolfe_corner(tok, off, y, pw, C, i, W, mu_i, v, dvec, LM, L, G):
    """Block ``i``'s Frank-Wolfe corner (BCFW's, :meth:`HashedChainOracles.corner`): the score
    ``v`` at ``W``, the loss-augmented labelling ``s``, ``dvec = phi(s) - mu_i``, the products ``LM = A_y * Mu`` of
    the linear loss, the node losses ``L = C[y, s]`` and ``G = Psi_i dvec`` (its norm's vector);
    returns ``False`` on non-finite scores."""
    R = C.shape[0]
    a, b = off[i], off[i + 1]
    T = b - a
    d = T * R + (T - 1) * R * R
    window_scores(tok, a, b, R, W, v)
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
    window_add(tok, a, b, R, G, dvec[:d])
    return True


class HashedChainOracles:
    """The oracles above bound to a chain space, a hashed window map and the checked labels."""

    #: the compiled passes its oracles serve
    passes = ("sgd_pass", "anchor", "svrg_pass")
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
        self.offset = float(space.loss_offset)
        self._corner = None

    def bundle(self, oracle) -> HashedChainBundle:
        """The arrays of the compiled oracle ``oracle`` (``(name, params)``, ``pass_oracle()``)."""
        name, params = oracle
        K, mu = params if ORACLES[name] == TOP_K else (1, 1.0)
        return HashedChainBundle(self.tok, self.off, self.y, self.pw, self.C, ORACLES[name], int(K), float(mu))

    def answers(self, oracle):
        """Room for the oracle's answers at every sample (``grad_kept``): labellings, weights, counts."""
        K = self.bundle(oracle).K
        return np.zeros(K * self.off[-1], dtype=np.int64), np.empty((self.n, K)), np.empty(self.n, dtype=np.int64)

    @staticmethod
    def check(ok) -> None:
        if not ok:
            raise StructpredError("scores contain NaN or infinite values")

    def corner(self, i, W, mu_i):
        """``GenericKernels.corner`` compiled: ``(v, phi(s) - mu_i, L(y_i, s), L(y_i, mu_i),
        ||Psi_i (phi(s) - mu_i)||^2)``; the sums stay the same numpy calls (BLAS ``ddot``, whose
        order, for the 65,535 weights of the norm, depends on its thread count; numpy's pairwise
        sum)."""
        if self._corner is None:  # the buffers, for the longest sentence and weights shaped like W
            Tmax = int(self.lengths.max())
            R = self.C.shape[0]
            d = Tmax * R + (Tmax - 1) * R * R
            self._corner = (np.empty(d), np.empty(d), np.empty((Tmax, R)), np.empty(Tmax), np.empty_like(W))
        v, dvec, LM, L, G = self._corner
        T = int(self.lengths[i])
        d = mu_i.shape[0]
        self.check(frank_wolfe_corner(self.tok, self.off, self.y, self.pw, self.C, i, W, mu_i, v, dvec, LM, L, G))
        return v[:d], dvec[:d], float(self.pos[i] @ L[:T]), float(np.sum(LM[:T])) + self.offset, float(G @ G)

    def evaluate(self, W, oracle):
        """``(values of the surrogate per sample, MAP labellings)`` at ``W``, in blocks of
        :data:`BLOCK` samples; the hinge's values as ``Hinge.value_grad`` sums them, ``Chain.loss``
        (position weights @ node losses) plus ``rowdot(v, grad)``, each a numpy dot per sample."""
        b = self.bundle(oracle)
        tok, off, y, pw, C, kind, K, mu = b
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
            self.check(evaluate(tok, off, sdo, y, pw, C, kind, K, mu, W, i0, i1, V, G, L, values, pred))
            if kind == HINGE:
                loss += [float(self.pos[i] @ L[off[i]: off[i + 1]]) for i in range(i0, i1)]
                dots += [float(V[sdo[i] - sdo[i0]: sdo[i + 1] - sdo[i0]] @ G[sdo[i] - sdo[i0]: sdo[i + 1] - sdo[i0]])
                         for i in range(i0, i1)]
        if kind == HINGE:
            values = np.asarray(loss) + np.array(dots)
        return values, np.split(pred, off[1:-1])
