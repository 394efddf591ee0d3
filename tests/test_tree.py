"""Tree output space: every oracle against enumeration on small trees (star, chain, binary,
random shapes, up to 7 nodes and 3 labels), the max-min oracle against an exact LP over the
local (= marginal) polytope, a chain as a special tree, per-example trees through the
surrogates, TreeArray, bad input."""

import itertools
import pickle

import numpy as np
import pytest
from scipy.special import logsumexp

from structpred.errors import StructpredError
from structpred.outputs import Chain, Tree, TreeArray, capabilities
from structpred.surrogates import Hinge, LogLoss, MaxMinMargin
from tests.reference import CASE_IDS, CASES, random_loss, ref_node_loss, ref_weights, tree_maxmin_lp

SHAPES = ("star", "chain", "binary", "random")
#: (R, T) of the enumeration tests: up to 7 nodes, up to 3 labels
SIZES = ((2, 1), (3, 2), (3, 4), (2, 7), (3, 7))


def tree_parents(shape, T, seed=0):
    """Parents of a ``shape`` tree of ``T`` nodes (``random``: each parent uniform among earlier nodes)."""
    if shape == "star":
        return np.array([-1] + [0] * (T - 1))
    if shape == "chain":
        return np.arange(-1, T - 1)
    if shape == "binary":
        return np.array([-1] + [(t - 1) // 2 for t in range(1, T)])
    rng = np.random.default_rng(1000 + seed)
    return np.array([-1] + [int(rng.integers(0, t)) for t in range(1, T)])


def tree_space(loss, weights, R, **kw):
    return Tree(R, random_loss(R) if loss == "random" else loss, weights=weights, **kw)


def ref_embed(y, parents, R):
    """Independent embedding: node indicators, then one [parent label, child label] block per edge."""
    T = len(y)
    U = np.zeros((T, R))
    U[np.arange(T), y] = 1.0
    P = np.zeros((T - 1, R, R))
    for t in range(1, T):
        P[t - 1, y[parents[t]], y[t]] = 1.0
    return np.r_[U.ravel(), P.ravel()]


class BruteTree:
    """All ``R^T`` labellings of one tree, their embeddings and the full loss matrix."""

    def __init__(self, loss, weights, R, parents):
        T = len(parents)
        self.R, self.T, self.parents = R, T, np.asarray(parents)
        self.Y = np.array(list(itertools.product(range(R), repeat=T)), dtype=np.int64).reshape(-1, T)
        self.E = np.array([ref_embed(y, parents, R) for y in self.Y])
        self.A = ref_weights(weights, T)[:, None, None] * ref_node_loss(loss, R)[None]      # (T, R, R)
        # L[i, j] = L(Y_i, Y_j) (row = truth)
        self.L = sum(self.A[t][self.Y[:, t][:, None], self.Y[:, t][None, :]] for t in range(T))

    def tree(self, x):
        return TreeArray(x, self.parents)


def _same(a, b):
    return np.array_equal(np.asarray(a), np.asarray(b))


# --- every oracle against enumeration -----------------------------------------------------------

@pytest.mark.parametrize("loss,weights", CASES, ids=CASE_IDS)
def test_oracles_vs_enumeration(loss, weights):
    for shape in SHAPES:
        for R, T in SIZES:
            parents = tree_parents(shape, T, seed=R * T)
            sp = tree_space(loss, weights, R)
            bf = BruteTree(loss, weights, R, parents)
            rng = np.random.default_rng(R * 100 + T)
            v = bf.tree(rng.normal(size=sp.dim(T)))
            s = bf.E @ v
            where = (shape, R, T)
            # embedding, loss
            truth = int(rng.integers(len(bf.Y)))
            y = bf.tree(bf.Y[truth])
            np.testing.assert_array_equal(sp.embed(y), bf.E[truth])
            pred = int(rng.integers(len(bf.Y)))
            assert abs(sp.loss(y, bf.tree(bf.Y[pred])) - bf.L[truth, pred]) < 1e-12, where
            # MAP and loss-augmented decoding (non-symmetric losses, position weights)
            assert _same(sp.decode(v), bf.Y[np.argmax(s)]), where
            assert _same(sp.loss_augmented(v, y), bf.Y[np.argmax(bf.L[truth] + s)]), where
            # sum-product: marginals, log Z, entropy (the distribution is tree-structured)
            p = np.exp(s - logsumexp(s))
            m = sp.marginals(v)
            np.testing.assert_allclose(m, p @ bf.E, rtol=0, atol=1e-12, err_msg=str(where))
            assert abs(sp.log_partition(v) - logsumexp(s)) < 1e-12, where
            assert abs(sp.entropy(m)[0] - (-np.sum(p * np.log(p)))) < 1e-10, where
            c = sp.entropy_coefficients(m)
            assert abs(-np.sum(c * m * np.log(m)) - sp.entropy(m)[0]) < 1e-12
            # affine loss at mean parameters of a random distribution over the labellings
            q = rng.dirichlet(np.ones(len(bf.Y)))
            mq = bf.tree(q @ bf.E)
            np.testing.assert_allclose(bf.E @ sp.loss_scores(y), bf.L[truth], rtol=0, atol=1e-12)
            assert abs(sp.linear_loss(y, mq)[0] - q @ bf.L[truth]) < 1e-12, where
            assert abs(sp.min_loss(mq)[0] - np.min(bf.L @ q)) < 1e-12, where
            assert _same(sp.bayes_decode(mq), bf.Y[np.argmin(q @ bf.L)]), where


def test_capabilities_and_no_top_k():
    sp = Tree(3)
    assert capabilities(sp) == ["loss-augmented decoding", "marginals", "max-min", "exact max-min game",
                                "affine loss", "min-loss lines", "loss-trick decoding"]
    assert not hasattr(sp, "top_k")


# --- max-min oracle ------------------------------------------------------------------------------

@pytest.mark.parametrize("loss,weights", CASES, ids=CASE_IDS)
def test_maxmin_brackets_exact_lp(loss, weights):
    for shape in SHAPES:
        for R, T in ((2, 1), (3, 3), (2, 5), (3, 5)):
            parents = tree_parents(shape, T, seed=T)
            sp = tree_space(loss, weights, R, iterations_per_node=False)
            bf = BruteTree(loss, weights, R, parents)
            eta = 1.0 / (2.0 * np.abs(bf.A).max())
            for seed in range(2):
                v = bf.tree(np.random.default_rng(seed).normal(size=sp.dim(T)))
                lp = tree_maxmin_lp(v, bf.A, R, parents)
                gaps = {}
                for n_iter in (5, 200):
                    r = sp.max_min(v, n_iter=n_iter)
                    where = (shape, R, T, seed, n_iter, r.value, lp, r.upper)
                    assert r.value <= lp + 1e-9 and lp <= r.upper + 1e-9, where
                    assert r.gap == r.upper - r.value and r.gap >= 0.0, where
                    # mu exactly in the marginal polytope, nu in the product of simplices
                    U, P = sp.split(r.mu)
                    nu = r.nu.reshape(T, R)
                    assert U.min() >= 0 and P.min(initial=0.0) >= 0 and nu.min() >= 0
                    np.testing.assert_allclose(U.sum(1), 1.0, rtol=0, atol=1e-13)
                    np.testing.assert_allclose(nu.sum(1), 1.0, rtol=0, atol=1e-13)
                    np.testing.assert_allclose(P.sum(2), U[parents[1:]], rtol=0, atol=1e-13)
                    np.testing.assert_allclose(P.sum(1), U[1:], rtol=0, atol=1e-13)
                    # both bounds are true values of the pair: recomputed by enumeration
                    lower = np.sum(np.min(np.einsum("tij,tj->ti", bf.A, U), axis=1)) + v @ r.mu
                    assert abs(r.value - lower) < 1e-12, where
                    upper = np.max(bf.E @ v + sum(nu[t] @ bf.A[t][:, bf.Y[:, t]] for t in range(T)))
                    assert abs(r.upper - upper) < 1e-12, where
                    gaps[n_iter] = r.gap
                assert gaps[200] <= gaps[5]
                # Mirror-Prox rate: gap <= 2 T log R / (eta K) from the uniform start
                assert gaps[200] <= 2 * T * np.log(R) / (eta * 200), (shape, R, T, gaps)


def test_maxmin_warm_start_and_mixing():
    R, T, K = 3, 6, 10
    sp = Tree(R, "absolute", iterations_per_node=False)
    rng = np.random.default_rng(7)
    V = [TreeArray(rng.normal(size=sp.dim(T)), tree_parents(shape, T, seed=i))
         for i, shape in enumerate(SHAPES * 3)]
    cold = sp.max_min(V, n_iter=K)
    warm = sp.max_min(V, warm=cold.state, n_iter=K)
    twice = sp.max_min(V, n_iter=2 * K)
    # measured mean gaps: cold 0.49, warm 0.060, 2K iterations cold 0.26 (warm / cold 0.12)
    assert warm.gap.mean() < 0.5 * cold.gap.mean()
    assert warm.gap.mean() < twice.gap.mean()
    assert all(isinstance(s, TreeArray) and _same(s.parents, v.parents) for s, v in zip(cold.state[0], V))
    # the caller's state is not modified; a warm call is deterministic
    s0 = cold.state[0][0].copy()
    again = sp.max_min(V[0], warm=(cold.state[0][0], cold.state[1][0]), n_iter=K)
    np.testing.assert_array_equal(cold.state[0][0], s0)
    np.testing.assert_array_equal(again.mu, warm.mu[0])
    # mixing the warm state: the marginals of theta become (1 - eps) mu + eps uniform
    lmu, lnu = cold.state[0][1].copy(), cold.state[1][1].copy()
    m0 = sp.marginals(lmu)
    sp.mix_warm_state(lmu, lnu, 0.1)
    m1 = sp.marginals(lmu)
    U0, P0 = sp.split(m0)
    U1, P1 = sp.split(m1)
    np.testing.assert_allclose(U1, 0.9 * U0 + 0.1 / R, atol=1e-12)
    np.testing.assert_allclose(P1, 0.9 * P0 + 0.1 / R ** 2, atol=1e-12)
    np.testing.assert_allclose(np.exp(lnu), 0.9 * np.exp(cold.state[1][1]) + 0.1 / R, atol=1e-12)


def test_maxmin_bounds_are_true_bounds_at_large_scores():
    sp = Tree(4)
    rng = np.random.default_rng(3)
    worst = 0.0
    for i in range(8):
        parents = tree_parents(SHAPES[i % 4], 7, seed=i)
        v = TreeArray(2000.0 * rng.normal(size=sp.dim(7)), parents)
        r1 = sp.max_min(v, n_iter=20)
        r2 = sp.max_min(v, warm=r1.state, n_iter=40)
        worst = max(worst, max(r1.value, r2.value) - min(r1.upper, r2.upper))
        U, P = sp.split(r2.mu)
        np.testing.assert_allclose(P.sum(2), U[parents[1:]], rtol=0, atol=1e-13)
        np.testing.assert_allclose(P.sum(1), U[1:], rtol=0, atol=1e-13)
    assert worst <= 1e-14 * 2000.0 * sp.dim(7)


# --- a chain is a special tree ------------------------------------------------------------------

@pytest.mark.parametrize("loss,weights", CASES, ids=CASE_IDS)
def test_chain_is_a_special_tree(loss, weights):
    for R, T in ((2, 1), (3, 2), (5, 6), (4, 11)):
        ch = Chain(R, random_loss(R) if loss == "random" else loss, weights=weights)
        tr = tree_space(loss, weights, R)
        parents = np.arange(-1, T - 1)
        rng = np.random.default_rng(R + T)
        for scale in (1.0, 30.0):
            vc = scale * rng.normal(size=ch.dim(T))
            v = TreeArray(vc, parents)
            yc = rng.integers(0, R, size=T)
            y = TreeArray(yc, parents)
            assert _same(tr.decode(v), ch.decode(vc))
            assert _same(tr.loss_augmented(v, y), ch.loss_augmented(vc, yc))
            np.testing.assert_allclose(tr.marginals(v), ch.marginals(vc), rtol=0, atol=1e-12)
            assert abs(tr.log_partition(v) - ch.log_partition(vc)) <= 1e-12 * max(1.0, abs(ch.log_partition(vc)))
            m = ch.marginals(vc)
            np.testing.assert_allclose(tr.entropy(TreeArray(m, parents)), ch.entropy(m), rtol=1e-12)
            np.testing.assert_array_equal(tr.entropy_coefficients(TreeArray(m, parents)), ch.entropy_coefficients(m))
            np.testing.assert_array_equal(tr.embed(y), ch.embed(yc))
            np.testing.assert_array_equal(tr.loss_scores(y), ch.loss_scores(yc))
            y2 = rng.integers(0, R, size=T)
            assert tr.loss(y, TreeArray(y2, parents)) == ch.loss(yc, y2)
            assert abs(tr.min_loss(TreeArray(m, parents))[0] - ch.min_loss(m)[0]) < 1e-14
            assert abs(tr.linear_loss(y, TreeArray(m, parents))[0] - ch.linear_loss(yc, m)[0]) < 1e-14
            assert _same(tr.bayes_decode(TreeArray(m, parents)), ch.bayes_decode(m))
            rt, rc = tr.max_min(v, n_iter=5), ch.max_min(vc, n_iter=5)
            np.testing.assert_allclose(rt.mu, rc.mu, rtol=0, atol=1e-10)
            np.testing.assert_allclose(rt.nu, rc.nu, rtol=0, atol=1e-10)
            for a, b in ((rt.value, rc.value), (rt.upper, rc.upper)):
                assert abs(a - b) <= 1e-9 * max(1.0, abs(b))
            z = tr.max_min(v, n_iter=0)
            np.testing.assert_allclose(z.mu, ch.max_min(vc, n_iter=0).mu, rtol=0, atol=1e-12)
            wt = tr.max_min(v, warm=rt.state, n_iter=5)
            wc = ch.max_min(vc, warm=rc.state, n_iter=5)
            np.testing.assert_allclose(wt.mu, wc.mu, rtol=0, atol=1e-10)
            assert abs(wt.upper - wc.upper) <= 1e-9 * max(1.0, abs(wc.upper))
    # a fixed chain-shaped space takes plain vectors, as Chain does
    fixed = Tree(3, parents=np.arange(-1, 4))
    vc = np.random.default_rng(0).normal(size=fixed.dim(5))
    assert _same(fixed.decode(vc), Chain(3).decode(vc))


# --- per-example trees through the surrogates -----------------------------------------------------

def test_surrogates_on_a_batch_of_different_trees():
    """Lists of TreeArrays of different trees go through Hinge, LogLoss and MaxMinMargin
    unchanged; values against enumeration."""
    R = 3
    sp = Tree(R, "absolute", weights="position")
    rng = np.random.default_rng(11)
    trees = [tree_parents(s, T, seed=T) for s, T in (("star", 4), ("random", 6), ("binary", 5), ("chain", 1))]
    bfs = [BruteTree("absolute", "position", R, p) for p in trees]
    V = [bf.tree(rng.normal(size=sp.dim(bf.T))) for bf in bfs]
    idx = [int(rng.integers(len(bf.Y))) for bf in bfs]
    Y = [bf.tree(bf.Y[i]) for bf, i in zip(bfs, idx)]
    hinge, grad = Hinge(sp).value_grad(V, Y)
    ll, lgrad = LogLoss(sp).value_grad(V, Y)
    mm = MaxMinMargin(sp, n_iter=50)
    lo, up, _ = mm.bounds(V, Y)
    for k, (bf, i, v) in enumerate(zip(bfs, idx, V)):
        s = bf.E @ v
        assert abs(hinge[k] - np.max(bf.L[i] + s - s[i])) < 1e-12
        assert abs(ll[k] - (logsumexp(s) - s[i])) < 1e-12
        assert grad[k].shape == lgrad[k].shape == (sp.dim(bf.T),)
        exact = tree_maxmin_lp(v, bf.A, R, bf.parents) - s[i]
        assert lo[k] - 1e-9 <= exact <= up[k] + 1e-9
    # warm states per sample follow their trees through a training-like pass
    mm.init_state(len(V))
    for i, (v, y) in enumerate(zip(V, Y)):
        g = mm.sample_grad(i, v, y)
        assert isinstance(g, TreeArray) and _same(g.parents, v.parents)
    assert np.all(mm.gaps >= 0)


# --- TreeArray -----------------------------------------------------------------------------------

def test_tree_array_keeps_its_tree():
    parents = [-1, 0, 0, 1]
    sp = Tree(2)
    v = TreeArray(np.arange(sp.dim(4), dtype=float), parents)
    for w in (v + 1.0, 2.0 * v, v - np.ones(sp.dim(4)), np.exp(v), v.copy(), -v):
        assert isinstance(w, TreeArray) and _same(w.parents, parents)
    for r in (v.sum(), v @ v, np.max(v)):
        assert not isinstance(r, np.ndarray) or type(r) is np.ndarray
    back = pickle.loads(pickle.dumps(v))
    assert isinstance(back, TreeArray) and _same(back.parents, parents) and _same(back, v)
    assert not v.parents.flags.writeable
    # outputs carry the tree of their input
    y = sp.decode(v)
    assert isinstance(y, TreeArray) and _same(y.parents, parents)
    assert _same(sp.embed(y).parents, parents) and _same(sp.marginals(v).parents, parents)


# --- bad input -----------------------------------------------------------------------------------

def _one_line_error(fn, *args, match=None):
    with pytest.raises(StructpredError, match=match) as err:
        fn(*args)
    assert "\n" not in str(err.value), str(err.value)


def test_bad_parents():
    for bad, match in (([0, 0, 1], "root"), ([-1, 0, -1], "forest"), ([-1, 2, 0], "precede"),
                       ([-1, 1], "precede"), ([-1, 0, 3], "precede"), ([[-1, 0]], "1-d"), ([], "non-empty"),
                       ([-1, 0.5], "integer"), ([-1, np.nan], "integer"), (["a", "b"], "integer")):
        _one_line_error(TreeArray, np.zeros(3), bad, match=match)
        _one_line_error(Tree, 3, "hamming", None, True, True, bad, match=match)


def test_bad_scores_and_labels():
    sp = Tree(3)
    parents = [-1, 0, 0]
    v = TreeArray(np.zeros(sp.dim(3)), parents)
    y = TreeArray([0, 1, 2], parents)
    _one_line_error(sp.decode, np.zeros(sp.dim(3)), match="no tree of its own")
    _one_line_error(sp.embed, np.array([0, 1, 2]), match="no tree of its own")
    for bad in (np.zeros(sp.dim(3) + 1), np.zeros(sp.dim(4)), np.zeros((2, sp.dim(3)))):
        _one_line_error(sp.decode, TreeArray(bad, parents), match="has T.R . .T-1..R.2 = 27 scores")
    nan = v.copy()
    nan[4] = np.nan
    for fn in (sp.decode, sp.marginals, sp.log_partition, lambda s: sp.max_min(s, n_iter=2)):
        _one_line_error(fn, nan, match="NaN")
    _one_line_error(sp.embed, TreeArray([0, 1], parents), match="2 labels for a tree of 3 nodes")
    _one_line_error(sp.embed, TreeArray([0, 1, 3], parents), match="0..2")
    _one_line_error(sp.embed, TreeArray([0, np.nan, 1], parents), match="integers")
    _one_line_error(sp.loss_augmented, v, TreeArray([0, 1, 2], [-1, 0, 1]), match="different trees")
    _one_line_error(sp.loss, y, TreeArray([0, 1, 2, 0], [-1, 0, 1, 2]), match="different trees")
    _one_line_error(sp.max_min, v, (np.zeros(5), None), match="warm state")
    _one_line_error(sp.max_min, v, None, -1, match="n_iter")
    _one_line_error(sp.loss_augmented, [v, v], [y], match="batch sizes")
    _one_line_error(lambda: sp.embedding_dim, match="dim")
    _one_line_error(Tree, 1, match="n_labels")
    _one_line_error(Tree, 3, np.ones((2, 2)), match="3 x 3")
def test_loss_trick_decoding_on_examples_that_carry_their_tree():
    """QS's weighted decoding (any-sign weights) against enumeration, when each training output
    carries the tree (the space has none of its own); trees that differ are one clear error."""
    space, parents = Tree(3, "absolute"), np.array([-1, 0, 0, 1])
    rng = np.random.default_rng(5)
    for _ in range(5):
        Y = [TreeArray(rng.integers(0, 3, 4), parents) for _ in range(6)]
        alpha = rng.normal(size=(2, 6))
        preds = space.weighted_decode(alpha, Y)
        for a, pred in zip(alpha, preds):
            def objective(y):
                return sum(w * space.loss(t, TreeArray(np.asarray(y), parents)) for w, t in zip(a, Y))
            best = min(objective(y) for y in itertools.product(range(3), repeat=4))
            assert objective(pred) == pytest.approx(best, abs=1e-12)
            assert np.array_equal(pred.parents, parents)
        single = space.weighted_decode(alpha[0], Y)
        assert np.array_equal(single, preds[0])
    with pytest.raises(StructpredError, match="needs training outputs on one tree, got 2 different trees"):
        space.weighted_decode(np.ones(2), [Y[0], TreeArray(np.array([0, 1, 2]), np.array([-1, 0, 1]))])
