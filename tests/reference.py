"""Shared references for the tests: brute-force enumeration of small output spaces, exact LPs
of the max-min oracle (chains, permutations), polytope checks."""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import linprog
from scipy.special import logsumexp

from structpred.outputs.chain import Chain


def enumerate_outputs(space, size=None):
    """Every output of a small space: class indices, permutations of M, or label sequences of
    length ``size`` (chains)."""
    if space.ragged:
        return [np.array(s, dtype=np.int64) for s in itertools.product(range(space.n_labels), repeat=size)]
    if space.label_shape == ():
        return [np.int64(j) for j in range(space.n_labels)]
    return [np.array(p, dtype=np.int64) for p in itertools.permutations(range(space.label_shape[0]))]


# --- chains ---------------------------------------------------------------------------------

LENGTHS = (1, 2, 3, 4, 5)


def random_loss(R, zero_diag=False):
    """A fixed random non-symmetric node loss (row = truth)."""
    C = np.random.default_rng(100 + R).uniform(0.1, 2.0, size=(R, R))
    if zero_diag:
        np.fill_diagonal(C, 0.0)
    assert not np.allclose(C, C.T)
    return C


def ref_node_loss(name, R):
    """Independent re-statement of the named node losses (or the random matrix)."""
    if name == "random":
        return random_loss(R)
    i, j = np.meshgrid(np.arange(R), np.arange(R), indexing="ij")
    return {"hamming": (i != j) * 1.0, "absolute": np.abs(i - j) * 1.0, "squared": (i - j) ** 2 * 1.0}[name]


def ref_weights(weights, T):
    w = np.ones(T) if weights is None else np.arange(1.0, T + 1)
    return w / w.sum()


def chain_space(loss, weights, R, **kw):
    return Chain(R, random_loss(R) if loss == "random" else loss, weights=weights, **kw)


CASES = [(loss, w) for loss in ("hamming", "absolute", "squared", "random") for w in (None, "position")]
CASE_IDS = [f"{loss}-{w or 'uniform'}" for loss, w in CASES]


def all_seqs(R, T):
    return np.array(list(itertools.product(range(R), repeat=T)), dtype=np.int64).reshape(-1, T)


def ref_embed(y, R):
    T = len(y)
    U = np.zeros((T, R))
    U[np.arange(T), y] = 1.0
    P = np.zeros((T - 1, R, R))
    for t in range(T - 1):
        P[t, y[t], y[t + 1]] = 1.0
    return np.r_[U.ravel(), P.ravel()]


class Brute:
    """All R^T sequences of a chain with their embeddings and the full loss matrix."""

    def __init__(self, loss, weights, R, T):
        self.R, self.T = R, T
        self.Y = all_seqs(R, T)
        self.E = np.array([ref_embed(y, R) for y in self.Y])
        self.A = ref_weights(weights, T)[:, None, None] * ref_node_loss(loss, R)[None]   # (T, R, R)
        # L[i, j] = L(Y_i, Y_j) = sum_t A_t[Y_i[t], Y_j[t]]
        self.L = sum(self.A[t][self.Y[:, t][:, None], self.Y[:, t][None, :]] for t in range(T))

    def index(self, y):
        return int(np.ravel_multi_index(tuple(np.asarray(y)), (self.R,) * self.T))

    def probs(self, v):
        s = self.E @ v
        return np.exp(s - logsumexp(s))


def bruteforce_cases(R_values=(2, 3), lengths=LENGTHS):
    for R in R_values:
        for T in lengths:
            yield R, T



def chain_maxmin_lp(v, A, R, T):
    """Exact ``max_mu min_nu sum_t nu_t^T A_t mu_t + <v, mu>`` over the chain's local polytope."""
    return tree_maxmin_lp(v, A, R, np.arange(-1, T - 1))


