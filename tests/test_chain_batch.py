"""The chain kernels over blocks of words (``outputs/_chain_batch.py``): bitwise the single-word
kernels (log-partition, sum-product, Viterbi, top-K, ties and the pruned log-sum-exp included),
the ragged drivers and the chain space's ragged batches that route through them (marginals,
log-partition, top-K), and against enumeration of all R^T sequences through the batched paths."""

import numpy as np
import pytest
from scipy.special import logsumexp

from structpred.errors import StructpredError
from structpred.outputs import _chain_batch as KB
from structpred.outputs import _chain_kernels as K_
from structpred.outputs.chain import Chain
from tests.reference import Brute, bruteforce_cases, chain_space


def words(rng, R, lengths, kind):
    """Score vectors ``(U (T, R), P (T-1, R, R))`` of every kind the kernels branch on: N(0, 1),
    small integers (ties everywhere), peaked (terms beyond the 40-nat cut, the log-sum-exp of one
    term) and shifted by 1000 (sums that overflow without the max)."""
    out = []
    for T in lengths:
        v = rng.normal(size=T * R + (T - 1) * R * R)
        if kind == "ties":
            v = np.round(2 * v)
        elif kind == "peaked":
            v *= 200.0
        elif kind == "shifted":
            v = 3.0 * v + 1000.0
        out.append((v[: T * R].reshape(T, R).copy(), v[T * R:].reshape(T - 1, R, R).copy()))
    return out


def block(ws):
    """Lane-major ``(Ub (T, R, L), Pb (T-1, R, R, L))`` of equal-length words."""
    return (np.ascontiguousarray(np.stack([u for u, _ in ws], axis=-1)),
            np.ascontiguousarray(np.stack([p for _, p in ws], axis=-1)))


