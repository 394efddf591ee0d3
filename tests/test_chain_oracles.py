"""Chain output space (M4N Ex. 2.1 / App. G.2): layout, loss, Viterbi, top-K, sum-product,
Bayes decoding, entropy and the affine-loss terms against enumeration of all R^T sequences."""

import numpy as np
import pytest
from scipy.special import logsumexp

from structpred.outputs.chain import NODE_LOSSES, Chain, node_loss_matrix
from tests.reference import (
    CASE_IDS,
    CASES,
    Brute,
    bruteforce_cases,
    chain_space,
    random_loss,
    ref_embed,
    ref_weights,
)

# --- layout, embedding and loss ------------------------------------------------------------

@pytest.mark.parametrize("loss,weights", CASES, ids=CASE_IDS)
def test_embed_loss_and_layout(loss, weights):
    rng = np.random.default_rng(0)
    for R, T in bruteforce_cases():
        sp = chain_space(loss, weights, R)
        bf = Brute(loss, weights, R, T)
        assert sp.dim(T) == T * R + (T - 1) * R * R == bf.E.shape[1]
        assert sp.length(np.zeros(sp.dim(T))) == T
        np.testing.assert_allclose(sp.weighted_loss(T), bf.A, atol=1e-15)
        np.testing.assert_allclose(sp.position_weights(T).sum(), 1.0, atol=1e-15)
        for i in rng.choice(len(bf.Y), size=min(10, len(bf.Y)), replace=False):
            np.testing.assert_array_equal(sp.embed(bf.Y[i]), bf.E[i])
            U, P = sp.split(bf.E[i])
            assert U.shape == (T, R) and P.shape == (T - 1, R, R)
            for j in rng.choice(len(bf.Y), size=min(10, len(bf.Y)), replace=False):
                assert abs(sp.loss(bf.Y[i], bf.Y[j]) - bf.L[i, j]) < 1e-14
                # affine form: L(y, y') = phi(y)^T A phi(y') with A = blockdiag(A_t) on the unaries
                assert abs(sp.linear_loss(bf.Y[i], bf.E[j])[0] - bf.L[i, j]) < 1e-14


def test_loss_values_by_hand():
    y, y2 = np.array([0, 1, 2]), np.array([2, 1, 0])
    assert Chain(3, "absolute").loss(y, y2) == pytest.approx(4 / 3, abs=1e-15)
    # w = (1, 2, 3) / 6: (1 * 2 + 2 * 0 + 3 * 2) / 6
    assert Chain(3, "absolute", weights="position").loss(y, y2) == pytest.approx(8 / 6, abs=1e-15)
    assert Chain(3, "squared", weights="position").loss(y, y2) == pytest.approx((4 + 12) / 6, abs=1e-15)
    assert Chain(3, "hamming").loss(y, y2) == pytest.approx(2 / 3, abs=1e-15)
    assert Chain(3, "zero_one").loss(y, y) == 0.0
    # first argument is the truth: row of the node loss matrix
    C = np.array([[0.0, 1.0], [5.0, 0.0]])
    sp = Chain(2, C)
    assert sp.loss(np.array([1, 1]), np.array([0, 1])) == pytest.approx(2.5, abs=1e-15)
    assert sp.loss(np.array([0, 1]), np.array([1, 1])) == pytest.approx(0.5, abs=1e-15)
    # custom weights (normalised)
    sp = Chain(2, "hamming", weights=lambda T: np.array([1.0, 3.0])[:T])
    assert sp.loss(np.array([0, 0]), np.array([0, 1])) == pytest.approx(0.75, abs=1e-15)
    np.testing.assert_allclose(node_loss_matrix("squared", 3), [[0, 1, 4], [1, 0, 1], [4, 1, 0]])
    assert set(NODE_LOSSES) >= {"hamming", "absolute", "squared"}


# --- 1. Viterbi, 2. loss-augmented Viterbi -----------------------------------------------------

