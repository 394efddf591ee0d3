"""Chain SP-MP max-min oracle: against an exact LP over the local (= marginal) polytope, gap
rate, warm starts, the numba kernel against a log-domain reference, AGM's game value."""

import numpy as np
import pytest
from scipy.special import logsumexp

from structpred.outputs.chain import Chain
from tests.reference import (
    CASE_IDS,
    CASES,
    LENGTHS,
    Brute,
    bruteforce_cases,
    chain_maxmin_lp,
    chain_space,
    check_in_polytope,
    polytope_violation,
)


@pytest.mark.parametrize("loss,weights", CASES, ids=CASE_IDS)
def test_maxmin_vs_exact_lp(loss, weights):
    violations = []
    for R, T in bruteforce_cases(lengths=(1, 2, 3, 4)):
        sp = chain_space(loss, weights, R, iterations_per_node=False)
        bf = Brute(loss, weights, R, T)
        A = bf.A
        eta = 1.0 / (2.0 * np.abs(A).max())
        for seed in range(2):
            v = np.random.default_rng(seed).normal(size=sp.dim(T))
            lp = chain_maxmin_lp(v, A, R, T)
            gaps = {}
            for n_iter in (5, 200):
                r = sp.max_min(v, n_iter=n_iter)
                assert r.value <= lp + 1e-9 and lp <= r.upper + 2e-9, (R, T, seed, n_iter, r.value, lp, r.upper)
                assert r.gap == r.upper - r.value and r.gap >= -1e-12
                violations.append(((R, T, seed, n_iter), polytope_violation(sp, r.mu, r.nu, T)))
                # both bounds are exact: recompute the inner problems independently
                mU, _ = sp.split(r.mu)
                lower = np.sum(np.min(np.einsum("tij,tj->ti", A, mU), axis=1)) + v @ r.mu
                assert abs(r.value - lower) < 1e-12
                nu = r.nu.reshape(T, R)
                upper = np.max(bf.E @ v + sum(nu[t] @ A[t][:, bf.Y[:, t]] for t in range(T)))
                assert abs(r.upper - upper) < 1e-12
                gaps[n_iter] = r.gap
            assert gaps[200] < gaps[5]
            # Mirror-Prox rate (Nemirovski 2004) with the entropies (range T log R each, from the
            # uniform start) and step eta = 1 / (2 max|A|): gap <= 2 T log R / (eta K).
            # Measured gap / bound on these inputs: 0.14-0.94 (a proven bound, deterministic inputs).
            assert gaps[200] <= 2 * T * np.log(R) / (eta * 200)
    # result.mu in the marginal polytope, result.nu in the product of simplices (checked last
    # so that the LP comparisons above run for every case)
    bad = [(case, err) for case, err in violations if err > 1e-12]
    assert not bad, f"(R, T, seed, n_iter), max violation: {bad}"


def test_maxmin_gap_rate_and_threshold():
    # R = 3, T = 4, standard normal scores, normalised Hamming (max|A_t| = 1/4, eta = 2):
    # measured mean gaps over 8 seeds 0.433, 0.123, 0.030, 0.0119 at K = 5, 20, 80, 200;
    # the Mirror-Prox bound 2 T log R / (eta K) is 0.022 at K = 200
    R, T = 3, 4
    sp = Chain(R, iterations_per_node=False)
    V = [np.random.default_rng(s).normal(size=sp.dim(T)) for s in range(8)]
    Ks = (5, 20, 80, 200)
    gaps = np.array([[sp.max_min(v, n_iter=K).gap for v in V] for K in Ks])
    mean = gaps.mean(1)
    assert np.all(np.diff(mean) < 0)
    assert np.all(gaps[-1] < gaps[0])
    eta = 2.0
    assert mean[-1] < 0.02 and np.max(gaps[-1]) < 2 * T * np.log(R) / (eta * 200)
    assert mean[-1] < mean[0] / 20
    # roughly 1/K: 40x more iterations, a 36x smaller mean gap
    assert 20 < mean[0] / mean[-1] < 80


