"""The adversarial bipartite matching game solved exactly (Fathony, Behpour, Zhang, Ziebart,
"Efficient and Consistent Adversarial Bipartite Matching", ICML 2018, §3): the max-min game of
the Permutation space with the normalised Hamming loss,

    max_{Q in B} min_{P in B} -<P, Q> / M + <v, Q>  =  max_{Q in B} <v, Q> - max_sigma <P_sigma, Q> / M,

over the Birkhoff polytope ``B`` (doubly stochastic ``M x M`` matrices: the marginals of the
players' distributions over permutations, which is the paper's reduction of the game from ``M!``
to ``M^2`` variables).  The inner minimum is attained at a permutation (one assignment), so the
game is the linear program ``max <v, Q> - t / M`` over ``Q in B`` and ``t >= <P_sigma, Q>`` for
every permutation ``sigma``.  The paper solves it with ADMM; here the ``M!`` constraints enter by
constraint generation: solve the LP with a working set of permutations (scipy's HiGHS), add the
Hungarian best response ``argmax_sigma <P_sigma, Q>`` to the current ``Q``, stop when it violates
``t`` by at most ``tol`` (finitely many permutations: it terminates).

Both reported bounds are exact for the matrices they name, whatever the LP's tolerances:
``value = <v, Q> - max_sigma <P_sigma, Q> / M`` at the final ``Q`` (the maximiser's guarantee,
one assignment), and ``upper = max_sigma <v - nu / M, P_sigma>`` at ``nu = sum_sigma lambda_sigma
P_sigma``, the convex combination of the working set's permutations weighted by the LP's dual
multipliers of their constraints (a feasible minimiser: any ``nu in B`` bounds the game from
above).  The working set is the warm state of the next call on the same sample.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment, linprog
from scipy.sparse import csr_matrix, hstack, vstack

from structpred.errors import StructpredError
from structpred.outputs._permutation_kernels import round_birkhoff


def _assignment(S: np.ndarray) -> tuple[np.ndarray, float]:
    """``(sigma, max_sigma sum_j S[j, sigma_j])``."""
    _, col = linear_sum_assignment(S, maximize=True)
    return col.astype(np.int64), float(S[np.arange(S.shape[0]), col].sum())


def _birkhoff_rows(M: int):
    """The equality constraints ``Q 1 = 1``, ``Q^T 1 = 1`` on ``x = (vec Q, t)`` (row-major ``Q``)."""
    rows, cols = [], []
    for j in range(M):
        for r in range(M):
            rows += [j, M + r]
            cols += [j * M + r, j * M + r]
    A = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(2 * M, M * M))
    return hstack([A, csr_matrix((2 * M, 1))]).tocsr(), np.ones(2 * M)


def _cuts(M: int, sigmas: list) -> csr_matrix:
    """``<P_sigma, Q> - t <= 0`` for each ``sigma`` of the working set."""
    n = len(sigmas)
    rows = np.repeat(np.arange(n), M + 1)
    cols = np.concatenate([np.append(np.arange(M) * M + s, M * M) for s in sigmas])
    vals = np.tile(np.append(np.ones(M), -1.0), n)
    return csr_matrix((vals, (rows, cols)), shape=(n, M * M + 1))


def solve_game(V: np.ndarray, warm=None, tol: float = 1e-9, max_iter: int = 1000):
    """The game at the ``M x M`` scores ``V``: ``(Q, nu, value, upper, working set)`` (see the
    module's docstring); ``warm``: a working set of permutations from an earlier call."""
    M = V.shape[0]
    sigmas = [np.asarray(s, dtype=np.int64) for s in (warm or [])]
    if not sigmas:
        sigmas = [_assignment(V)[0]]
    A_eq, b_eq = _birkhoff_rows(M)
    c = np.append(-V.ravel(), 1.0 / M)
    bounds = [(0.0, None)] * (M * M) + [(None, None)]
    for _ in range(int(max_iter)):
        res = linprog(c, A_ub=_cuts(M, sigmas), b_ub=np.zeros(len(sigmas)), A_eq=A_eq, b_eq=b_eq,
                      bounds=bounds, method="highs")
        if res.status != 0:
            raise StructpredError(f"the permutation game's linear program failed: {res.message}")
        Q = res.x[: M * M].reshape(M, M)
        sigma, best = _assignment(Q)
        if best <= res.x[-1] + tol:
            break
        sigmas.append(sigma)
    lam = np.maximum(-res.ineqlin.marginals, 0.0)
    lam = lam / lam.sum() if lam.sum() > 0 else np.full(len(sigmas), 1.0 / len(sigmas))
    nu = np.zeros((M, M))
    for w, s in zip(lam, sigmas):
        nu[np.arange(M), s] += w
    Q = np.ascontiguousarray(np.maximum(Q, 0.0))
    round_birkhoff(Q)           # the LP's vertex, its round-off put back onto the polytope
    value = float(np.sum(V * Q)) - _assignment(Q)[1] / M
    upper = _assignment(V - nu / M)[1]
    kept = [s for w, s in zip(lam, sigmas) if w > 0.0] or sigmas[:1]
    return Q, nu, value, upper, kept
