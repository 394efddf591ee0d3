"""Separable node losses ``L(y, y') = sum_t w_t C[y_t, y'_t] / sum_t w_t`` (M4N Ex. 2.1, AGM eq. 5).

The parameters and the per-node math that :class:`~structpred.outputs.chain.Chain` and
:class:`~structpred.outputs.tree.Tree` share: the node loss matrix ``C`` (row = truth), the
position weights ``w_t``, and the oracles that only see the unary blocks of an embedding
(``A`` of M4N Assumption 2.1 is zero off the unary blocks): the loss, its linear form, the
loss scores, ``min_loss``, Bayes decoding, the SP-MP step and bounds, the warm-state mixing,
and AGM's exact game (:meth:`NodeLoss.max_min_exact`, :mod:`structpred.outputs._game_kernels`).
"""

from __future__ import annotations

import logging

import numpy as np

from structpred.errors import StructpredError, check_positive
from structpred.outputs import _game_kernels as GK
from structpred.outputs.base import ExactMaxMin, MaxMinResult, as_int_labels
from structpred.outputs.batch import is_ragged

NODE_LOSSES = ("hamming", "zero_one", "absolute", "squared")
#: node losses of the exact game (AGM §3.2) and their closed forms (:func:`_game_kernels.node_game`)
GAME_LOSSES = {"zero_one": GK.ZERO_ONE, "absolute": GK.ABSOLUTE, "squared": GK.SQUARED}

log = logging.getLogger(__name__)


def node_loss_matrix(name: str, R: int) -> np.ndarray:
    """``R x R`` node loss: ``hamming`` / ``zero_one`` ``1[i != j]``, ``absolute`` ``|i - j|``,
    ``squared`` ``(i - j)^2`` (labels as ordered integers)."""
    i = np.arange(R)
    d = i[:, None] - i[None, :]
    if name in ("hamming", "zero_one"):
        return (d != 0).astype(np.float64)
    if name == "absolute":
        return np.abs(d).astype(np.float64)
    if name == "squared":
        return (d * d).astype(np.float64)
    raise StructpredError(f"unknown node loss {name!r}: use one of {', '.join(NODE_LOSSES)} or an R x R matrix")


