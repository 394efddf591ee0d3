"""QS on words of varying length (structpred.estimators._qs_sequences): the weights are those of
the explicit block-diagonal kernel, and the predictions the brute-force loss-trick argmin."""

from itertools import product

import numpy as np
import pytest

from structpred.errors import StructpredError
from structpred.estimators import QS, QSCV
from structpred.features import Sequences
from structpred.outputs import Chain

R, D = 3, 2


def words(lengths, seed):
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    X = Sequences(rng.normal(size=(offsets[-1], D)), offsets)
    y = [rng.integers(0, R, size=T) for T in lengths]
    return X, y


def explicit_weights(X_tr, X_q, kernel, sigma, lam):
    """alpha(x) = (K + n lam I)^{-1} K_x with k(x, x') = [T = T'] kappa(vec x, vec x'), K built whole."""
    def k(a, b):
        if len(a) != len(b):
            return 0.0
        u, v = a.ravel(), b.ravel()
        return float(u @ v) if kernel == "linear" else float(np.exp(-np.sum((u - v) ** 2) / (2 * sigma ** 2)))
    tr = [X_tr.frames[X_tr.offsets[i]:X_tr.offsets[i + 1]] for i in range(X_tr.n)]
    q = [X_q.frames[X_q.offsets[i]:X_q.offsets[i + 1]] for i in range(X_q.n)]
    K = np.array([[k(a, b) for b in tr] for a in tr])
    Kx = np.array([[k(a, b) for b in q] for a in tr])
    n = len(tr)
    return np.linalg.solve(K + n * lam * np.eye(n), Kx).T


@pytest.mark.parametrize("kernel", ["linear", "gaussian"])
def test_weights_are_the_block_diagonal_kernels_and_predictions_the_brute_force_argmin(kernel):
    X, y = words([2, 3, 2, 1, 3, 3, 2, 1, 2], seed=0)
    Xq, _ = words([3, 2, 1, 2, 4], seed=1)     # length 4: no training word
    est = QS(loss=Chain(R), kernel=kernel, sigma=1.3, lam=0.05).fit(X, y)
    alpha = est.weights(Xq)
    ref = explicit_weights(X, Xq, kernel, 1.3, 0.05)
    assert alpha.shape == (5, 9)
    assert np.allclose(alpha, ref, atol=1e-12, rtol=1e-10)
    assert np.count_nonzero(alpha[4]) == 0 and np.count_nonzero(alpha[0]) == 3    # three training words of length 3
    space = Chain(R)
    pred = est.predict(Xq)
    for j in range(Xq.n):
        T = int(Xq.lengths[j])
        same = [i for i in range(X.n) if len(y[i]) == T]
        cands = [np.array(c) for c in product(range(R), repeat=T)]     # lexicographic: all zeros first
        objective = [sum(alpha[j, i] * float(space.loss(y[i], c)) for i in same) for c in cands]
        best = min(objective)
        assert np.array_equal(pred[j], cands[int(np.argmin(objective))]) or \
            np.isclose(sum(alpha[j, i] * float(space.loss(y[i], pred[j])) for i in same), best, atol=1e-12)
    assert np.array_equal(pred[4], np.zeros(4, dtype=pred[4].dtype))   # alpha = 0: the decoder's tie, label 0
    assert est.task_loss(Xq, [np.zeros(T, dtype=np.int64) for T in Xq.lengths]) == pytest.approx(
        np.mean([float(space.loss(np.zeros(len(p), dtype=np.int64), p)) for p in pred]))


def test_sequences_refused_where_not_built_and_checked_on_predict():
    X, y = words([2, 3, 2, 3], seed=2)
    with pytest.raises(StructpredError, match="n_components"):
        QS(loss=Chain(R), n_components=2).fit(X, y)
    with pytest.raises(StructpredError, match="QSCV takes inputs of one size"):
        QSCV(loss=Chain(R), n_folds=2).fit(X, y)
    est = QS(loss=Chain(R), kernel="linear", lam=0.1).fit(X, y)
    with pytest.raises(StructpredError, match="fitted on sequences"):
        est.predict(np.zeros((2, D)))
    Xbad = Sequences(np.zeros((5, D + 1)), np.array([0, 2, 5]))
    with pytest.raises(StructpredError, match="features per position"):
        est.predict(Xbad)