def test_hamming_fast_path_matches_general_path():
    # node loss 1 - I takes an O(R) kernel path (kind 1); forcing the general path gives the same
    sp = Chain(3, "hamming", weights="position", iterations_per_node=False)
    assert sp._kind == 1
    slow = Chain(3, "hamming", weights="position", iterations_per_node=False)
    slow._kind = 0
    for seed in range(3):
        v = np.random.default_rng(seed).normal(size=sp.dim(4))
        a, b = sp.max_min(v, n_iter=30), slow.max_min(v, n_iter=30)
        np.testing.assert_allclose(a.mu, b.mu, atol=1e-12)
        np.testing.assert_allclose(a.nu, b.nu, atol=1e-12)
        assert abs(a.gap - b.gap) < 1e-12


# --- 8. warm start ------------------------------------------------------------------------------

@pytest.mark.parametrize("loss,weights", [("hamming", None), ("squared", "position"), ("random", None)])
def test_maxmin_warm_start(loss, weights):
    R, T, K = 3, 4, 10
    sp = chain_space(loss, weights, R, iterations_per_node=False)
    rng = np.random.default_rng(7)
    V = rng.normal(size=(12, sp.dim(T)))
    cold = [sp.max_min(v, n_iter=K) for v in V]
    warm = [sp.max_min(v, warm=c.state, n_iter=K) for v, c in zip(V, cold)]
    g_cold = np.array([r.gap for r in cold])
    g_warm = np.array([r.gap for r in warm])
    # measured warm / cold mean gap: 0.14 (hamming), 0.26 (squared-position), 0.14 (random)
    assert g_warm.mean() < 0.5 * g_cold.mean()
    # and better than 2K iterations from scratch (measured ratio 0.24-0.43)
    g_2k = np.array([sp.max_min(v, n_iter=2 * K).gap for v in V])
    assert g_warm.mean() < g_2k.mean()
    for v, r in zip(V, warm):
        check_in_polytope(sp, r.mu, r.nu, T)
    # a warm start from slightly different scores (as in GBCFW) still helps (measured 0.14-0.27)
    V2 = V + 0.05 * rng.normal(size=V.shape)
    g_cold2 = np.mean([sp.max_min(v, n_iter=K).gap for v in V2])
    g_warm2 = np.mean([sp.max_min(v, warm=c.state, n_iter=K).gap for v, c in zip(V2, cold)])
    assert g_warm2 < g_cold2
    # the caller's state is not modified, and a warm call is deterministic
    s0, s1 = cold[0].state[0].copy(), cold[0].state[1].copy()
    again = sp.max_min(V[0], warm=cold[0].state, n_iter=K)
    np.testing.assert_array_equal(cold[0].state[0], s0)
    np.testing.assert_array_equal(cold[0].state[1], s1)
    np.testing.assert_array_equal(again.mu, warm[0].mu)
    # a warm (None, None) state is a cold start
    np.testing.assert_array_equal(sp.max_min(V[0], warm=(None, None), n_iter=K).mu, cold[0].mu)


def test_maxmin_warm_start_continues_iterates():
    """K cold iterations then K warm ones: the last iterates equal those of 2K cold iterations
    (only the averages restart)."""
    R, T = 3, 3
    sp = Chain(R, "absolute", iterations_per_node=False)
    v = np.random.default_rng(3).normal(size=sp.dim(T))
    r1 = sp.max_min(v, n_iter=7)
    r2 = sp.max_min(v, warm=r1.state, n_iter=7)
    r14 = sp.max_min(v, n_iter=14)
    # theta is compared through its marginals (it is defined up to per-position constants)
    np.testing.assert_allclose(sp.marginals(r2.state[0]), sp.marginals(r14.state[0]), atol=1e-10)
    np.testing.assert_allclose(r2.state[1], r14.state[1], atol=1e-10)
    # averages: (avg of 1..7 + avg of 8..14) / 2 = avg of 1..14
    np.testing.assert_allclose((r1.mu + r2.mu) / 2, r14.mu, atol=1e-10)
    np.testing.assert_allclose((r1.nu + r2.nu) / 2, r14.nu, atol=1e-10)
    # n_iter = 0: the projection of the state; from a cold start the uniform pair
    r0 = sp.max_min(v, n_iter=0)
    np.testing.assert_allclose(r0.mu, sp.marginals(np.zeros(sp.dim(T))), atol=1e-15)
    np.testing.assert_allclose(r0.nu, 1 / R, atol=1e-15)
    rw = sp.max_min(v, warm=r1.state, n_iter=0)
    np.testing.assert_allclose(rw.mu, sp.marginals(r1.state[0]), atol=1e-12)
    np.testing.assert_allclose(rw.nu, np.exp(r1.state[1]), atol=1e-12)