def tree_maxmin_lp(v, A, R, parents):
    """Exact ``max_mu min_nu sum_t nu_t^T A_t mu_t + <v, mu>`` over the local polytope of the tree
    ``parents`` (edge block ``t - 1`` = (parent of t, t), indexed [parent label, child label]).

    Variables ``[mu unary (T R) | mu pairwise ((T-1) R^2) | s (T)]``; the inner min is
    ``sum_t min_i (A_t mu_t)[i]``, so ``s_t <= (A_t mu_t)[i]`` for all i (epigraph).
    """
    T = len(parents)
    nU, nP = T * R, (T - 1) * R * R
    n = nU + nP + T
    A_ub = np.zeros((T * R, n))
    for t in range(T):
        for i in range(R):
            A_ub[t * R + i, nU + nP + t] = 1.0
            A_ub[t * R + i, t * R:(t + 1) * R] = -A[t, i]
    A_eq, b_eq = [], []
    for t in range(T):
        row = np.zeros(n)
        row[t * R:(t + 1) * R] = 1.0
        A_eq.append(row)
        b_eq.append(1.0)
    for t in range(1, T):
        base, p = nU + (t - 1) * R * R, parents[t]
        for a in range(R):                     # sum_b mu_{p,t}[a, b] = mu_p[a]
            row = np.zeros(n)
            row[base + a * R: base + (a + 1) * R] = 1.0
            row[p * R + a] = -1.0
            A_eq.append(row)
            b_eq.append(0.0)
        for b in range(R):                     # sum_a mu_{p,t}[a, b] = mu_t[b]
            row = np.zeros(n)
            row[base + b: base + R * R: R] = 1.0
            row[t * R + b] = -1.0
            A_eq.append(row)
            b_eq.append(0.0)
    res = linprog(-np.r_[v, np.ones(T)], A_ub=A_ub, b_ub=np.zeros(T * R), A_eq=np.array(A_eq), b_eq=b_eq,
                  bounds=[(0, None)] * (nU + nP) + [(None, None)] * T, method="highs")
    assert res.status == 0
    return -res.fun


def polytope_violation(sp, mu, nu, T):
    """Largest violation of: mu >= 0, unary rows sum to 1, pairwise blocks marginalise to the
    unaries; nu >= 0 with rows summing to 1."""
    U, P = sp.split(mu)
    nu = np.asarray(nu).reshape(T, sp.R)
    errs = [-min(U.min(), 0.0), np.abs(U.sum(1) - 1).max(), -min(nu.min(), 0.0), np.abs(nu.sum(1) - 1).max()]
    if T > 1:
        errs += [-min(P.min(), 0.0), np.abs(P.sum(2) - U[:-1]).max(), np.abs(P.sum(1) - U[1:]).max()]
    return float(max(errs))


def check_in_polytope(sp, mu, nu, T):
    R = sp.R
    U, P = sp.split(mu)
    assert np.all(U >= 0) and np.all(P >= 0)
    np.testing.assert_allclose(U.sum(1), 1.0, atol=1e-12)
    np.testing.assert_allclose(P.sum(2), U[:-1], atol=1e-12)
    np.testing.assert_allclose(P.sum(1), U[1:], atol=1e-12)
    nu = np.asarray(nu).reshape(T, R)
    assert np.all(nu >= 0)
    np.testing.assert_allclose(nu.sum(1), 1.0, atol=1e-12)



# --- permutations ---------------------------------------------------------------------------

def all_perms(M):
    return np.array(list(itertools.permutations(range(M))), dtype=np.int64)


def emb(y, M):
    P = np.zeros((M, M))
    P[np.arange(M), y] = 1.0
    return P.ravel()


def perm_maxmin_lp(v, M):
    """Exact ``max_P min_Q -<Q, P>/M + <v, P> + 1`` over doubly stochastic P, Q.

    The inner min is ``-(1/M) max_Q <Q, P>``, an assignment LP whose dual is
    ``min sum(u) + sum(w) s.t. u_i + w_j >= P_ij``; variables ``[P (M^2), u (M), w (M)]``.
    """
    k = M * M
    c = -np.r_[v, -np.ones(2 * M) / M]
    A_ub = np.zeros((k, k + 2 * M))
    for i in range(M):
        for j in range(M):
            r = i * M + j
            A_ub[r, r] = 1.0
            A_ub[r, k + i] = -1.0
            A_ub[r, k + M + j] = -1.0
    A_eq = np.zeros((2 * M, k + 2 * M))
    for i in range(M):
        A_eq[i, i * M:(i + 1) * M] = 1.0
        A_eq[M + i, i:k:M] = 1.0
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(k), A_eq=A_eq, b_eq=np.ones(2 * M),
                  bounds=[(0, None)] * k + [(None, None)] * (2 * M), method="highs")
    assert res.status == 0
    return -res.fun + 1.0