KINDS = ["normal", "ties", "peaked", "shifted"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("R,T,L", [(2, 1, 3), (3, 4, 1), (3, 5, 17), (5, 3, 32), (26, 3, 9)])
def test_blocks_are_bitwise_the_single_word_kernels(kind, R, T, L):
    ws = words(np.random.default_rng(R * 100 + T * 10 + L), R, [T] * L, kind)
    Ub, Pb = block(ws)
    lz = np.empty(L)
    KB.log_partition_block(Ub, Pb, lz)
    np.testing.assert_array_equal(lz, [K_.log_partition(u, p) for u, p in ws])
    node, edge, lz2 = np.empty((T, R, L)), np.empty((T - 1, R, R, L)), np.empty(L)
    KB.sum_product_block(Ub, Pb, node, edge, True, lz2)
    Y, S = np.empty((T + 2, L), dtype=np.int64), np.empty(L)
    KB.viterbi_block(Ub, Pb, Y, S)
    for w, (u, p) in enumerate(ws):
        n1, e1 = np.empty((T, R)), np.empty((T - 1, R, R))
        assert K_.sum_product(u, p, n1, e1, True) == lz2[w]
        np.testing.assert_array_equal(node[..., w], n1)
        np.testing.assert_array_equal(edge[..., w], e1)
        y1 = np.empty(T, dtype=np.int64)
        assert K_.viterbi(u, p, y1) == S[w]
        np.testing.assert_array_equal(Y[:T, w], y1)
    for K in sorted({1, 4, R ** T + 2}):
        Yk, Sk, f = np.zeros((K, T, L), dtype=np.int64), np.zeros((K, L)), np.empty(L, dtype=np.int64)
        KB.top_k_block(Ub, Pb, K, Yk, Sk, f)
        for w, (u, p) in enumerate(ws):
            Y1, S1 = np.zeros((K, T), dtype=np.int64), np.zeros(K)
            n = K_.top_k_viterbi(u, p, K, Y1, S1)
            assert f[w] == n
            np.testing.assert_array_equal(Yk[:n, :, w], Y1[:n])
            np.testing.assert_array_equal(Sk[:n, w], S1[:n])


def test_plan_covers_every_word_once_in_equal_length_blocks():
    lengths = np.random.default_rng(0).integers(1, 9, 300)
    for lanes, min_words in ((32, 16), (4, 2), (5, 1), (8, 100)):
        blocks, singles = KB.plan(lengths, lanes, min_words)
        assert blocks.shape[1] == lanes and blocks.dtype == singles.dtype == np.int64
        assert np.all(lengths[blocks] == lengths[blocks[:, :1]])           # one length per block
        covered = np.concatenate([np.unique(blocks), singles])
        np.testing.assert_array_equal(np.sort(covered), np.arange(lengths.size))
        for T in np.unique(lengths):
            n = int(np.sum(lengths == T))
            left = int(np.sum(lengths[singles] == T))
            assert left == (n % lanes if n % lanes < min_words else 0)
        for row in blocks:              # padding repeats the block's last word
            real = row[: np.flatnonzero(row == row[-1])[0] + 1]
            assert np.all(np.diff(real) > 0)
    blocks, singles = KB.plan(np.empty(0, dtype=np.int64))
    assert blocks.shape == (0, KB.LANES) and singles.shape == (0,)


@pytest.fixture(params=[(32, 16, None), (4, 2, None), (3, 1, 200)], ids=["default", "lanes4", "lanes3-chunks"])
def lanes(request, monkeypatch):
    """The ragged drivers' block size and tail rule (small ones: blocks, padding and singles on
    small batches) and the chain space's chunk of a ragged batch (small: many chunks)."""
    from structpred.outputs import chain

    lanes_, min_words, chunk = request.param
    monkeypatch.setattr(KB, "LANES", lanes_)
    monkeypatch.setattr(KB, "MIN_WORDS", min_words)
    if chunk is not None:
        monkeypatch.setattr(chain, "BATCH_DOUBLES", chunk)
    return request.param


def flat_batch(ws):
    """The drivers' view of words ``(U, P)``: one flat array, unary and pairwise starts, lengths."""
    vs = [np.r_[u.ravel(), p.ravel()] for u, p in ws]
    sizes = np.array([v.size for v in vs])
    lengths = np.array([u.shape[0] for u, _ in ws], dtype=np.int64)
    starts = (np.cumsum(sizes) - sizes).astype(np.int64)
    return np.concatenate(vs), starts, starts + lengths * ws[0][0].shape[1], lengths


@pytest.mark.parametrize("kind", KINDS)
def test_ragged_drivers_are_bitwise_the_single_word_kernels(kind, lanes):
    rng = np.random.default_rng(7 + len(kind))
    R = 3
    ws = words(rng, R, rng.integers(1, 6, 80), kind)
    flat, starts, pstarts, lengths = flat_batch(ws)
    blocks, singles = KB.plan(lengths)
    n = len(ws)
    args = (flat, starts, flat, pstarts, lengths, R, blocks, singles)
    lz, marg, lz2 = np.empty(n), np.empty(flat.size), np.empty(n)
    KB.log_partitions(*args, lz)
    KB.sums_products(*args, marg, starts, lz2)
    ystarts = (np.cumsum(lengths) - lengths).astype(np.int64)
    Y, S = np.empty(lengths.sum(), dtype=np.int64), np.empty(n)
    KB.viterbis(*args, Y, ystarts, S)
    K = 4
    YK, SK, found = np.zeros(K * lengths.sum(), dtype=np.int64), np.zeros((n, K)), np.empty(n, dtype=np.int64)
    KB.top_ks(flat, starts, flat, pstarts, lengths, R, K, blocks, singles, YK, ystarts, SK, found)
    for i, (u, p) in enumerate(ws):
        T = u.shape[0]
        assert K_.log_partition(u, p) == lz[i]
        n1, e1 = np.empty((T, R)), np.empty((T - 1, R, R))
        assert K_.sum_product(u, p, n1, e1, True) == lz2[i]
        d = T * R + (T - 1) * R * R
        np.testing.assert_array_equal(marg[starts[i]: starts[i] + d], np.r_[n1.ravel(), e1.ravel()])
        y1 = np.empty(T, dtype=np.int64)
        assert K_.viterbi(u, p, y1) == S[i]
        np.testing.assert_array_equal(Y[ystarts[i]: ystarts[i] + T], y1)
        Y1, S1 = np.zeros((K, T), dtype=np.int64), np.zeros(K)
        f = K_.top_k_viterbi(u, p, K, Y1, S1)
        assert f == found[i]
        np.testing.assert_array_equal(YK[K * ystarts[i]: K * ystarts[i] + f * T], Y1[:f].ravel())
        np.testing.assert_array_equal(SK[i, :f], S1[:f])


@pytest.mark.parametrize("kind", KINDS)
def test_ragged_batches_are_bitwise_the_per_word_oracles(kind, lanes):
    rng = np.random.default_rng(len(kind))
    for R in (2, 4):
        sp = Chain(R, "absolute", weights="position")
        lengths = rng.integers(1, 6, 70)
        vs = [np.r_[u.ravel(), p.ravel()] for u, p in words(rng, R, lengths, kind)]
        ys = [rng.integers(0, R, T) for T in lengths]
        for a, v in zip(sp.marginals(vs), vs):
            np.testing.assert_array_equal(a, sp.marginals(v))
        np.testing.assert_array_equal(sp.log_partition(vs), [sp.log_partition(v) for v in vs])
        for K in (1, 3, 40):
            for y in (None, ys):
                for (Y, S), v, yi in zip(sp.top_k(vs, y, K), vs, ys if y is not None else [None] * len(vs)):
                    Y1, S1 = sp.top_k(v, yi, K)
                    np.testing.assert_array_equal(Y, Y1)
                    np.testing.assert_array_equal(S, S1)


def test_ragged_batches_check_their_scores():
    sp = Chain(3)
    v = np.zeros(sp.dim(2))
    assert sp.marginals([]) == [] and sp.top_k([], None, 2) == []
    assert sp.log_partition([]).shape == (0,)
    with pytest.raises(StructpredError, match="NaN or infinite"):
        sp.log_partition([v, np.r_[v[:-1], np.nan]])
    with pytest.raises(StructpredError, match="entries"):
        sp.marginals([v, v[:-1]])
    with pytest.raises(StructpredError, match="1-d"):
        sp.marginals([v, v[None]])
    with pytest.raises(StructpredError, match="labels of length"):
        sp.top_k([v, v], [np.zeros(2, dtype=int), np.zeros(3, dtype=int)], 2)
    with pytest.raises(StructpredError, match="batch sizes differ"):
        sp.top_k([v, v], [np.zeros(2, dtype=int)], 2)


@pytest.mark.parametrize("loss,weights", [("hamming", None), ("random", "position")])
def test_batched_oracles_against_enumeration(loss, weights, lanes):
    """Every batched oracle against all R^T sequences: a batch of several words per length."""
    for R, T in bruteforce_cases():
        sp = chain_space(loss, weights, R)
        bf = Brute(loss, weights, R, T)
        rng = np.random.default_rng(R * 10 + T)
        vs = [rng.normal(scale=s, size=sp.dim(T)) for s in (1.0, 3.0, 200.0, 0.5, 2.0)]
        vs.append(rng.integers(-2, 3, sp.dim(T)).astype(float))                  # ties
        ys = [bf.Y[rng.integers(len(bf.Y))] for _ in vs]
        lz = sp.log_partition(vs)
        marg = sp.marginals(vs)
        ws = [sp.split(v) for v in vs]
        flat, starts, pstarts, lengths = flat_batch(ws)
        blocks, singles = KB.plan(lengths)
        Yv = np.empty(lengths.sum(), dtype=np.int64)
        KB.viterbis(flat, starts, flat, pstarts, lengths, R, blocks, singles, Yv, np.arange(len(vs)) * T,
                    np.empty(len(vs)))
        dec = Yv.reshape(len(vs), T).copy()
        aug_u = np.concatenate([(sp.split(v)[0] + sp._loss_rows(y)).ravel() for v, y in zip(vs, ys)])
        KB.viterbis(aug_u, np.arange(len(vs)) * T * R, flat, pstarts, lengths, R, blocks, singles, Yv,
                    np.arange(len(vs)) * T, np.empty(len(vs)))
        aug = Yv.reshape(len(vs), T)
        N = len(bf.Y)
        tops = {K: (sp.top_k(vs, None, K), sp.top_k(vs, ys, K)) for K in sorted({1, 3, N + 2})}
        for w, (v, y) in enumerate(zip(vs, ys)):
            s = bf.E @ v
            assert abs(lz[w] - logsumexp(s)) <= 1e-10 * max(1.0, abs(logsumexp(s)) / 1000)
            np.testing.assert_allclose(marg[w], bf.probs(v) @ bf.E, rtol=0, atol=1e-10)
            assert abs(s[bf.index(dec[w])] - s.max()) < 1e-12
            total = bf.L[bf.index(y)] + s
            assert abs(total[bf.index(aug[w])] - total.max()) < 1e-12
            for K, (plain, augmented) in tops.items():
                for (Ys, S), tot in ((plain[w], s), (augmented[w], total)):
                    ref = np.sort(tot)[::-1][: min(K, N)]
                    np.testing.assert_allclose(S, ref, rtol=0, atol=1e-12)
                    idx = [bf.index(r) for r in Ys]
                    assert len(set(idx)) == len(idx) == min(K, N)
                    np.testing.assert_allclose(tot[idx], S, rtol=0, atol=1e-12)