def test_mix_warm_state():
    R, T = 3, 4
    sp = Chain(R, "squared")
    v = np.random.default_rng(2).normal(size=sp.dim(T))
    r = sp.max_min(v, n_iter=5)
    lmu, lnu = r.state[0].copy(), r.state[1].copy()
    nu0 = np.exp(lnu).reshape(T, R)
    np.testing.assert_allclose(nu0.sum(1), 1.0, atol=1e-12)
    for eps in (0.1, 0.5):
        a, b = lmu.copy(), lnu.copy()
        sp.mix_warm_state(a, b, eps)
        # the mu iterate's marginals are mixed with the uniform marginals (mean-parameter space)
        mixed = (1 - eps) * sp.marginals(lmu)
        mixed[: T * R] += eps / R
        mixed[T * R:] += eps / R**2
        np.testing.assert_allclose(sp.marginals(a), mixed, atol=1e-12)
        nu = np.exp(b).reshape(T, R)
        np.testing.assert_allclose(nu.sum(1), 1.0, atol=1e-12)
        np.testing.assert_allclose(nu, (1 - eps) * nu0 + eps / R, atol=1e-12)
        # still a usable warm state
        rw = sp.max_min(v, warm=(a, b), n_iter=5)
        check_in_polytope(sp, rw.mu, rw.nu, T)
        assert rw.gap >= -1e-12
    # eps -> 1: uniform nu and uniform mu marginals
    a, b = lmu.copy(), lnu.copy()
    sp.mix_warm_state(a, b, 1.0 - 1e-15)
    np.testing.assert_allclose(np.exp(b), 1 / R, atol=1e-12)
    np.testing.assert_allclose(sp.marginals(a)[: T * R], 1 / R, atol=1e-12)


def test_maxmin_projection_of_state_is_exact():
    """With n_iter = 0, max_min returns the projection of the warm state: mu = marginals(theta)
    (the state holds the natural parameters of the mu iterate).  SP-MP projects with scaled
    potentials exp(theta - max) (``_scaled_project``); potentials between e^-745 and e^-708 are
    subnormal and carry few significant bits, so those entries must take the log domain."""
    sp = Chain(2, iterations_per_node=False)
    T = 2
    for d in (-700.0, -730.0, -740.0, -744.0):
        # y_1 = 0 surely; p(y_2 = 0) = 1 / (1 + e^-1.3) = 0.7858: the two surviving paths
        # have log-potentials d and d - 1.3, far below the dead ones
        theta = np.r_[[0.0, -2000.0, d, 0.0], [0.0, d - 1.3, -2000.0, -2000.0]]
        exact = sp.marginals(theta)
        np.testing.assert_allclose(exact[2:4], [1 / (1 + np.exp(-1.3)), 1 / (1 + np.exp(1.3))], atol=1e-14)
        r = sp.max_min(np.zeros(sp.dim(T)), warm=(theta, None), n_iter=0)
        np.testing.assert_allclose(r.mu, exact, rtol=0, atol=1e-10, err_msg=f"d = {d}")