@pytest.mark.parametrize("loss,weights", CASES, ids=CASE_IDS)
def test_decode_and_loss_augmented_brute_force(loss, weights):
    for R, T in bruteforce_cases():
        sp = chain_space(loss, weights, R)
        bf = Brute(loss, weights, R, T)
        for seed in range(4):
            rng = np.random.default_rng(seed)
            # last seed: small integer scores, full of ties
            v = rng.integers(-2, 3, sp.dim(T)).astype(float) if seed == 3 else rng.normal(scale=1 + seed, size=sp.dim(T))
            s = bf.E @ v
            order = np.sort(s)
            y = sp.decode(v)
            assert y.dtype == np.int64 and y.shape == (T,)
            assert abs(ref_embed(y, R) @ v - s.max()) < 1e-12
            if len(s) == 1 or order[-1] - order[-2] > 1e-9:
                np.testing.assert_array_equal(y, bf.Y[np.argmax(s)])
            for i in rng.choice(len(bf.Y), size=min(6, len(bf.Y)), replace=False):
                aug = bf.L[i] + s
                ya = sp.loss_augmented(v, bf.Y[i])
                assert ya.dtype == np.int64 and ya.shape == (T,)
                assert abs(bf.L[i, bf.index(ya)] + ref_embed(ya, R) @ v - aug.max()) < 1e-12
                srt = np.sort(aug)
                if len(aug) == 1 or srt[-1] - srt[-2] > 1e-9:
                    np.testing.assert_array_equal(ya, bf.Y[np.argmax(aug)])


# --- 3. log-partition and marginals ------------------------------------------------------------

@pytest.mark.parametrize("loss,weights", [("hamming", None), ("random", "position")])
def test_log_partition_and_marginals_brute_force(loss, weights):
    for R, T in bruteforce_cases():
        sp = chain_space(loss, weights, R)
        bf = Brute(loss, weights, R, T)
        for seed in range(3):
            rng = np.random.default_rng(seed)
            for scale, shift in ((1.0, 0.0), (3.0, 0.0), (200.0, 0.0), (200.0, 1000.0)):
                v = rng.normal(scale=scale, size=sp.dim(T))
                v[: T * R] += shift
                s = bf.E @ v
                ref_lz = logsumexp(s)
                if shift:
                    with np.errstate(over="ignore"):
                        assert not np.isfinite(np.sum(np.exp(s)))   # the naive formula overflows
                lz = sp.log_partition(v)
                assert isinstance(lz, float)
                assert abs(lz - ref_lz) <= 1e-10 * max(1.0, abs(ref_lz) / 1000), (R, T, seed, scale, lz, ref_lz)
                m = sp.marginals(v)
                ref_m = bf.probs(v) @ bf.E
                assert np.all(np.isfinite(m)) and m.shape == (sp.dim(T),)
                mU, mP = sp.split(m)
                rU, rP = sp.split(ref_m)
                np.testing.assert_allclose(mU, rU, rtol=0, atol=1e-10)
                np.testing.assert_allclose(mP, rP, rtol=0, atol=1e-10)
                # consistency of the blocks
                np.testing.assert_allclose(mU.sum(1), 1.0, atol=1e-12)
                np.testing.assert_allclose(mP.sum(2), mU[:-1], atol=1e-12)
                np.testing.assert_allclose(mP.sum(1), mU[1:], atol=1e-12)


# --- 4. top-K ----------------------------------------------------------------------------------

@pytest.mark.parametrize("loss,weights", CASES, ids=CASE_IDS)
def test_top_k_brute_force(loss, weights):
    for R, T in bruteforce_cases():
        sp = chain_space(loss, weights, R)
        bf = Brute(loss, weights, R, T)
        N = len(bf.Y)
        for seed in range(3):
            rng = np.random.default_rng(seed)
            v = rng.integers(-1, 2, sp.dim(T)).astype(float) if seed == 2 else rng.normal(size=sp.dim(T))
            yt = bf.Y[rng.integers(N)]
            for y in (None, yt):
                total = bf.E @ v + (0.0 if y is None else bf.L[bf.index(y)])
                ref = np.sort(total)[::-1]
                for K in sorted({1, 2, 5, N - 1, N, N + 7} - {0}):
                    Ys, S = sp.top_k(v, y, K)
                    Kp = min(K, N)
                    assert Ys.shape == (Kp, T) and S.shape == (Kp,) and Ys.dtype == np.int64
                    np.testing.assert_allclose(S, ref[:Kp], rtol=0, atol=1e-12)
                    assert np.all(np.diff(S) <= 1e-12)
                    idx = [bf.index(r) for r in Ys]
                    assert len(set(idx)) == Kp                           # distinct sequences
                    np.testing.assert_allclose(total[idx], S, rtol=0, atol=1e-12)
                    if K >= N:
                        assert sorted(idx) == list(range(N))             # every sequence once
                # the best one agrees with the (loss-augmented) Viterbi score
                y1 = sp.decode(v) if y is None else sp.loss_augmented(v, y)
                assert abs(total[bf.index(y1)] - sp.top_k(v, y, 1)[1][0]) < 1e-12


