"""A chain's compiled oracles (:mod:`structpred.outputs.compiled`) on the dense sequence map
(per-position features, one transition matrix: OCR).

:class:`SequenceChainOracles` binds them to a :class:`~structpred.outputs.Chain`, a
:class:`~structpred.features.joint.SequenceJoint` without edge features and the labels
(``Chain.compiled_oracles`` returns it); the compiled passes of BCFW (Frank-Wolfe steps: the
loss-augmented Viterbi labelling, its gap, curvature and move), GBCFW (the SP-MP max-min oracle)
and SDCA (the marginals, by the scaled projection, and the step on the segment) run on its bundle.  The dual blocks are ragged (sample ``i``'s marginals ``[mu_U (T_i, R) | mu_P
(T_i - 1, R, R)]``), so the pass works on one flat array of them, ``mu[mo[i]:mo[i + 1]]``, and the
SP-MP warm states ``(theta, log nu)`` on two more (``theta`` at ``mo``, ``log nu`` at ``R off``):
:meth:`SequenceChainOracles.dual_array` and :meth:`~SequenceChainOracles.game` rebind the
solver's and the surrogate's per-sample lists to views of them, so both keep seeing their blocks.

One oracle call is the generic one (``Chain._max_min_one`` then ``Chain.mix_warm_state``):
SP-MP from the warm state with the iterations the space counts for the sample
(``Chain.spmp_iteration_count``, the one place of ``iterations_per_node``'s rule, which
:meth:`SequenceChainOracles.iterations` asks once per sample), the averages made exactly
feasible, the lower bound ``sum_t w_t min_j (C mu_t)_j + <v, mu>``, the upper bound by Viterbi
against ``nu``, and the warm state mixed with the uniform distribution in the mean parameters,
folded into the kernel (the last iterate's marginals from its scaled potentials, not a separate
sum-product).
The same math, but sums the generic path leaves to BLAS or numpy run in loops here, so results
agree to round-off, not bitwise (``tests/test_sequence_oracles.py``).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from structpred.errors import StructpredError
from structpred.features.joint import sequence_add, sequence_scores
from structpred.outputs import compiled
from structpred.outputs._chain_kernels import scaled_marginals, spmp, viterbi
from structpred.outputs._entropy_step import entropy_segment_step
from structpred.outputs._tree_kernels import make_feasible

#: the arrays of the oracles: frames, sequence offsets, block offsets ``mo``, each sample's first
#: weight row, labels (flat), position weights (flat), node loss, its kind, the loss's constant,
#: SP-MP's step per sample, and work for the norm (weights' shape) and for a block
SequenceChainBundle = namedtuple("SequenceChainBundle", ["frames", "off", "mo", "row0", "y", "pw", "C", "kind",
                                                         "offset", "eta", "work", "dvec"])
#: SP-MP's settings (``n_iter``: each sample's iterations), the flat warm states, the per-sample
#: gaps and work (per pass)
SequenceChainGame = namedtuple("SequenceChainGame", ["n_iter", "warm", "warm_mix", "LMU", "LNU", "gaps",
                                                     "Lw", "nu", "Ua", "lab", "parents"])


def _implements(stub):
    return compiled.implements(stub, SequenceChainBundle)


@_implements(compiled.block)
def _block(b, mu, i):
    return mu[b.mo[i]: b.mo[i + 1]]


@_implements(compiled.block_size)
def _block_size(b):
    size = 1
    for i in range(b.mo.shape[0] - 1):
        size = max(size, b.mo[i + 1] - b.mo[i])
    return size


@_implements(compiled.n_blocks)
def _n_blocks(b):
    return b.off.shape[0] - 1


@_implements(compiled.scores)
def _scores(b, i, W, v):
    sequence_scores(b.frames, b.off[i], b.off[i + 1], b.row0[i], W, v)


@_implements(compiled.add)
def _add(b, i, W, c):
    sequence_add(b.frames, b.off[i], b.off[i + 1], b.row0[i], W, c)


@_implements(compiled.norm2)
def _norm2(b, i, c):
    """``||Psi_i c||^2`` (``b.work``: the weights' shape, zeroed again after use)."""
    b.work[:] = 0.0
    sequence_add(b.frames, b.off[i], b.off[i + 1], 0, b.work, c)
    s = 0.0
    w = b.work.reshape(b.work.size)
    for j in range(w.shape[0]):
        s += w[j] * w[j]
    return s


@_implements(compiled.lines)
def _lines(b, i, m, out, starts):
    """One group of ``R`` lines per node: ``out[t R + j] = w_t (C m_t)_j`` (``Chain.min_loss_lines``)."""
    a = b.off[i]
    T = b.off[i + 1] - a
    R = b.C.shape[0]
    for t in range(T):
        w = b.pw[a + t]
        for j in range(R):
            s = 0.0
            for r in range(R):
                s += m[t * R + r] * b.C[j, r]
            out[t * R + j] = w * s
        starts[t] = t * R
    starts[T] = T * R
    return T


@_implements(compiled.maxmin)
def _maxmin(b, game, i, v, mubar):
    """SP-MP on sample ``i`` from its warm state (cold without ``warm``), as ``Chain._max_min_one``;
    ``game.gaps[i]`` receives the upper minus the lower bound; then the warm state is mixed
    (``warm_mix``).  Returns the lower bound (NaN, and a NaN answer, on non-finite scores)."""
    for j in range(v.shape[0]):
        if not np.isfinite(v[j]):      # the pass's caller raises on the weights that follow
            mubar[:] = np.nan
            game.gaps[i] = np.nan
            return np.nan
    a = b.off[i]
    T = b.off[i + 1] - a
    R = b.C.shape[0]
    U = v[: T * R].reshape(T, R)
    P = v[T * R:].reshape(T - 1, R, R)
    th = game.LMU[b.mo[i]: b.mo[i + 1]]
    thU = th[: T * R].reshape(T, R)
    thP = th[T * R:].reshape(T - 1, R, R)
    lnu = game.LNU[R * a: R * (a + T)].reshape(T, R)
    if not game.warm:
        th[:] = 0.0
        lnu[:] = -np.log(R)
    Lw = game.Lw[:T]
    for t in range(T):
        for r in range(R):
            for j in range(R):
                Lw[t, r, j] = b.pw[a + t] * b.C[r, j]
    node = mubar[: T * R].reshape(T, R)
    edge = mubar[T * R:].reshape(T - 1, R, R)
    nu = game.nu[:T]
    n_iter = game.n_iter[i]
    # the warm state's mix happens in the kernel, after the iterations: the bounds below use
    # only the averages, which it leaves alone
    spmp(U, P, Lw, b.kind, b.eta[i], n_iter, thU, thP, lnu, node, edge, nu, game.warm_mix if game.warm else 0.0)
    make_feasible(game.parents[:T], node, edge, nu)
    lower = 0.0
    for t in range(T):
        low = np.inf
        for j in range(R):
            s = 0.0
            for r in range(R):
                s += node[t, r] * b.C[j, r]
            low = min(low, s)
        lower += b.pw[a + t] * low
    vmu = 0.0
    for j in range(mubar.shape[0]):
        vmu += v[j] * mubar[j]
    lower += vmu
    Ua = game.Ua[:T]
    for t in range(T):
        for j in range(R):
            s = 0.0
            for r in range(R):
                s += nu[t, r] * b.C[r, j]
            Ua[t, j] = U[t, j] + b.pw[a + t] * s
    upper = viterbi(Ua, P, game.lab[:T])
    game.gaps[i] = upper - lower
    return lower


@_implements(compiled.loss_augmented)
def _loss_augmented(b, i, v):
    """The labels ``argmax_y' L(y_i, y') + <phi(y'), v>``: Viterbi with ``w_t C[y_t, :]`` added to
    the unaries (``Chain.loss_augmented``)."""
    a = b.off[i]
    T = b.off[i + 1] - a
    R = b.C.shape[0]
    Ua = np.empty((T, R))
    for t in range(T):
        for j in range(R):
            Ua[t, j] = v[t * R + j] + b.pw[a + t] * b.C[b.y[a + t], j]
    s = np.empty(T, dtype=np.int64)
    viterbi(Ua, v[T * R: T * R + (T - 1) * R * R].reshape(T - 1, R, R), s)
    return s


@njit(cache=True)
def _toward_labels(b, i, s, mu_i):
    """``b.dvec[:k] = phi(s) - mu_i`` (the block's Frank-Wolfe direction); returns ``k``."""
    a = b.off[i]
    T = b.off[i + 1] - a
    R = b.C.shape[0]
    k = mu_i.shape[0]
    d = b.dvec[:k]
    for j in range(k):
        d[j] = -mu_i[j]
    for t in range(T):
        d[t * R + s[t]] += 1.0
        if t + 1 < T:
            d[T * R + t * R * R + s[t] * R + s[t + 1]] += 1.0
    return k


@_implements(compiled.corner)
def _corner(b, i, v, s, mu_i):
    """``(<v, phi(s) - mu_i> + dl, dl, ||Psi_i (phi(s) - mu_i)||^2)``, ``dl = L(y_i, s) -
    L(y_i, mu_i) = sum_t w_t (C[y_t, s_t] - (C mu_t)[y_t])`` (``GenericKernels.corner``)."""
    a = b.off[i]
    T = b.off[i + 1] - a
    R = b.C.shape[0]
    k = _toward_labels(b, i, s, mu_i)
    vd = 0.0
    for j in range(k):
        vd += v[j] * b.dvec[j]
    l_s = 0.0
    l_mu = 0.0
    for t in range(T):
        yt = b.y[a + t]
        l_s += b.pw[a + t] * b.C[yt, s[t]]
        lm = 0.0
        for j in range(R):
            lm += b.C[yt, j] * mu_i[t * R + j]
        l_mu += b.pw[a + t] * lm
    dl = (l_s + b.offset) - (l_mu + b.offset)
    return vd + dl, dl, compiled.norm2(b, i, b.dvec[:k])


@_implements(compiled.toward)
def _toward(b, i, W, mu_i, s, gamma, scale, coef):
    """``W += Psi_i (-gamma scale) (phi(s) - mu_i)``, ``mu_i += gamma (phi(s) - mu_i)``."""
    k = _toward_labels(b, i, s, mu_i)
    f = -gamma * scale
    for j in range(k):
        coef[j] = f * b.dvec[j]
    sequence_add(b.frames, b.off[i], b.off[i + 1], b.row0[i], W, coef[:k])
    for j in range(k):
        mu_i[j] += gamma * b.dvec[j]


@_implements(compiled.entropy_block)
def _entropy_block(b, i, v, mu_i, scale, out, work):
    """SDCA's step for the CRF (``GenericKernels.sdca_pass``): ``out = mu_i + g (q - mu_i)``, ``q``
    the marginals of ``v`` (:func:`scaled_marginals`: sum-product's to round-off) and ``g`` the dual's maximiser on the segment
    (:func:`entropy_segment_step`, the tree entropy's coefficients ``1`` on the edges, ``1 -
    deg_t`` on the nodes)."""
    a = b.off[i]
    T = b.off[i + 1] - a
    R = b.C.shape[0]
    k = mu_i.shape[0]
    scaled_marginals(v[: T * R].reshape(T, R), v[T * R:].reshape(T - 1, R, R), work[: T * R].reshape(T, R),
                     work[T * R:].reshape(T - 1, R, R))
    vd = 0.0
    for j in range(k):
        work[j] -= mu_i[j]
        vd += v[j] * work[j]
    for j in range(k):
        out[j] = 1.0
    if T > 1:
        for j in range(T * R):
            out[j] = -1.0
        for j in range(R):
            out[j] = 0.0
            out[(T - 1) * R + j] = 0.0
    g = entropy_segment_step(mu_i, work, out, vd, compiled.norm2(b, i, work) * scale)
    for j in range(k):
        out[j] = mu_i[j] + g * work[j]


def _rebind(rows, flat, offsets, fill):
    """``flat`` holding ``rows`` (a list, rebound in place to views of ``flat``; ``None`` rows:
    ``fill``); a new flat array unless ``rows`` are views of ``flat`` already."""
    if flat is not None and all(r is not None and r.base is flat for r in rows):
        return flat
    flat = np.empty(offsets[-1])
    for i, r in enumerate(rows):
        part = flat[offsets[i]: offsets[i + 1]]
        if r is None:
            part[:] = fill
        elif np.shape(r) != part.shape:
            raise StructpredError(f"block {i} has shape {np.shape(r)}, expected {part.shape}")
        else:
            part[:] = r
        rows[i] = part
    return flat


class SequenceChainOracles:
    """The oracles above bound to a chain space, a :class:`SequenceJoint` without edge features
    and the checked labels."""

    #: the compiled passes its oracles serve
    passes = ("bcfw_pass", "gbcfw_pass", "sdca_pass")
    #: no compiled primal passes: the primal rules step through the surrogate
    oracles = ()

    def __init__(self, space, fmap, y):
        seq = fmap.seq
        self.space = space
        self.n = fmap.n
        R = space.n_labels
        lengths = np.diff(seq.offsets).astype(np.int64)
        dims = lengths * R + (lengths - 1) * R * R
        groups = np.zeros(self.n, dtype=np.int64) if seq.groups is None else np.asarray(seq.groups, dtype=np.int64)
        self._bundle = SequenceChainBundle(
            np.ascontiguousarray(seq.frames, dtype=np.float64), np.asarray(seq.offsets, dtype=np.int64),
            np.concatenate([[0], np.cumsum(dims)]).astype(np.int64), groups * seq.n_features,
            np.concatenate(y).astype(np.int64), np.concatenate([space.position_weights(int(T)) for T in lengths]),
            np.ascontiguousarray(space.node_loss), np.int64(space._kind), float(space.loss_offset),
            np.array([space.spmp_step(int(T)) for T in lengths]), np.zeros(fmap.weight_shape), np.empty(dims.max()))
        self.Tmax = int(lengths.max())
        self.lengths = lengths
        self._iterations: dict[int, np.ndarray] = {}   # SP-MP's n_iter -> each sample's iterations
        self._mu = self._lmu = self._lnu = None

    def bundle(self, oracle=None) -> SequenceChainBundle:
        """The arrays of the oracles (the dual passes name no surrogate oracle)."""
        return self._bundle

    def dual_array(self, mu) -> np.ndarray:
        """The solver's blocks (a list) as one flat array, the list rebound to views of it."""
        self._mu = _rebind(mu, self._mu, self._bundle.mo, np.nan)
        return self._mu

    @staticmethod
    def serves_game(surrogate) -> bool:
        """SP-MP is compiled; the exact game runs in the generic loop."""
        return surrogate.game == "spmp"

    def iterations(self, n_iter: int) -> np.ndarray:
        """SP-MP's iterations of each sample's oracle call with ``n_iter``, as the space counts them
        (:meth:`~structpred.outputs.node_loss.NodeLoss.spmp_iteration_count`)."""
        if n_iter not in self._iterations:
            self._iterations[n_iter] = np.array([self.space.spmp_iteration_count(n_iter, int(T)) for T in self.lengths],
                                                dtype=np.int64)
        return self._iterations[n_iter]

    def game(self, surrogate) -> SequenceChainGame:
        """SP-MP's settings and the surrogate's warm states (lists rebound to views of two flat
        arrays; cold entries ``theta = 0``, ``log nu = -log R``) for one pass."""
        s = surrogate
        if not self.serves_game(s):
            raise StructpredError(f"the compiled GBCFW pass runs SP-MP only, not game={s.game!r}")
        b = self._bundle
        R = b.C.shape[0]
        self._lmu = _rebind(s.LMU, self._lmu, b.mo, 0.0)
        self._lnu = _rebind(s.LNU, self._lnu, R * b.off, -np.log(R))
        Tm = self.Tmax
        return SequenceChainGame(self.iterations(s.n_iter), bool(s.warm_start),
                                 float(s.warm_mix), self._lmu, self._lnu, s.gaps, np.empty((Tm, R, R)),
                                 np.empty((Tm, R)), np.empty((Tm, R)), np.empty(Tm, dtype=np.int64),
                                 np.arange(-1, Tm - 1).astype(np.int64))
