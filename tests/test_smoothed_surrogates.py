"""Smoothed hinges (Casimir §4) on every space of the conformance suite, against enumeration:
the l2 smoothing over all outputs by a generic QP (cvxpy), the entropy smoothing by a
log-sum-exp over the outputs; gradients by finite differences; the hinge as mu -> 0."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from scipy.special import logsumexp

from structpred.errors import StructpredError
from structpred.outputs import Chain, Marginals, Multiclass, Permutation, TopK
from structpred.surrogates import EntropySmoothedHinge, Hinge, TopKSmoothedHinge
from structpred.surrogates.smoothed import simplex_projection
from tests.test_space_conformance import SPACES, _setup

TOPK = [s for s in SPACES if isinstance(s[1](), TopK)]
ENTROPY = [s for s in SPACES if isinstance(s[1](), Marginals)]


def _l2_smoothed_max(s, mu):
    """``max_{u in simplex} u^T s - mu/2 ||u||^2`` by a generic QP solver."""
    u = cp.Variable(len(s))
    prob = cp.Problem(cp.Maximize(s @ u - mu / 2 * cp.sum_squares(u)), [u >= 0, cp.sum(u) == 1])
    prob.solve()
    return prob.value


def _fd_grad(f, v, h=1e-6):
    g = np.zeros_like(v)
    for j in range(v.size):
        e = np.zeros_like(v)
        e[j] = h
        g[j] = (f(v + e) - f(v - e)) / (2 * h)
    return g


def test_simplex_projection_is_the_closest_point():
    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 12):
        for _ in range(5):
            z = 3 * rng.normal(size=n)
            u = simplex_projection(z)
            x = cp.Variable(n)
            cp.Problem(cp.Minimize(cp.sum_squares(x - z)), [x >= 0, cp.sum(x) == 1]).solve()
            np.testing.assert_allclose(u, x.value, atol=1e-6)
            assert u.min() >= 0 and abs(u.sum() - 1) < 1e-12


@pytest.mark.parametrize("name,factory,size", TOPK, ids=[s[0] for s in TOPK])
@pytest.mark.parametrize("mu", [0.05, 1.0, 7.0])
def test_topk_l2_smoothing_with_every_output_is_exact(name, factory, size, mu):
    space, Y, E, L, v = _setup(factory, size, seed=3)
    truth = len(Y) // 2
    y = Y[truth]
    sur = TopKSmoothedHinge(space, mu=mu, K=len(Y))
    value, grad = sur.value_grad([v] if space.ragged else v[None], [y] if space.ragged else [y])
    s = L[truth] + E @ v
    expected = _l2_smoothed_max(s, mu) - v @ E[truth]
    assert abs(value[0] - expected) < 1e-5
    # gradient: finite differences of the value, and sample_grad agrees with the batch
    f = lambda w: sur.value_grad([w] if space.ragged else w[None], [y])[0][0]  # noqa: E731
    np.testing.assert_allclose(np.ravel(grad[0]), _fd_grad(f, v), atol=1e-5)
    np.testing.assert_allclose(np.ravel(sur.sample_grad(0, v, y)), np.ravel(grad[0]), atol=1e-12)
    # the smoothing brackets the hinge: hinge - mu/2 <= S_mu <= hinge
    hinge = s.max() - v @ E[truth]
    assert hinge - mu / 2 - 1e-9 <= value[0] <= hinge + 1e-9


@pytest.mark.parametrize("name,factory,size", ENTROPY, ids=[s[0] for s in ENTROPY])
@pytest.mark.parametrize("mu", [0.05, 1.0, 7.0])
def test_entropy_smoothing_against_enumeration(name, factory, size, mu):
    space, Y, E, L, v = _setup(factory, size, seed=4)
    truth = len(Y) // 3
    y = Y[truth]
    sur = EntropySmoothedHinge(space, mu=mu)
    batch_v, batch_y = ([v], [y]) if space.ragged else (v[None], [y])
    value, grad = sur.value_grad(batch_v, batch_y)
    s = L[truth] + E @ v
    assert abs(value[0] - (mu * logsumexp(s / mu) - v @ E[truth])) < 1e-9
    p = np.exp(s / mu - logsumexp(s / mu))
    np.testing.assert_allclose(np.ravel(grad[0]), p @ E - E[truth], atol=1e-10)
    f = lambda w: sur.value_grad([w] if space.ragged else w[None], [y])[0][0]  # noqa: E731
    np.testing.assert_allclose(np.ravel(grad[0]), _fd_grad(f, v), atol=1e-5)
    np.testing.assert_allclose(np.ravel(sur.sample_grad(0, v, y)), np.ravel(grad[0]), atol=1e-12)
    hinge = s.max() - v @ E[truth]
    assert hinge - 1e-9 <= value[0] <= hinge + mu * np.log(len(Y)) + 1e-9


@pytest.mark.parametrize("smoothed", [lambda sp, mu: TopKSmoothedHinge(sp, mu=mu, K=3),
                                      lambda sp, mu: EntropySmoothedHinge(sp, mu=mu)],
                         ids=["topk-l2", "entropy"])
def test_mu_to_zero_gives_the_hinge(smoothed):
    rng = np.random.default_rng(5)
    sp = Chain(4, normalize=False)
    V = [rng.normal(size=sp.dim(T)) for T in (1, 3, 6)]
    Yl = [rng.integers(0, 4, size=T) for T in (1, 3, 6)]
    h_val, h_grad = Hinge(sp).value_grad(V, Yl)
    val, grad = smoothed(sp, 1e-7).value_grad(V, Yl)
    np.testing.assert_allclose(val, h_val, atol=1e-5)
    for a, b in zip(grad, h_grad):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_mu_can_change_between_calls_and_bad_values_are_refused():
    sp = Multiclass.zero_one(3)
    sur = TopKSmoothedHinge(sp, mu=1.0, K=3)
    v, y = np.array([[0.3, -0.2, 0.1]]), [0]
    a = sur.value_grad(v, y)[0][0]
    sur.mu = 0.01
    b = sur.value_grad(v, y)[0][0]
    assert a != b
    for bad in (0, -1.0, float("nan"), "x"):
        with pytest.raises(StructpredError, match="mu must be a positive number"):
            EntropySmoothedHinge(sp, mu=bad)
    with pytest.raises(StructpredError, match="K must be a positive integer"):
        TopKSmoothedHinge(sp, K=0)
    with pytest.raises(StructpredError, match="needs"):
        EntropySmoothedHinge(Permutation(3))


def test_unnormalised_hamming_counts_wrong_tokens():
    sp = Chain(8, normalize=False)
    y = np.array([0, 1, 2, 3, 4])
    assert sp.loss(y, np.array([0, 1, 5, 5, 4])) == 2.0
    assert Chain(8).loss(y, np.array([0, 1, 5, 5, 4])) == pytest.approx(0.4)
    # at w = 0 every token is wrong in the loss-augmented argmax: the hinge is the length
    assert Hinge(sp).value_grad([np.zeros(sp.dim(5))], [y])[0][0] == 5.0


@pytest.mark.parametrize("K", [1, 3, 8, 50])
def test_compiled_chain_path_equals_the_oracle_path(K):
    """Chain.smoothed_top_k (one compiled call) against the generic top_k + embed + projection."""
    rng = np.random.default_rng(K)
    for space in (Chain(4, normalize=False), Chain(3, "absolute", "position")):
        sur = TopKSmoothedHinge(space, mu=0.7, K=K)
        for T in (1, 2, 5):
            v = 2 * rng.normal(size=space.dim(T))
            y = rng.integers(0, space.R, size=T)
            value, grad = space.smoothed_top_k(v, y, K, 0.7)
            ref_value, ref_grad = sur._one_from_oracles(v, y)
            assert abs(value - ref_value) < 1e-10
            np.testing.assert_allclose(grad, ref_grad, atol=1e-12)
