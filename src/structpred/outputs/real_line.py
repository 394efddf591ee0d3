"""Real-valued outputs with a robust loss, for the loss trick (QS §6 and Example 1.3).

An output is a real number: a scalar ``()`` or a batch ``(n,)``.  :class:`Cauchy` is the
robust regression space of QS's outlier experiment (QS §6, Fig. 1): the loss-trick
decoding (QS Alg. 1, eq. 2) is a one-dimensional non-convex problem solved to global
optimality on the data's range by branch and bound
(:mod:`structpred.outputs._real_line_kernels`).
"""

from __future__ import annotations

import logging

import numpy as np

from structpred.errors import StructpredError, check_positive, check_positive_int
from structpred.outputs import _real_line_kernels as K
from structpred.outputs.base import LossSpace, WeightedDecoding, as_real, as_weights, broadcast_pair

log = logging.getLogger(__name__)

#: ratio of consecutive graded grid points in the gaps between clusters of outputs
GRADING = 2.0
#: size (entries) of the blocks of the grid tables: 32 MiB of float64 each
TABLE_ENTRIES = 1 << 22
#: cap on the search grid's size (the graded points are thinned beyond it)
MAX_GRID = 4096


class Cauchy(LossSpace, WeightedDecoding):
    """Real outputs with the Cauchy (Lorentzian) loss ``L(y, y') = (c^2 / 2) log(1 + ((y - y') / c)^2)``
    (QS Example 1.3, §6; Huber 1981).

    Parameters
    ----------
    c : scale of the loss (> 0): quadratic ``(y - y')^2 / 2`` for ``|y - y'| << c``,
        logarithmic beyond (redescending influence ``rho'(r) = c^2 r / (c^2 + r^2)``).
    n_grid : number of points of the shared search grid (default 128): half uniform on
        ``[min Y, max Y]``, half at quantiles of the training outputs; points adapted to ``c``
        are added (:meth:`grid`).  It only affects speed.
    rtol : the decoder stops when the global minimum is certified to within
        ``rtol * sum_i |alpha_i| rho(max Y - min Y)`` (a bound on ``|F|`` on the range;
        default ``1e-13``).
    max_nodes : cap on the branch-and-bound refinements per query (default 10000); when it
        binds (a warning is logged) the answer is the best point found.

    Notes
    -----
    Decoding: ``argmin_t F(t)``, ``F(t) = sum_i alpha_i rho(t - Y_i)`` (QS eq. 2; eq. 17 for
    the experiment, solved there by a local quasi-Newton method), over the interval
    ``[min Y, max Y]``.  The search is bounded to the data's range on purpose: with negative
    weights ``F`` may decrease without bound outside it (``rho`` grows like ``c^2 log|t|``
    and the weights need not sum to a positive number), so the unconstrained problem has
    no minimiser.  For non-negative weights (e.g. the Nadaraya-Watson weights of the
    robust Nadaraya-Watson estimator, Härdle 1984, which uses this same decoder)
    nothing is lost: every term increases away from the range, so the minimiser over the
    real line lies in it.

    The minimum is *global* (to the tolerance above).  ``F``, ``F'`` and a lower bound on
    ``F''`` (interval arithmetic on ``rho'' in [-1/8, 1]``, term by term) are computed on
    a grid shared by all queries, as matrix products of the weights with tables of ``rho``
    on the grid; a best-first branch and bound then drops every grid interval whose lower
    bound on ``F`` exceeds the best value seen, solves the intervals on which ``F`` is
    certified convex by safeguarded Newton, and bisects the others
    (:func:`~structpred.outputs._real_line_kernels.bnb_one`).
    """

    name = "cauchy"

    def __init__(self, c: float = 1.0, n_grid: int = 128, rtol: float = 1e-13, max_nodes: int = 10000):
        self.c = check_positive(c, "c")
        self.n_grid = check_positive_int(n_grid, "n_grid")
        if self.n_grid < 2:
            raise StructpredError(f"n_grid must be >= 2, got {n_grid!r}")
        self.rtol = check_positive(rtol, "rtol")
        self.max_nodes = check_positive_int(max_nodes, "max_nodes")

    def __repr__(self) -> str:
        return f"Cauchy(c={self.c:g})"

    @property
    def label_shape(self) -> tuple:
        return ()

    def check_labels(self, y) -> np.ndarray:
        """Validate real outputs: finite, shape ``()`` or ``(n,)``; returns them as float64."""
        a = as_real(y, "real outputs")
        if a.ndim > 1:
            raise StructpredError(f"real outputs must have shape () or (n,), got {a.shape}")
        return a

    def rho(self, r) -> np.ndarray:
        """``(c^2 / 2) log(1 + (r / c)^2)``."""
        r = np.asarray(r, dtype=np.float64)
        return 0.5 * self.c ** 2 * np.log1p((r / self.c) ** 2)

    def loss(self, y, y2) -> np.ndarray:
        """``(c^2 / 2) log(1 + ((y - y2) / c)^2)``, broadcast over rows."""
        a, b = self.check_labels(y), self.check_labels(y2)
        broadcast_pair(a, b, "real outputs")
        return self.rho(a - b)

    def objective(self, alpha, Y, t) -> np.ndarray:
        """``F(t) = sum_i alpha_i rho(t - Y_i)`` (what the decoder minimises); ``alpha``
        ``(n_train,)`` or ``(n, n_train)`` and ``t`` ``()`` or ``(n,)`` broadcast row-wise."""
        Y, A, single = self._training(alpha, Y)
        t = self.check_labels(t)
        t1 = np.atleast_1d(t)
        if A.shape[0] != t1.shape[0] and 1 not in (A.shape[0], t1.shape[0]):
            raise StructpredError(f"{A.shape[0]} weight vectors but {t1.shape[0]} points")
        F = np.sum(A * self.rho(t1[:, None] - Y[None, :]), axis=1)
        return F[0] if single and t.ndim == 0 else F

    def _training(self, alpha, Y):
        Y = self.check_labels(Y)
        if Y.ndim != 1 or Y.shape[0] == 0:
            raise StructpredError(f"training outputs must have shape (n_train,) with n_train >= 1, got {Y.shape}")
        A, single = as_weights(alpha, Y.shape[0])
        return np.ascontiguousarray(Y), np.ascontiguousarray(A), single

    def grid(self, Y) -> np.ndarray:
        """The shared search grid on ``[min Y, max Y]`` (sorted, duplicates merged):
        ``n_grid // 2`` uniform points, ``n_grid - n_grid // 2`` quantiles of ``Y``, and points
        adapted to the scale ``c`` (:func:`~structpred.outputs._real_line_kernels.graded_points`:
        a ``c/2``-net of ``Y`` and geometrically graded points in the gaps between clusters)."""
        Ys = np.sort(np.asarray(Y, dtype=np.float64))
        lo, hi = Ys[0], Ys[-1]
        n_u = max(2, self.n_grid // 2)
        n_q = max(2, self.n_grid - n_u)
        q = Ys[np.round(np.linspace(0, Ys.size - 1, n_q)).astype(np.int64)]
        adapted = K.graded_points(Ys, self.c, GRADING)
        room = max(MAX_GRID - n_u - n_q - 2, 2)
        if adapted.size > room:
            adapted = np.sort(adapted)[np.round(np.linspace(0, adapted.size - 1, room)).astype(np.int64)]
        return np.unique(np.concatenate([np.linspace(lo, hi, n_u), q, adapted, [lo, hi]]))

    def _tables(self, g, Y, k0, k1):
        """``rho``, ``rho'`` at grid rows ``k0..k1-1`` and ``rho''`` bounds on their intervals."""
        R0, R1, Cmin, Cmax = (np.zeros((k1 - k0, Y.size)) for _ in range(4))
        K.grid_tables(g, k0, Y, self.c, R0, R1, Cmin, Cmax)
        return R0, R1, Cmin, Cmax

    def weighted_decode(self, alpha, Y) -> np.ndarray:
        """``argmin_{t in [min Y, max Y]} sum_i alpha_i rho(t - Y_i)``, the global minimiser
        (class notes), for weights of any sign, in particular non-negative ones (robust
        Nadaraya-Watson).  ``alpha`` is ``(n_train,)`` (returns a float) or ``(n, n_train)``
        (returns ``(n,)``); ``Y`` is ``(n_train,)``."""
        Y, A, single = self._training(alpha, Y)
        nq = A.shape[0]
        lo, hi = float(Y.min()), float(Y.max())
        if lo == hi:
            out = np.full(nq, lo)
            return out[0] if single else out
        g = self.grid(Y)
        m, n = g.size, Y.size
        eps = self.rtol * np.abs(A).sum(axis=1) * float(self.rho(hi - lo))
        out = np.empty(nq)
        fout = np.empty(nq)
        steps = np.empty(nq, dtype=np.int64)
        closed = np.empty(nq, dtype=np.bool_)
        # tables of (grid block x n_train) and (query block x grid) arrays, each <= TABLE_ENTRIES
        gb = max(1, TABLE_ENTRIES // n)
        qb = max(1, TABLE_ENTRIES // m)
        blocks = [(k0, min(m, k0 + gb)) for k0 in range(0, m, gb)]
        cached = self._tables(g, Y, *blocks[0]) if len(blocks) == 1 else None
        for q0 in range(0, nq, qb):
            q1 = min(nq, q0 + qb)
            Aq = A[q0:q1]
            Ap, An = np.maximum(Aq, 0.0), np.minimum(Aq, 0.0)
            Fg = np.empty((q1 - q0, m))
            Dg = np.empty((q1 - q0, m))
            Ml = np.zeros((q1 - q0, m))
            for k0, k1 in blocks:
                R0, R1, Cmin, Cmax = cached if cached is not None else self._tables(g, Y, k0, k1)
                Fg[:, k0:k1] = Aq @ R0.T
                Dg[:, k0:k1] = Aq @ R1.T
                Ml[:, k0:k1] = Ap @ Cmin.T + An @ Cmax.T
            K.cauchy_decode_batch(Aq, Y, g, Fg, Dg, Ml, self.c, eps[q0:q1], self.max_nodes,
                                  out[q0:q1], fout[q0:q1], steps[q0:q1], closed[q0:q1])
        if not np.all(closed):
            log.warning("%r: branch and bound hit max_nodes=%d on %d of %d queries; their answers are the "
                        "best points found", self, self.max_nodes, int(np.sum(~closed)), nq)
        log.debug("%r: decoded %d queries, %.1f refinements per query on average", self, nq, float(steps.mean()))
        return out[0] if single else out
