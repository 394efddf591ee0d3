"""Chain output space: bad input (one clear error) and ragged batches of different lengths."""

import numpy as np
import pytest

from structpred.errors import StructpredError
from structpred.outputs.chain import Chain, node_loss_matrix

# --- 10. bad input ------------------------------------------------------------------------------

SP3 = Chain(3)
T3 = 3
V3 = np.zeros(SP3.dim(T3))
Y3 = np.array([0, 1, 2])


def test_bad_constructor_arguments():
    for bad in (1, 0, -2, 2.5, "three", None):
        with pytest.raises(StructpredError):
            Chain(bad)
    with pytest.raises(StructpredError):
        Chain(3, "euclidean")
    with pytest.raises(StructpredError):
        node_loss_matrix("hinge", 3)
    with pytest.raises(StructpredError):
        Chain(3, np.ones((2, 2)))
    with pytest.raises(StructpredError):
        Chain(3, np.array([[0, 1, np.nan], [1, 0, 1], [1, 1, 0]]))
    with pytest.raises(StructpredError):
        Chain(3, weights="uniform")
    with pytest.raises(StructpredError):
        Chain(3, weights=lambda T: -np.ones(T)).loss(Y3, Y3)
    with pytest.raises(StructpredError):
        Chain(3, weights=lambda T: np.ones(T + 1)).loss(Y3, Y3)
    with pytest.raises(StructpredError):
        _ = SP3.embedding_dim


def test_weights_array_is_refused_with_structpred_error():
    # weights must be None, "position" or a callable: an array is bad input
    with pytest.raises(StructpredError):
        Chain(3, weights=np.ones(3))


def test_bad_labels():
    sp, v, y = SP3, V3, Y3
    for lab in (np.array([0, 3, 1]), np.array([-1, 0, 0]), np.array([0.5, 1, 1]), np.array([0, np.nan, 1]),
                np.array([], dtype=np.int64), np.zeros((2, 3), dtype=np.int64), np.array(["a", "b", "c"])):
        with pytest.raises(StructpredError):
            sp.embed(lab)
        with pytest.raises(StructpredError):
            sp.loss(lab, y)
    with pytest.raises(StructpredError):
        sp.loss(y, np.array([0, 1, 3]))
    with pytest.raises(StructpredError):
        sp.loss_augmented(v, np.array([0, 3, 0]))
    with pytest.raises(StructpredError):
        sp.top_k(v, np.array([0, 0, 5]), 2)
    with pytest.raises(StructpredError):
        sp.linear_loss(np.array([4, 0, 0]), sp.embed(y))
    with pytest.raises(StructpredError):
        Chain(2).embed(np.array([0, 2]))


def test_nonfinite_scores():
    sp, v, y = SP3, V3, Y3
    for val in (np.nan, np.inf, -np.inf):
        for pos in (0, sp.dim(T3) - 1):               # a unary and a pairwise entry
            w = v.copy()
            w[pos] = val
            for call in (sp.decode, sp.marginals, sp.log_partition, sp.max_min,
                         lambda s: sp.loss_augmented(s, y), lambda s: sp.top_k(s, None, 3)):
                with pytest.raises(StructpredError):
                    call(w)
            with pytest.raises(StructpredError):
                sp.decode([V3, w])                    # inside a batch too


def test_bad_score_length():
    sp = SP3
    # T R + (T-1) R^2 = 3, 15, 27, ... for R = 3
    for n in (0, 1, 2, 4, 14, 16, 26, 28, 30):
        for call in (sp.decode, sp.marginals, sp.log_partition, sp.max_min, sp.bayes_decode,
                     sp.entropy, sp.min_loss, lambda s: sp.top_k(s, None, 2), sp.length):
            with pytest.raises(StructpredError):
                call(np.zeros(n))
    with pytest.raises(StructpredError):
        sp.decode(np.zeros((2, sp.dim(T3))))


