"""The M3N / M4N dual as one quadratic program, solved by an interior point method: a step rule.

For the hinge (M3N) and the max-min margin (M4N, AGM's game) on a space with a marginal
polytope (:class:`~structpred.outputs.base.MarginalPolytope`), the dual of
``(1/n) sum_i S(Psi_i^T w, y_i) + lam/2 ||w||^2`` is

``max_{mu_i in M_i}  (1/n) sum_i h_i(mu_i) + a - lam/2 ||W(mu)||^2,   W(mu) = (1/(lam n)) sum_i Psi_i (phi(y_i) - mu_i)``

with ``h_i(mu) = phi(y_i)^T A mu`` (hinge) or ``min_y' phi(y')^T A mu`` (max-min, M4N (D)).  The
min over ``y'`` is a sum over blocks of minima of linear functions (the space's min-loss lines),
so with one epigraph variable per block the dual is a quadratic program in ``(mu, tau, w)``:

``min lam/2 ||w||^2 - (1/n) [sum_i l_i^T mu_i  or  sum_b tau_b]``
``s.t. A_i mu_i = b_i, mu_i >= 0, tau_b <= (Q_i mu_i)_l (l in block b), w + G (mu - phi) / (lam n) = 0``.

Clarabel (an interior point method) solves it in the first pass.  Its answer is mapped into
each polytope (``into_polytope``) and ``W`` is rebuilt from it with the joint map's ``add``, so
the recorded primal, dual and gap are the library's own functions at a feasible ``mu``: the gap
is certified whatever the QP solver's accuracy.  The rule then declares itself finished.

Sized for problems whose blocks fit one sparse KKT system (the AGM emotion data: 120
sequences, 28k variables, about 20 s); the block rules (:class:`BCFW`, :class:`GBCFW`) are the
ones that scale.
"""

from __future__ import annotations

import time

import clarabel
import numpy as np
from scipy import sparse

from structpred.errors import StructpredError, check_positive, check_positive_int
from structpred.outputs.base import AffineLoss, MarginalPolytope, MinLossLines, require
from structpred.solvers.driver import SolverResult, StepRule, run
from structpred.solvers.gbcfw import maxmin_objectives
from structpred.solvers.problem import check_problem
from structpred.surrogates import Hinge, MaxMinMargin


def _zeros(rows: int, cols: int) -> sparse.csc_matrix:
    return sparse.csc_matrix((rows, cols))


def _block_map(fmap, i: int, size: int) -> sparse.csc_matrix:
    """``Psi_i`` as a sparse ``(prod(weight_shape), size)`` matrix, column ``j`` = ``Psi_i e_j``."""
    W = np.zeros(fmap.weight_shape)
    e = np.zeros(size)
    rows, cols, vals = [], [], []
    for j in range(size):
        W[...] = 0.0
        e[j] = 1.0
        fmap.add(i, W, e)
        e[j] = 0.0
        flat = W.ravel()
        nz = np.flatnonzero(flat)
        rows.append(nz)
        cols.append(np.full(nz.size, j))
        vals.append(flat[nz])
    return sparse.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                             shape=(W.size, size))


def _min_loss_pieces(space, m) -> tuple[sparse.csr_matrix, np.ndarray]:
    """``(Q, starts)`` with ``min_loss(m) = sum_b min_{l in block b} (Q m)_l``, read off the
    space's min-loss lines (``q = Q d`` is linear in the direction ``d``)."""
    e = np.zeros(m.size)
    cols = []
    starts = None
    for j in range(m.size):
        e[j] = 1.0
        _, q, starts = space.min_loss_lines(m, e)
        e[j] = 0.0
        cols.append(q)
    return sparse.csr_matrix(np.column_stack(cols)), np.asarray(starts)