# --- 5. Bayes decoding, 6. entropy ---------------------------------------------------------------

@pytest.mark.parametrize("loss,weights", CASES, ids=CASE_IDS)
def test_bayes_decode_and_entropy_brute_force(loss, weights):
    for R, T in bruteforce_cases():
        sp = chain_space(loss, weights, R)
        bf = Brute(loss, weights, R, T)
        for seed in range(3):
            v = np.random.default_rng(seed).normal(scale=(0.5, 1.5, 4.0)[seed], size=sp.dim(T))
            m = sp.marginals(v)
            p = bf.probs(v)
            risk = p @ bf.L                                  # risk[j] = sum_i p_i L(Y_i, Y_j)
            yb = sp.bayes_decode(m)
            assert yb.dtype == np.int64 and yb.shape == (T,)
            assert risk[bf.index(yb)] - risk.min() <= 1e-12
            # the expected loss is linear in the marginals: linear_loss(y, m) = E_p L(y, Y)
            # (L(y, y') here with the truth y fixed and y' ~ p)
            for i in (0, len(bf.Y) - 1):
                assert abs(sp.linear_loss(bf.Y[i], m)[0] - bf.L[i] @ p) < 1e-12
            H = -np.sum(p[p > 0] * np.log(p[p > 0]))
            h = sp.entropy(m)
            assert h.shape == (1,)
            assert abs(h[0] - H) < 1e-9, (R, T, seed, h[0], H)


def test_entropy_extremes():
    sp = Chain(3)
    for T in (1, 2, 4):
        # uniform scores: entropy T log R
        assert abs(sp.entropy(sp.marginals(np.zeros(sp.dim(T))))[0] - T * np.log(3)) < 1e-12
        # a sequence's embedding: entropy 0
        assert abs(sp.entropy(sp.embed(np.arange(T) % 3))[0]) < 1e-15



# --- 12. linear loss and min loss ---------------------------------------------------------------

@pytest.mark.parametrize("loss,weights", CASES + [("random0", "position")], ids=CASE_IDS + ["random0-position"])
def test_linear_loss_and_min_loss(loss, weights):
    for R, T in bruteforce_cases(lengths=(1, 2, 4)):
        if loss == "random0":
            C = random_loss(R, zero_diag=True)
            sp = Chain(R, C, weights=weights)
            bf = Brute("hamming", weights, R, T)
            bf.A = ref_weights(weights, T)[:, None, None] * C[None]
            bf.L = sum(bf.A[t][bf.Y[:, t][:, None], bf.Y[:, t][None, :]] for t in range(T))
        else:
            sp = chain_space(loss, weights, R)
            bf = Brute(loss, weights, R, T)
        zero_diag = loss != "random"
        rng = np.random.default_rng(R * 10 + T)
        for j in rng.choice(len(bf.Y), size=min(8, len(bf.Y)), replace=False):
            mu = sp.embed(bf.Y[j])
            for i in rng.choice(len(bf.Y), size=min(8, len(bf.Y)), replace=False):
                assert abs(sp.linear_loss(bf.Y[i], mu)[0] - sp.loss(bf.Y[i], bf.Y[j])) < 1e-14
            ml = sp.min_loss(mu)
            assert ml.shape == (1,)
            # min_y' L(y', y_j) over the truth y' (first argument)
            assert abs(ml[0] - bf.L[:, j].min()) < 1e-14
            if zero_diag:
                assert ml[0] == 0.0
        for seed in range(3):
            v = np.random.default_rng(seed).normal(scale=2.0, size=sp.dim(T))
            m = sp.marginals(v)
            p = bf.probs(v)
            # min over y' of phi(y')^T A mu = min_y' sum_t (A_t mu_t)[y'_t], by enumeration
            assert abs(sp.min_loss(m)[0] - np.min(bf.L @ p)) < 1e-12
            for i in (0, len(bf.Y) // 2):
                assert abs(sp.linear_loss(bf.Y[i], m)[0] - bf.L[i] @ p) < 1e-12