def test_maxmin_mu_consistent_after_many_iterations():
    """Averaged SP-MP marginals must stay in the marginal polytope over long runs (the natural
    parameters grow linearly with the iteration count, so potentials underflow)."""
    R, T = 3, 4
    sp = Chain(R, "hamming", iterations_per_node=False)
    v = np.random.default_rng(1).normal(size=sp.dim(T))
    r = sp.max_min(v, n_iter=200)
    U, P = sp.split(r.mu)
    np.testing.assert_allclose(U.sum(1), 1.0, atol=1e-12)
    np.testing.assert_allclose(P.sum(2), U[:-1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(P.sum(1), U[1:], rtol=0, atol=1e-12)


def reference_spmp(sp, v, n_iter, theta, lnu):
    """SP-MP (M4N App. G.2) restated with numpy and log-domain marginals (``sp.marginals``):
    mirror prox, mu on the marginal polytope, nu on simplices; returns the averaged half-step
    iterates and the last natural parameters."""
    U, P = sp.split(v)
    T, R = U.shape
    Lw = sp.weighted_loss(T)
    eta = 1.0 / (2.0 * sp._cmax * float(np.max(sp.position_weights(T))))
    thU, thP = (a.copy() for a in sp.split(theta))
    lnu = lnu.reshape(T, R) - logsumexp(lnu.reshape(T, R), axis=1, keepdims=True)
    cur = sp.marginals(theta)[: T * R].reshape(T, R)
    to_mu = lambda x: np.einsum("tji,tj->ti", Lw, x)    # noqa: E731 (gradient for mu)
    to_nu = lambda x: np.einsum("tij,tj->ti", Lw, x)    # noqa: E731 (gradient for nu)
    sums = [np.zeros(sp.dim(T)), np.zeros((T, R))]
    for _ in range(n_iter):
        thP = thP + eta * P
        half = sp.marginals(np.r_[(thU + eta * (U + to_mu(np.exp(lnu)))).ravel(), thP.ravel()])
        hlnu = lnu - eta * to_nu(cur)
        hlnu -= logsumexp(hlnu, axis=1, keepdims=True)
        thU = thU + eta * (U + to_mu(np.exp(hlnu)))
        lnu = lnu - eta * to_nu(half[: T * R].reshape(T, R))
        lnu -= logsumexp(lnu, axis=1, keepdims=True)
        cur = sp.marginals(np.r_[thU.ravel(), thP.ravel()])[: T * R].reshape(T, R)
        sums[0] += half
        sums[1] += np.exp(hlnu)
    return sums[0] / n_iter, sums[1].ravel() / n_iter, np.r_[thU.ravel(), thP.ravel()]


@pytest.mark.parametrize("scale", [0.05, 3.0, 30.0, 300.0])
@pytest.mark.parametrize("loss,weights", [("hamming", None), ("random", "position")])
def test_spmp_kernel_matches_log_domain_reference(loss, weights, scale):
    """The kernel's scaled products, per-entry log-domain rescues and pruned sums give the
    iterates of a plain log-domain SP-MP, from mild scores (all entries scaled) to peaked ones
    (natural parameters spanning thousands of nats: most entries rescued, pruned edges)."""
    R = 5
    sp = chain_space(loss, weights, R, iterations_per_node=False)
    rng = np.random.default_rng(int(scale * 10))
    for T in (1, 2, 6):
        v = scale * rng.normal(size=sp.dim(T))
        theta = rng.normal(size=sp.dim(T))
        lnu = rng.normal(size=T * R)
        r = sp.max_min(v, warm=(theta, lnu), n_iter=30)
        mu, nu, th = reference_spmp(sp, v, 30, theta, lnu)
        np.testing.assert_allclose(r.mu, mu, rtol=0, atol=1e-9, err_msg=f"T = {T}")
        np.testing.assert_allclose(r.nu, nu, rtol=0, atol=1e-9, err_msg=f"T = {T}")
        np.testing.assert_allclose(r.state[0], th, rtol=1e-12, atol=1e-9, err_msg=f"T = {T}")
        if T == 6 and scale >= 30:
            assert np.ptp(th[: T * R].reshape(T, R), axis=1).max() > 1000   # the peaked regime


def test_pruned_log_sums_are_exact():
    """The rescues' pruned log-sum-exps (columns of the forward, rows of the backward) stop
    once ``base + bound`` is 40 nats below the best term; with a valid bound they equal the
    full log-sum-exp (terms spanning 1000 nats)."""
    from structpred.outputs import _chain_kernels as K

    rng = np.random.default_rng(7)
    R = 12
    tmp, order = np.empty(R), np.empty(R, dtype=np.int64)
    for _ in range(200):
        prev, nxt = rng.uniform(-1000, 0, size=R), rng.uniform(-1000, 0, size=R)
        thP, P = rng.uniform(-1000, 0, size=(R, R)), rng.normal(size=(R, R))
        c = rng.uniform(0, 50)
        eff = thP + c * P
        K._argsort_desc(prev, order)
        assert np.all(np.diff(prev[order]) <= 0)
        for b in range(R):
            got = K._pruned_lse(prev, thP[:, b], P[:, b], c, eff[:, b].max(), order, tmp)
            assert abs(got - logsumexp(prev + eff[:, b])) < 1e-9
        K._argsort_desc(nxt, order)
        for a in range(R):
            got = K._pruned_lse(nxt, thP[a], P[a], c, eff.max(), order, tmp)
            assert abs(got - logsumexp(eff[a] + nxt)) < 1e-9


def test_log_sum_exp_shortcuts_change_no_bit():
    """``_lse`` skips the ``exp`` of its max and the ``log`` of a sum equal to 1: the same bits as the
    plain formula (with the kernels' ``exp``), single-term, tied, all-tiny and signed-zero cases
    included."""
    from numba import njit

    from structpred.outputs import _chain_kernels as K
    from structpred.outputs._fastmath import fexp

    kernel_exp = njit(lambda v: fexp(v))
    rng = np.random.default_rng(3)
    cases = [np.array([-0.0, -1000.0]), np.array([0.0, 0.0]), np.array([5.0, 5.0 - 39.9, -np.inf]),
             np.array([-np.inf, -np.inf]), np.array([1e-300, -50.0])]
    cases += [rng.normal(size=7) * s for s in (0.01, 1.0, 30.0, 3000.0) for _ in range(50)]
    for x in cases:
        m = np.max(x)
        plain = m if m == -np.inf else m + np.log(sum(kernel_exp(v - m) for v in x if v > m - K._CUT))
        got = K._lse(x, x.shape[0])
        assert np.array([got]).tobytes() == np.array([plain]).tobytes(), x


# --- 9. iterations per node -------------------------------------------------------------------

@pytest.mark.parametrize("loss,weights", [("hamming", None), ("random", "position")])
def test_iterations_per_node(loss, weights):
    R = 3
    per_node = chain_space(loss, weights, R)                     # default True
    assert per_node.iterations_per_node
    plain = chain_space(loss, weights, R, iterations_per_node=False)
    for T in LENGTHS:
        v = np.random.default_rng(T).normal(size=per_node.dim(T))
        a = per_node.max_min(v, n_iter=2)
        b = plain.max_min(v, n_iter=2 * T)
        np.testing.assert_allclose(a.mu, b.mu, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.nu, b.nu, rtol=0, atol=1e-12)
        assert abs(a.gap - b.gap) < 1e-12
        if T > 1:   # and it differs from n_iter = 2 plain iterations
            assert np.max(np.abs(a.mu - plain.max_min(v, n_iter=2).mu)) > 1e-6



def test_agm_game_value_equals_lp_within_spmp_gap():
    """AGM's adversarial game on an emotion-like chain (3 ordinal labels, the six losses of
    AGM Table 1) is the max-min oracle: the surrogate's lower / upper values bracket the
    exact game value (LP over the local polytope) minus <v, phi(y)>, within the SP-MP gap."""
    from structpred.papers.agm.emotion import LOSSES, loss_space
    from structpred.surrogates import MaxMinMargin

    rng = np.random.default_rng(11)
    for name in LOSSES:
        sp = loss_space(name)
        for T in (2, 4):
            v = rng.normal(size=sp.dim(T))
            y = rng.integers(0, 3, size=T)
            lp = chain_maxmin_lp(v, sp.weighted_loss(T), 3, T) - float(v @ sp.embed(y))
            lo, up, _ = MaxMinMargin(sp, n_iter=100).bounds([v], [y])
            assert lo[0] - 1e-9 <= lp <= up[0] + 1e-9
            # mirror-prox rate with eta = 1 / (2 max|A_t|) and K = 100 T iterations:
            # gap <= 2 T log R / (eta K) = 4 T log(3) max|A_t| / K
            assert up[0] - lo[0] <= 4 * T * np.log(3) * sp.weighted_loss(T).max() / (100 * T)


def test_top_two_shortcut_gives_the_pruned_sum_bits():
    """The rescues first take the two largest terms of every column (forward) or row (backward)
    at once: they are the two largest of the terms (a tie counted twice).  Where the second is
    ``_CUT`` nats or more below the first, ``_pruned_lse`` returns exactly the first plus 0.0;
    where exactly two terms count, ``_lse_of_two`` gives its bits (else NaN): neither shortcut
    changes a bit.  Peaked terms (spans of thousands of nats, then of 60) with planted ties."""
    from structpred.outputs import _chain_kernels as K

    rng = np.random.default_rng(11)
    R = 9
    m1, m2 = np.empty(R), np.empty(R)
    tmp, order = np.empty(R), np.empty(R, dtype=np.int64)
    counts = {1: 0, 2: 0, 3: 0}

    def check(got, lse_two, first, second, n_terms):
        if not second > first - K._CUT:
            counts[1] += 1
            assert np.array([got]).tobytes() == np.array([first + 0.0]).tobytes()
        elif n_terms == 2:
            counts[2] += 1
            assert np.array([got]).tobytes() == np.array([lse_two]).tobytes()
        else:
            counts[3] += 1
            assert np.isnan(lse_two)

    for trial in range(600):
        span = 3000.0 if trial < 300 else 60.0
        base = rng.uniform(-span, 0, size=R)
        thP, P = rng.uniform(-span, 0, size=(R, R)), rng.normal(size=(R, R))
        if trial % 3 == 0:   # ties: two equal terms in column 0 and in row 0
            base[1], thP[1, 0], P[1, 0] = base[0], thP[0, 0], P[0, 0]
            thP[0, 1], P[0, 1] = thP[0, 0] + base[0] - base[1], P[0, 0]
        c = rng.uniform(0, 50)
        bound = (thP + c * P)
        cols = (base[:, None] + thP) + c * P
        K._top_two(base, thP, P, c, m1, m2)
        top = -np.sort(-cols, axis=0)
        assert np.array_equal(m1, top[0]) and np.array_equal(m2, top[1])
        K._argsort_desc(base, order)
        for b in range(R):
            got = K._pruned_lse(base, thP[:, b], P[:, b], c, bound[:, b].max(), order, tmp)
            two = K._lse_of_two(base, thP[:, b], P[:, b], c, m1[b], m2[b]) if m2[b] > m1[b] - K._CUT else 0.0
            check(got, two, m1[b], m2[b], np.sum(cols[:, b] > m1[b] - K._CUT))
        rows = (base[None, :] + thP) + c * P
        K._top_two(base, thP.T, P.T, c, m1, m2)
        top = -np.sort(-rows, axis=1)
        assert np.array_equal(m1, top[:, 0]) and np.array_equal(m2, top[:, 1])
        for a in range(R):
            got = K._pruned_lse(base, thP[a], P[a], c, bound.max(), order, tmp)
            two = K._lse_of_two(base, thP[a], P[a], c, m1[a], m2[a]) if m2[a] > m1[a] - K._CUT else 0.0
            check(got, two, m1[a], m2[a], np.sum(rows[a] > m1[a] - K._CUT))
    assert counts[1] > 2000 and counts[2] > 300 and counts[3] > 300, counts


@pytest.mark.parametrize("flush", [False, True])
@pytest.mark.parametrize("span", [1.0, 300.0, 3000.0])
def test_ranked_steps_give_the_scaled_steps_marginals(span, flush):
    """A projection step that needed the log-domain rescue flags itself (``sc[t, 3]`` forward,
    ``sc[t, 4]`` backward); the next projection ranks first there (one-term entries take the
    largest term, the others a scaled sum of one row or column).  Both projections give the
    marginals of a log-domain sum-product, on mild (no rescue: a forced ranking must fall back to
    the sums) to peaked parameters (most entries one-term)."""
    from structpred.outputs import _chain_kernels as K

    rng = np.random.default_rng(int(span))
    R, T = 7, 6
    thU = span * rng.normal(size=(T, R))
    thP = span * rng.normal(size=(T - 1, R, R))
    cm = thP.max(axis=1)
    E = np.exp(thP - cm[:, None, :])
    thPT = np.ascontiguousarray(thP.transpose(0, 2, 1))
    node_ref, edge_ref = np.empty((T, R)), np.empty((T - 1, R, R))
    K.sum_product(thU, thP, node_ref, edge_ref, True)
    sc = np.zeros((T - 1, 5))
    if span == 1.0:
        sc[:, 3:] = 1.0         # force ranking where every sum is representable
    flags = []
    for _ in range(2):
        node, edge = np.empty((T, R)), np.zeros((T - 1, R, R))
        K._scaled_project(thU, E, cm, thP, thP, 0.0, node, edge, True, np.empty((T, R)), np.empty((T, R)),
                          np.empty((T - 1, R)), np.empty((T - 1, R)), sc, np.empty((6, R)),
                          np.empty(R, dtype=np.int64), thPT, thPT, flush)
        # logs of up to 1e4 nats carry 2e-12 of round-off each
        np.testing.assert_allclose(node, node_ref, rtol=0, atol=1e-10)
        np.testing.assert_allclose(np.where(edge > np.exp(-K._CUT), edge, 0.0), edge_ref, rtol=0, atol=1e-10)
        flags.append(sc[:, 3:].copy())
    if span == 1.0:
        assert not flags[0].any()               # every entry needed its sum: back to scaled steps
    else:
        assert flags[0].sum() >= 5 and flags[1].sum() >= 5   # rescued, then ranked, steps