class NodeLoss:
    """Mixin of the spaces whose outputs are ``T`` labelled nodes with a separable node loss.

    Parameters: ``n_labels`` ``R >= 2``; ``node_loss`` an ``R x R`` matrix (row = true label) or
    a name in :data:`NODE_LOSSES`; ``weights`` ``None`` (uniform), ``"position"`` (``w_t = t``
    for t = 1..T) or a callable ``T -> (T,)`` of positive weights; ``normalize`` divides by
    ``sum_t w_t``; ``iterations_per_node``: ``max_min(v, n_iter=K)`` runs ``K T`` SP-MP
    iterations on ``T`` nodes ("10 x the length of the sequence", M4N §6), else exactly ``K``.
    Its outputs' ``T - 1`` edges make a score ``T R + (T-1) R^2`` long (:meth:`dim`).  The space
    supplies ``split(v) -> (U (T, R), pairwise)`` (views), ``marginals``, ``entropy_coefficients``
    and ``_max_min_one(v, warm, n_iter)``.
    """

    def __init__(self, n_labels: int, node_loss="hamming", weights=None, normalize: bool = True,
                 iterations_per_node: bool = True):
        try:
            R = int(n_labels)
        except (TypeError, ValueError):
            raise StructpredError(f"n_labels must be an integer >= 2, got {n_labels!r}") from None
        if R != n_labels or R < 2:
            raise StructpredError(f"n_labels must be an integer >= 2, got {n_labels!r}")
        self.R = R
        if isinstance(node_loss, str):
            C = node_loss_matrix(node_loss, R)
            self.node_loss_name = node_loss
        else:
            C = np.asarray(node_loss, dtype=np.float64)
            self.node_loss_name = "matrix"
        if C.shape != (R, R) or not np.all(np.isfinite(C)):
            raise StructpredError(f"node_loss must be a finite {R} x {R} matrix, got shape {C.shape}")
        self.node_loss = np.ascontiguousarray(C)
        if not (weights is None or (isinstance(weights, str) and weights == "position") or callable(weights)):
            raise StructpredError(f"weights must be None, 'position' or a callable T -> (T,), got {weights!r}")
        self.weights = weights
        self.normalize = bool(normalize)
        self.iterations_per_node = bool(iterations_per_node)
        self._cmax = float(np.max(np.abs(C))) or 1.0
        self._kind = 1 if np.array_equal(C, 1.0 - np.eye(R)) else 0
        self._weights_cache: dict[int, np.ndarray] = {}
        self._game = self._game_loss(C)
        if self._game is None:
            self.unsupported = {ExactMaxMin: "the exact game (AGM §3.2) solves the node losses zero_one (hamming), "
                                             "absolute and squared, or a positive multiple of one; this node loss "
                                             f"is another {R} x {R} matrix (use SP-MP: max_min, game='spmp')"}

    def _game_loss(self, C):
        """``(kind, scale, base matrix)`` when ``C = scale * base`` for a loss of :data:`GAME_LOSSES`
        (``scale > 0``), else ``None``."""
        scale = C[0, 1]
        for name, kind in GAME_LOSSES.items():
            base = node_loss_matrix(name, self.R)
            if scale > 0 and np.allclose(C, scale * base, rtol=1e-12, atol=0.0):
                return kind, float(scale), base
        return None

    def _loss_repr(self) -> str:
        """``node_loss=..., weights=...`` for the spaces' ``__repr__``."""
        w = "uniform" if self.weights is None else ("position" if isinstance(self.weights, str) else "custom")
        scale = "" if self.normalize else ", normalize=False"
        return f"n_labels={self.R}, node_loss={self.node_loss_name}, weights={w}{scale}"

    @property
    def n_labels(self) -> int:
        return self.R

    @property
    def embedding_dim(self) -> int:
        raise StructpredError(f"a {self.name}'s embedding dimension depends on its number of nodes: use dim(T)")

    def dim(self, T: int) -> int:
        """``T R + (T-1) R^2``: size of a score / embedding of ``T`` nodes (and ``T - 1`` edges)."""
        return T * self.R + (T - 1) * self.R * self.R

    @property
    def label_shape(self) -> tuple:
        return (None,)

    def position_weights(self, T: int) -> np.ndarray:
        """Weights ``w_t / sum w`` of ``T`` nodes (``w_t`` if not ``normalize``), cached."""
        cached = self._weights_cache.get(T)
        if cached is None:
            cached = self._weights_cache[T] = self._position_weights(T)
        return cached

    def _position_weights(self, T: int) -> np.ndarray:
        if self.weights is None:
            w = np.ones(T)
        elif isinstance(self.weights, str):
            w = np.arange(1, T + 1, dtype=np.float64)
        else:
            w = np.asarray(self.weights(T), dtype=np.float64)
            if w.shape != (T,) or not np.all(w > 0):
                raise StructpredError(f"weights({T}) must be {T} positive numbers, got {w!r}")
        return w / w.sum() if self.normalize else w

    def weighted_loss(self, T: int) -> np.ndarray:
        """``(T, R, R)`` per-node loss blocks ``A_t = w_t C / sum w`` (or ``w_t C``)."""
        return np.ascontiguousarray(self.position_weights(T)[:, None, None] * self.node_loss[None])

    def spmp_step(self, T: int) -> float:
        """SP-MP step ``eta = 1 / (2 max_t max_ij |A_t[i, j]|)`` (M4N App. G.2, on the raw entropies)."""
        return 1.0 / (2.0 * self._cmax * float(np.max(self.position_weights(T))))

    # --- labels and batches --------------------------------------------------------------
    def node_labels(self, y) -> np.ndarray:
        """One output's labels as a validated int64 ``(T,)`` array, ``T >= 1``, values in 0..R-1."""
        s = as_int_labels(y, f"{self.name} labels")
        if s.ndim != 1 or s.shape[0] < 1:
            raise StructpredError(f"{self.name} labels must be a non-empty 1-d array, got shape {s.shape}")
        if s.min() < 0 or s.max() >= self.R:
            raise StructpredError(f"{self.name} labels must lie in 0..{self.R - 1}, got {s.min()}..{s.max()}")
        return s

    def _map(self, fn, *args):
        """``fn`` on one sample, or on each sample of ragged batches of the same length."""
        if is_ragged(args[0]):
            if len(args) > 1 and any(len(a) != len(args[0]) for a in args[1:]):
                raise StructpredError(f"batch sizes differ: {[len(a) for a in args]}")
            return [fn(*xs) for xs in zip(*args)]
        return fn(*args)

    # --- per-node math (unary blocks only) -------------------------------------------------
    def _pair_loss(self, a, b) -> float:
        """``sum_t w_t C[a_t, b_t] / sum w`` of two validated label arrays of one length."""
        return float(self.position_weights(a.shape[0]) @ self.node_loss[a, b])

    def _loss_rows(self, s) -> np.ndarray:
        """``(T, R)`` rows ``w_t C[s_t, :]``: the unary block of ``A^T phi(s)``."""
        return self.position_weights(s.shape[0])[:, None] * self.node_loss[s]

    def _linear_loss_nodes(self, s, Mu) -> float:
        """``phi(s)^T A mu = sum_t w_t (C mu_t)[s_t]`` from the unary marginals ``Mu (T, R)``."""
        if Mu.shape[0] != s.shape[0]:
            raise StructpredError(f"labels of length {s.shape[0]} but marginals of length {Mu.shape[0]}")
        return float(np.sum(self._loss_rows(s) * Mu))

    def _min_loss_nodes(self, Mu) -> float:
        """``min_y' phi(y')^T A mu = sum_t w_t min_i (C mu_t)[i]`` (the nodes are independent)."""
        return float(self.position_weights(Mu.shape[0]) @ np.min(Mu @ self.node_loss.T, axis=1))

    def min_loss_lines(self, mu, d):
        """``min_loss(mu + g d) = sum_t min_i w_t (C (Mu_t + g D_t))[i]``: one block of ``R`` lines per
        node (unary parts ``Mu``, ``D`` of ``mu``, ``d``; weights as :meth:`min_loss`)."""
        Mu, D = self.split(mu)[0], self.split(d)[0]
        w = self.position_weights(Mu.shape[0])[:, None]
        C = self.node_loss
        return ((w * (Mu @ C.T)).ravel(), (w * (D @ C.T)).ravel(),
                np.arange(0, Mu.size + 1, self.R, dtype=np.int64))

    def _bayes_nodes(self, Mu) -> np.ndarray:
        """``argmin_y' sum_t w_t sum_i Mu[t, i] C[i, y'_t]``: per node (positive weights)."""
        return np.argmin(Mu @ self.node_loss, axis=1).astype(np.int64)

    def entropy(self, mu):
        """Tree entropy ``sum_e H(mu_e) - sum_t (deg_t - 1) H(mu_t)`` (M4N App. G.2) of consistent
        marginals, ``-sum_j c_j mu_j log mu_j`` with the space's ``entropy_coefficients``; per output."""
        def one(m):
            c = np.asarray(self.entropy_coefficients(m))
            m = np.asarray(m, dtype=np.float64)
            pos = m > 0
            return float(-np.sum(c[pos] * m[pos] * np.log(m[pos])))

        return np.atleast_1d(np.asarray(self._map(one, mu)))

    # --- max-min oracle (M4N eq. 14) --------------------------------------------------------
    def max_min(self, v, warm=None, n_iter: int = 10) -> MaxMinResult:
        """SP-MP for ``max_mu min_nu sum_t nu_t^T A_t mu_t + <v, mu>`` (M4N eq. 14, App. G.2).

        ``mu`` on the marginal polytope (sum-product projections), ``nu`` on a product of
        simplices (softmax).  The averaged pair is made exactly feasible, then ``value =
        min_nu F(nu, mu_bar)`` and ``upper = max_mu F(nu_bar, mu)`` (max-product) are exact,
        so ``gap`` is the exact duality gap of the averaged pair.  ``warm``: a previous
        ``state`` (or ``None``).  Batches (lists) return a :class:`MaxMinResult` of lists / arrays.
        """
        n_iter = int(n_iter)
        if n_iter < 0:
            raise StructpredError("n_iter must be >= 0")
        if is_ragged(v):
            ws = warm if warm is not None else self.init_maxmin_state(len(v))
            res = _batch([self._max_min_one(s, (a, b), n_iter) for s, a, b in zip(v, ws[0], ws[1])])
            res.state = ([s[0] for s in res.state], [s[1] for s in res.state])
            return res
        return self._max_min_one(v, warm if warm is not None else (None, None), n_iter)

    def max_min_exact(self, v, warm=None, tol: float = 1e-9, max_iter: int = 1000) -> MaxMinResult:
        """AGM's exact game (AGM §3.2): ``min_u sum_t max_{r in simplex} a_t(u)^T r + w_t min_i (C r)_i`` (eq. 7-8).

        The Lagrangian dual over the multipliers ``u`` of the edge / parent consistency splits
        per node into the closed forms of the zero-one, absolute and squared node losses;
        BFGS minimises it (:func:`structpred.outputs._game_kernels.solve_game`) from ``warm``
        (a previous ``state``) or from zero multipliers, until ``upper - value <= tol`` or
        ``max_iter`` iterations.  ``mu``: a feasible adversary recovered from the dual's
        optimal pieces (node marginals from the nodes' optimal faces, edge joints by the earth
        mover's problem of eq. 9); ``value = min_nu F(nu, mu)`` (exact), ``nu`` that best
        response; ``upper`` the dual at the best multipliers found (``state``, an upper bound
        by weak duality); ``gap = upper - value`` (a rounding below zero reads 0).  Batches
        (lists) return lists / arrays.
        """
        if self._game is None:
            raise StructpredError(f"{self!r} has no exact game: {self.unsupported[ExactMaxMin]}")
        tol = check_positive(tol, "tol")
        max_iter = int(max_iter)
        if max_iter < 0:
            raise StructpredError(f"max_iter must be >= 0, got {max_iter}")
        if is_ragged(v):
            ws = warm if warm is not None else [None] * len(v)
            return _batch([self._max_min_exact_one(s, u, tol, max_iter) for s, u in zip(v, ws)])
        return self._max_min_exact_one(v, warm, tol, max_iter)

    def _exact_game(self, parents, U, P, warm, tol, max_iter) -> MaxMinResult:
        """:meth:`max_min_exact` of one tree (``parents``, unaries ``U``, edge scores ``P``)."""
        T, R = U.shape
        kind, scale, base = self._game
        if warm is None:
            u = np.zeros((T - 1, R))
        else:
            u = np.array(warm, dtype=np.float64)
            if u.shape != ((T - 1) * R,):
                raise StructpredError(f"warm state does not fit a {self.name} of {T} nodes: "
                                      f"expected {(T - 1) * R} multipliers, got shape {u.shape}")
            u = u.reshape(T - 1, R)
        node, edge, nu = np.empty((T, R)), np.empty((T - 1, R, R)), np.empty((T, R))
        lower, upper, it = GK.solve_game(parents, U, P, self.position_weights(T) * scale, kind, base, u, tol,
                                         max_iter, warm is None, node, edge, nu)
        if upper - lower > tol:
            log.debug("%r: exact game of %d nodes stopped after %d iterations at gap %.2e > tol %.1e",
                      self, T, it, upper - lower, tol)
        mu = np.concatenate([node.ravel(), edge.ravel()])
        return MaxMinResult(mu, nu.ravel(), max(upper - lower, 0.0), lower, upper, u.ravel())

    def init_maxmin_state(self, n: int):
        """Cold-start states for ``n`` outputs: ``[None] * n`` per player (sizes unknown)."""
        return [None] * int(n), [None] * int(n)

    def _warm(self, warm, T: int):
        """Copies of a warm state ``(theta, log_nu)`` for ``T`` nodes; ``None`` entries start
        cold (``theta = 0``: the uniform distribution; ``log_nu = -log R``)."""
        theta, lnu = warm
        theta = np.zeros(self.dim(T)) if theta is None else np.array(theta, dtype=np.float64)
        lnu = np.full(T * self.R, -np.log(self.R)) if lnu is None else np.array(lnu, dtype=np.float64)
        if theta.shape != (self.dim(T),) or lnu.shape != (T * self.R,):
            raise StructpredError(f"warm state does not fit a {self.name} of {T} nodes")
        return theta, lnu

    def spmp_iteration_count(self, n_iter: int, T: int) -> int:
        """SP-MP's iterations of one max-min call with ``n_iter`` on ``T`` nodes: ``n_iter T`` with
        ``iterations_per_node``, else ``n_iter``.  The one place of this rule: ``max_min`` runs it,
        and the compiled sequence oracles take its count per sample
        (``_sequence_oracles.SequenceChainOracles.iterations``)."""
        return n_iter * T if self.iterations_per_node else n_iter

    def _maxmin_lower(self, v, mu) -> float:
        """``min_nu F(nu, mu) = sum_t min_i (A_t mu_t)[i] + <v, mu>`` (exact)."""
        Mu, _ = self.split(mu)
        return self._min_loss_nodes(Mu) + float(v @ mu)

    def _against(self, U, nu) -> np.ndarray:
        """``U_t + A_t^T nu_t = U_t + w_t nu_t^T C``: the max player's unaries against ``nu (T, R)``
        (``upper`` is the max-product score of these unaries with the pairwise scores)."""
        return np.ascontiguousarray(U + self.position_weights(U.shape[0])[:, None] * (nu @ self.node_loss))

    def mix_warm_state(self, lmu, lnu, eps: float) -> None:
        """In place: mix both warm iterates with the uniform distribution in the mean-parameter
        space, as the other spaces do (see :func:`structpred.solvers.gbcfw`).

        ``mu``: its marginals (sum-product) are mixed, ``(1 - eps) mu + eps * uniform`` (a
        convex combination of consistent marginals is consistent), and mapped back to the
        canonical natural parameters of the tree, ``log mu_e`` on the edges and
        ``-(deg_t - 1) log mu_t`` on the nodes.  Tempering ``theta`` instead does not bound
        the distance to the next best response: on CK emotion, GBCFW's mean oracle gap grew
        to 27 at lambda = 2^-4 (0.06 cold).  ``nu``: ``(1 - eps) nu + eps / R``.
        """
        R = self.R
        m = self.marginals(lmu)
        node, edge = self.split(m)
        m *= 1.0 - eps
        node += eps / R
        edge += eps / (R * R)
        lmu[:] = np.log(m) * self.entropy_coefficients(m)
        lnu[:] = np.logaddexp(lnu + np.log1p(-eps), np.log(eps / R))


def _batch(rs) -> MaxMinResult:
    """One :class:`MaxMinResult` of lists / arrays from per-output results (``state``: their list)."""
    return MaxMinResult([r.mu for r in rs], [r.nu for r in rs], np.array([r.gap for r in rs]),
                        np.array([r.value for r in rs]), np.array([r.upper for r in rs]), [r.state for r in rs])


__all__ = ["GAME_LOSSES", "NODE_LOSSES", "NodeLoss", "node_loss_matrix"]