@pytest.mark.parametrize("kernel", ["linear", "gaussian"])
def test_tagged_sentences_use_their_hashed_window_ids(kernel):
    """On CoNLL's WindowTokens the kernel counts, position by position, the hashed window ids two
    sentences of one length share (``kappa_lin``; the Gaussian on the same count vectors): the
    weights are the explicit block-diagonal kernel's, built here from each token's ids."""
    from collections import Counter

    from structpred.features.hashed import WindowTokens
    from tests.test_casimir_experiment import _toy_parts

    parts, tags = _toy_parts(n=(16, 6, 6))
    (X, y), (Xq, _) = parts["train"], parts["testb"]
    ids, ids_q = X.input_ids(), Xq.input_ids()
    assert ids.shape == (X.tokens.shape[0], 11) and ids.min() >= -1

    def bags(Z, I):
        return [[Counter(v for v in I[t] if v >= 0) for t in range(Z.offsets[i], Z.offsets[i + 1])] for i in range(Z.n)]

    def k(a, b):
        if len(a) != len(b):
            return 0.0
        dot = sum(A[v] * B[v] for A, B in zip(a, b) for v in A)
        if kernel == "linear":
            return float(dot)
        sq = sum(sum(c * c for c in A.values()) + sum(c * c for c in B.values()) for A, B in zip(a, b)) - 2 * dot
        return float(np.exp(-sq / (2 * 1.7 ** 2)))

    tr, q = bags(X, ids), bags(Xq, ids_q)
    K = np.array([[k(a, b) for b in tr] for a in tr])
    Kx = np.array([[k(a, b) for b in q] for a in tr])
    ref = np.linalg.solve(K + X.n * 0.05 * np.eye(X.n), Kx).T
    est = QS(loss=Chain(len(tags), "hamming", normalize=False), kernel=kernel, sigma=1.7, lam=0.05).fit(X, y)
    np.testing.assert_allclose(est.weights(Xq), ref, atol=1e-12, rtol=1e-10)
    assert len(est.predict(Xq)) == Xq.n and est.n_features_in_ == 2**16 - 1
    with pytest.raises(StructpredError, match="fitted on sequences"):
        est.predict(Sequences(np.zeros((3, D)), np.array([0, 3])))
    assert isinstance(Xq, WindowTokens)


def test_trees_are_blocked_by_their_shape_and_use_their_hashed_node_and_edge_ids():
    """On SRL's TreeFeatures the kernel is zero between trees of different shapes and otherwise
    counts, node by node, the shared hashed node ids and parent-edge ids (modulo the map's size):
    the weights are the explicit kernel's, and each prediction the brute-force loss-trick argmin
    on its tree (a tree no training tree shares: the decoder's tie)."""
    from collections import Counter

    from structpred.features.tree_array import TreeArray
    from structpred.outputs import Tree
    from structpred.runs.numerics import _trees

    X, y = _trees("qs-trees", n=30)
    Xq, _ = _trees("qs-trees-query", n=12)
    space = Tree(3, "absolute", joint_map="tree_hashed")

    def bags(Z):
        out = []
        for i in range(Z.n):
            nodes = range(Z.offsets[i], Z.offsets[i + 1])
            out.append((tuple(Z.trees[i]), [(Counter(Z.node_ids[Z.node_ptr[n]:Z.node_ptr[n + 1]] % Z.dim),
                                             Counter(Z.edge_ids[Z.edge_ptr[n]:Z.edge_ptr[n + 1]] % Z.dim)) for n in nodes]))
        return out

    def k(a, b):
        if a[0] != b[0]:
            return 0.0
        return float(sum(A[v] * B[v] for pa, pb in zip(a[1], b[1]) for A, B in zip(pa, pb) for v in A))

    tr, q = bags(X), bags(Xq)
    K = np.array([[k(a, b) for b in tr] for a in tr])
    Kx = np.array([[k(a, b) for b in q] for a in tr])
    alpha_ref = np.linalg.solve(K + X.n * 0.05 * np.eye(X.n), Kx).T
    est = QS(loss=space, kernel="linear", lam=0.05).fit(X, y)
    alpha = est.weights(Xq)
    np.testing.assert_allclose(alpha, alpha_ref, atol=1e-12, rtol=1e-10)
    shared = [j for j in range(Xq.n) if any(tuple(Xq.trees[j]) == tuple(t) for t in X.trees)]
    assert 0 < len(shared) < Xq.n                         # some query trees have a training tree of their shape
    pred = est.predict(Xq)
    for j in range(Xq.n):
        parents = Xq.trees[j]
        same = [i for i in range(X.n) if tuple(X.trees[i]) == tuple(parents)]
        cands = [TreeArray(np.array(c), parents) for c in product(range(3), repeat=len(parents))]
        objective = [sum(alpha[j, i] * float(space.loss(y[i], c)) for i in same) for c in cands]
        assert np.isclose(sum(alpha[j, i] * float(space.loss(y[i], pred[j])) for i in same), min(objective), atol=1e-12)
        assert tuple(pred[j].parents) == tuple(parents)
    assert est.n_features_in_ == 2 * X.dim