def test_mismatched_lengths():
    sp, v, y = SP3, V3, Y3
    with pytest.raises(StructpredError):
        sp.loss(y, np.array([0, 1]))
    with pytest.raises(StructpredError):
        sp.loss_augmented(v, np.array([0, 1]))
    with pytest.raises(StructpredError):
        sp.loss_augmented(np.zeros(sp.dim(4)), y)
    with pytest.raises(StructpredError):
        sp.top_k(v, np.array([0, 1, 2, 0]), 2)
    with pytest.raises(StructpredError):
        sp.max_min(v, warm=sp.max_min(np.zeros(sp.dim(4)), n_iter=1).state)
    with pytest.raises(StructpredError):
        sp.loss([y, y], [y])                          # batch sizes
    with pytest.raises(StructpredError):
        sp.loss_augmented([v, v], [y])


def test_linear_loss_mismatched_lengths():
    sp, y = SP3, Y3
    for lab in (np.array([0, 1]), np.array([0, 1, 2, 0])):
        with pytest.raises(StructpredError):
            sp.linear_loss(lab, sp.embed(y))


def test_bad_k_and_n_iter():
    for K in (0, -1):
        with pytest.raises(StructpredError):
            SP3.top_k(V3, None, K)
    with pytest.raises(StructpredError):
        SP3.max_min(V3, n_iter=-1)


# --- 11. batches ---------------------------------------------------------------------------------

def test_batches_of_different_lengths():
    sp = Chain(3, "absolute", weights="position")
    rng = np.random.default_rng(11)
    lengths = (1, 3, 2, 5)
    V = [rng.normal(size=sp.dim(T)) for T in lengths]
    Y = [rng.integers(0, 3, T) for T in lengths]
    Y2 = [rng.integers(0, 3, T) for T in lengths]
    n = len(lengths)

    def same_list(batch, single, exact=True):
        assert isinstance(batch, list) and len(batch) == n
        for b, s in zip(batch, single):
            if exact:
                np.testing.assert_array_equal(b, s)
            else:
                np.testing.assert_allclose(b, s, rtol=0, atol=1e-14)

    same_list(sp.decode(V), [sp.decode(v) for v in V])
    same_list(sp.marginals(V), [sp.marginals(v) for v in V], exact=False)
    same_list(sp.embed(Y), [sp.embed(y) for y in Y])
    same_list(sp.loss_augmented(V, Y), [sp.loss_augmented(v, y) for v, y in zip(V, Y)])
    M = sp.marginals(V)
    same_list(sp.bayes_decode(M), [sp.bayes_decode(m) for m in M])
    assert [len(d) for d in sp.decode(V)] == list(lengths)
    assert [len(m) for m in M] == [sp.dim(T) for T in lengths]

    def same_array(batch, single):
        assert isinstance(batch, np.ndarray) and batch.shape == (n,)
        np.testing.assert_allclose(batch, single, rtol=0, atol=1e-14)

    same_array(sp.loss(Y, Y2), [sp.loss(a, b) for a, b in zip(Y, Y2)])
    same_array(sp.log_partition(V), [sp.log_partition(v) for v in V])
    same_array(sp.entropy(M), [sp.entropy(m)[0] for m in M])
    same_array(sp.linear_loss(Y, M), [sp.linear_loss(y, m)[0] for y, m in zip(Y, M)])
    same_array(sp.min_loss(M), [sp.min_loss(m)[0] for m in M])
    # tuples are batches too
    same_array(sp.log_partition(tuple(V)), [sp.log_partition(v) for v in V])
    # max-min over a batch, with and without a warm start
    rb = sp.max_min(V, n_iter=3)
    rs = [sp.max_min(v, n_iter=3) for v in V]
    same_list(rb.mu, [r.mu for r in rs], exact=False)
    same_list(rb.nu, [r.nu for r in rs], exact=False)
    same_array(rb.gap, [r.gap for r in rs])
    same_array(rb.value, [r.value for r in rs])
    same_array(rb.upper, [r.upper for r in rs])
    rbw = sp.max_min(V, warm=rb.state, n_iter=3)
    rsw = [sp.max_min(v, warm=r.state, n_iter=3) for v, r in zip(V, rs)]
    same_list(rbw.mu, [r.mu for r in rsw], exact=False)
    same_array(rbw.gap, [r.gap for r in rsw])
    # cold states from init_maxmin_state are accepted
    rc = sp.max_min(V, warm=sp.init_maxmin_state(n), n_iter=3)
    same_array(rc.gap, rb.gap)
