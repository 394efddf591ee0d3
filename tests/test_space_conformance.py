"""Conformance suite: every oracle a space declares (its capabilities) against enumeration.

Each space below runs the same checks: ``decode``; ``loss_augmented`` (LossAugmented);
``top_k`` (TopK); ``marginals``, ``log_partition``, ``entropy`` (Marginals); ``loss_scores``, ``linear_loss``,
``min_loss``, ``bayes_decode`` (AffineLoss); ``max_min`` brackets the max-min value computed
by an LP over the convex hull of the enumerated embeddings (MaxMin).  A new space joins by
adding one line to ``SPACES``.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.special import logsumexp

from structpred.outputs import (
    AffineLoss,
    Chain,
    LossAugmented,
    MarginalPolytope,
    Marginals,
    MaxMin,
    MinLossLines,
    Multiclass,
    Permutation,
    TopK,
    Tree,
    capabilities,
)
from tests.reference import enumerate_outputs

#: (id, space factory, output size for ragged spaces)
SPACES = [
    ("multiclass-zero_one", lambda: Multiclass.zero_one(4), None),
    ("multiclass-ordinal", lambda: Multiclass.ordinal(5), None),
    ("multiclass-dense", lambda: Multiclass(np.random.default_rng(0).random((3, 3)) * (1 - np.eye(3))), None),
    ("permutation-3", lambda: Permutation(3), None),
    ("permutation-4", lambda: Permutation(4), None),
    ("chain-hamming-T3", lambda: Chain(3), 3),
    ("chain-absolute-position-T4", lambda: Chain(3, "absolute", "position"), 4),
    ("chain-squared-T1", lambda: Chain(2, "squared"), 1),
    ("chain-hamming-sum-T3", lambda: Chain(3, normalize=False), 3),
    ("tree-star-hamming-T4", lambda: Tree(3, parents=[-1, 0, 0, 0]), 4),
    ("tree-binary-absolute-position-T5", lambda: Tree(2, "absolute", "position", parents=[-1, 0, 0, 1, 1]), 5),
    ("tree-matrix-sum-T4",
     lambda: Tree(3, [[0, 1, 3], [2, 0, 1], [1, 4, 0]], normalize=False, parents=[-1, 0, 1, 1]), 4),
    ("tree-single-node", lambda: Tree(3, "squared", parents=[-1]), 1),
]


def _setup(factory, size, seed, scale=1.0):
    space = factory()
    Y = enumerate_outputs(space, size)
    E = np.array([space.embed(y) for y in Y])
    L = np.array([[float(space.loss(a, b)) for b in Y] for a in Y])  # L[truth, prediction]
    v = scale * np.random.default_rng(seed).normal(size=E.shape[1])
    return space, Y, E, L, v


def _same(a, b):
    return np.array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("name,factory,size", SPACES, ids=[s[0] for s in SPACES])
def test_space_conforms(name, factory, size):
    space, Y, E, L, v = _setup(factory, size, seed=len(name))
    caps = capabilities(space)
    assert caps, name
    s = E @ v
    assert _same(space.decode(v), Y[int(np.argmax(s))])
    truth = len(Y) // 2
    y = Y[truth]
    if isinstance(space, LossAugmented):
        assert _same(space.loss_augmented(v, y), Y[int(np.argmax(L[truth] + s))])
    if isinstance(space, TopK):
        K = min(3, len(Y))
        outs, scores = space.top_k(v, y, K)
        np.testing.assert_allclose(scores, np.sort(L[truth] + s)[::-1][:K], atol=1e-12)
        rows = []
        for o, sc in zip(outs, scores):
            j = next(j for j, yy in enumerate(Y) if _same(yy, o))
            assert abs(L[truth, j] + s[j] - sc) < 1e-12
            rows.append(j)
        w = np.arange(1.0, len(rows) + 1)
        np.testing.assert_allclose(space.mean_embedding(outs, w), w @ E[rows], atol=1e-12)
    if isinstance(space, Marginals):
        p = np.exp(s - logsumexp(s))
        np.testing.assert_allclose(space.marginals(v), p @ E, atol=1e-12)
        assert abs(space.log_partition(v) - logsumexp(s)) < 1e-12
        np.testing.assert_allclose(space.entropy(p @ E), -np.sum(p * np.log(p)), atol=1e-10)
    q = np.random.default_rng(1).dirichlet(np.ones(len(Y)))
    m = q @ E
    if isinstance(space, AffineLoss):
        a = space.loss_offset
        np.testing.assert_allclose(E @ np.ravel(space.loss_scores(y)), L[truth] - a, atol=1e-12)
        np.testing.assert_allclose(space.linear_loss(y, m), q @ L[truth] - a, atol=1e-12)
        np.testing.assert_allclose(space.min_loss(m), np.min(L @ q) - a, atol=1e-12)
        assert _same(space.bayes_decode(m), Y[int(np.argmin(q @ L))])
    if isinstance(space, MinLossLines):
        d = np.random.default_rng(2).dirichlet(np.ones(len(Y))) @ E - m
        p, qs, starts = space.min_loss_lines(m, d)
        for g in (0.0, 0.4, 1.0):
            lines = sum(np.min(p[a:b] + g * qs[a:b]) for a, b in zip(starts[:-1], starts[1:]))
            assert abs(lines - float(np.atleast_1d(space.min_loss(m + g * d))[0])) < 1e-12
    if isinstance(space, MarginalPolytope):
        # {m >= 0 : A m = b} holds every embedding, and is tight: a linear score's LP maximum over it
        # is the best output's (its vertices are embeddings)
        A, b = space.marginal_polytope(E[0])
        np.testing.assert_allclose(A @ E.T, np.repeat(b[:, None], len(Y), axis=1), atol=1e-12)
        lp = linprog(-v, A_eq=A.toarray(), b_eq=b, bounds=(0, None), method="highs")
        assert lp.status == 0 and abs(-lp.fun - np.max(s)) < 1e-9
        np.testing.assert_allclose(space.into_polytope(m), m, atol=1e-12)
    if isinstance(space, MaxMin):
        exact = maxmin_by_lp(E, L, v) - space.loss_offset
        res = space.max_min(v, n_iter=200)
        assert res.value - 1e-9 <= exact <= res.upper + 1e-9
        assert res.gap >= -1e-12
        if "exact max-min game" in caps:
            res = space.max_min_exact(v)
            assert res.value - 1e-9 <= exact <= res.upper + 1e-9 and res.gap <= 1e-9


def maxmin_by_lp(E, L, v) -> float:
    """``max_{q in simplex} min_y' sum_y L(y', y) q_y + v . E^T q`` (M4N eq. 14: ``mu = E^T q``
    over the convex hull of the embeddings, the adversary ``y'`` in the loss's first slot; loss
    constant included)."""
    n = len(E)
    # variables (q, t): maximise t + (E v) . q  s.t.  t <= sum_y L[y', y] q_y for every y'
    c = -np.r_[E @ v, 1.0]
    A_ub = np.c_[-L, np.ones(n)]
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(n), A_eq=np.r_[np.ones(n), 0.0][None], b_eq=[1.0],
                  bounds=[(0, None)] * n + [(None, None)], method="highs")
    assert res.status == 0
    return -res.fun


@pytest.mark.parametrize("scale", [500.0, 2000.0])
def test_chain_maxmin_bounds_are_true_bounds_at_large_scores(scale):
    """The reported lower bound never exceeds an upper bound, even warm started at scores of
    size 2000 (before the averaged pair was made feasible it did, by up to 1e-4), and the
    averaged marginals lie exactly in the marginal polytope."""
    sp = Chain(4)
    rng = np.random.default_rng(3)
    worst = 0.0
    for _ in range(10):
        v = scale * rng.normal(size=sp.dim(6))
        r1 = sp.max_min(v, n_iter=20)
        r2 = sp.max_min(v, warm=r1.state, n_iter=20)
        r3 = sp.max_min(v, warm=r2.state, n_iter=40)
        worst = max(worst, max(r.value for r in (r1, r2, r3)) - min(r.upper for r in (r1, r2, r3)))
        U, P = sp.split(r3.mu)
        np.testing.assert_allclose(U.sum(1), 1.0, rtol=0, atol=1e-13)
        np.testing.assert_allclose(P.sum(2), U[:-1], rtol=0, atol=1e-13)
        np.testing.assert_allclose(P.sum(1), U[1:], rtol=0, atol=1e-13)
    assert worst <= 1e-14 * scale * sp.dim(6)


def test_top_k_is_batched():
    """``top_k(v, y, K)`` on a batch is the list of the per-score answers (DESIGN signature)."""
    rng = np.random.default_rng(5)
    mc = Multiclass.ordinal(4)
    V = rng.normal(size=(3, 4))
    y = np.array([0, 2, 3])
    for (o, s), v, yi in zip(mc.top_k(V, y, 2), V, y):
        o1, s1 = mc.top_k(v, yi, 2)
        assert _same(o, o1) and np.allclose(s, s1)
    ch = Chain(3, "absolute")
    vs = [rng.normal(size=ch.dim(T)) for T in (1, 3, 4)]
    ys = [rng.integers(0, 3, size=T) for T in (1, 3, 4)]
    for (o, s), v, yi in zip(ch.top_k(vs, ys, 4), vs, ys):
        o1, s1 = ch.top_k(v, yi, 4)
        assert _same(o, o1) and np.allclose(s, s1)
    assert len(ch.top_k(vs, None, 2)) == 3