class DualQP(StepRule):
    """Solve the dual of the hinge or max-min margin problem as one quadratic program (see the
    module).  ``tol``: Clarabel's gap and feasibility tolerances; ``max_iter``: its iterations.
    The first pass solves; the rule is then ``finished`` and the driver stops there."""

    name = "DualQP"

    def __init__(self, surrogate, tol: float = 1e-9, max_iter: int = 200):
        if not isinstance(surrogate, (Hinge, MaxMinMargin)):
            raise StructpredError(f"the dual QP solves the hinge (Hinge) or the max-min margin (MaxMinMargin), "
                                  f"got {surrogate!r}")
        super().__init__(surrogate)
        self.tol = check_positive(tol, "tol")
        self.max_iter = check_positive_int(max_iter, "max_iter")

    def init(self, problem) -> None:
        super().init(problem)
        space = problem.space
        require(space, MarginalPolytope, "the dual QP")
        self.hinge = isinstance(self.surrogate, Hinge)
        require(space, AffineLoss if self.hinge else MinLossLines, "the dual QP")
        if not self.hinge:
            self.surrogate.init_state(problem.n)
        self.mu = problem.init_dual()
        self.finished = False
        self.info = {}

    def _program(self):
        """``(P, q, A, b, n_zero_rows, n_nonneg_rows, N)`` of the QP in ``x = (mu, tau, w)``."""
        pb = self.problem
        sp, fm, n, lam = pb.space, pb.fmap, pb.n, pb.lam
        phi = [np.asarray(self.mu[i], dtype=np.float64) for i in range(n)]
        sizes = np.array([p.size for p in phi])
        N, D = int(sizes.sum()), int(np.prod(fm.weight_shape))
        polys = [sp.marginal_polytope(p) for p in phi]
        A_eq = sparse.block_diag([a for a, _ in polys], format="csc")
        b_eq = np.concatenate([b for _, b in polys])
        G = sparse.hstack([_block_map(fm, i, int(sizes[i])) for i in range(n)], format="csc") / (lam * n)
        phi_all = np.concatenate(phi)
        if self.hinge:
            lin = -np.concatenate([np.asarray(sp.loss_scores(pb.y[i]), dtype=np.float64).ravel() for i in range(n)]) / n
            B, Q, S = 0, _zeros(0, N), _zeros(0, 0)
        else:
            pieces = [_min_loss_pieces(sp, p) for p in phi]
            Q = sparse.block_diag([q for q, _ in pieces], format="csc")
            lines = np.concatenate([np.diff(starts) for _, starts in pieces])   # lines per block, all samples
            B = lines.size
            block_of = np.repeat(np.arange(B), lines)
            S = sparse.csc_matrix((np.ones(block_of.size), (np.arange(block_of.size), block_of)), shape=(block_of.size, B))
            lin = np.zeros(N)
        A = sparse.vstack([
            sparse.hstack([A_eq, _zeros(A_eq.shape[0], B), _zeros(A_eq.shape[0], D)]),
            sparse.hstack([G, _zeros(D, B), sparse.eye(D)]),
            sparse.hstack([-Q, S, _zeros(Q.shape[0], D)]),
            sparse.hstack([-sparse.eye(N), _zeros(N, B), _zeros(N, D)]),
        ], format="csc")
        b = np.concatenate([b_eq, G @ phi_all, np.zeros(Q.shape[0] + N)])
        P = sparse.block_diag([_zeros(N + B, N + B), lam * sparse.eye(D)], format="csc")
        q = np.concatenate([lin, np.full(B, -1.0 / n), np.zeros(D)])
        return P, q, A, b, A_eq.shape[0] + D, Q.shape[0] + N, N

    def epoch(self, order) -> None:
        if self.finished:
            return
        t0 = time.perf_counter()
        P, q, A, b, n_zero, n_nonneg, N = self._program()
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        settings.max_threads = 1                       # deterministic (and one core per job)
        settings.direct_solve_method = "faer"          # supernodal LDL: twice qdldl's speed on the emotion QPs
        settings.max_iter = self.max_iter
        settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = self.tol
        cones = [clarabel.ZeroConeT(n_zero), clarabel.NonnegativeConeT(n_nonneg)]
        sol = clarabel.DefaultSolver(P, q, A, b, cones, settings).solve()
        status = str(sol.status).split(".")[-1]
        if status not in ("Solved", "AlmostSolved", "MaxIterations", "AlmostMaxIterations"):
            raise StructpredError(f"the dual QP solver (Clarabel) stopped with status {status}")
        x = np.asarray(sol.x)[:N]
        pb = self.problem
        sp, fm, n = pb.space, pb.fmap, pb.n
        scale = 1.0 / (pb.lam * n)
        self.W[...] = 0.0
        start = 0
        for i in range(n):
            size = np.asarray(self.mu[i]).size
            m = sp.into_polytope(x[start:start + size])
            fm.add(i, self.W, scale * (np.asarray(self.mu[i], dtype=np.float64) - m))   # mu[i] holds phi(y_i) here
            self.mu[i] = m
            start += size
        self.info = {"status": status, "qp_iterations": int(sol.iterations), "qp_seconds": time.perf_counter() - t0}
        self.finished = True

    def objectives(self) -> dict:
        pb = self.problem
        if not self.hinge:
            return maxmin_objectives(pb, self.surrogate, self.W, self.mu)
        primal = pb.primal(self.surrogate, self.W)
        dual = float(np.mean(pb.space.linear_loss(pb.y, self.mu))) + float(pb.space.loss_offset) - pb.regulariser(self.W)
        return {"primal": primal, "dual": dual, "gap": primal - dual}

    def result(self, history) -> SolverResult:
        return SolverResult(self.W, self.mu, history, dict(self.info))


def dual_qp(surrogate, X, y, lam, random_state=None, X_val=None, y_val=None, verbose=False, tol=1e-9,
            max_iter=200) -> SolverResult:
    """:class:`DualQP` on ``(X, y)`` through the driver (one pass)."""
    rule = DualQP(surrogate, tol=tol, max_iter=max_iter)
    problem = check_problem(surrogate.space, X, y, lam)
    return run(rule, problem, n_passes=1, random_state=random_state, X_val=X_val, y_val=y_val, verbose=verbose)
