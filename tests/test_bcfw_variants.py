"""BCFW's pairwise steps and gap sampling (Osokin et al. 2016): optima, certified gaps, kernels."""

import numpy as np
import pytest

from structpred.errors import StructpredError
from structpred.features.joint import joint_map
from structpred.outputs import Chain, make_space
from structpred.solvers import BCFW, bcfw, check_problem, run
from structpred.solvers import primal_objective as primal
from structpred.solvers._generic_kernels import GenericKernels
from structpred.surrogates import Hinge
from tests.test_chain_solvers import LAM, check_marginals, m3n_reference, primal_dual_map, problem
from tests.test_solvers import cvx_m3n, small_problem

PAIRWISE = {"steps": "pairwise"}
VARIANTS = [PAIRWISE, {"steps": "pairwise", "block_steps": 5}, {"sampling": "gap"},
            {"steps": "pairwise", "block_steps": 5, "sampling": "gap"}]


def multiclass_dual_checks(sp, X, y, res, lam):
    """Rows of ``mu`` in the simplex and ``W = (1/(lam n)) sum_i x_i (e_{y_i} - mu_i)^T``."""
    mu = res.mu
    assert np.all(mu >= 0.0)
    np.testing.assert_allclose(mu.sum(1), 1.0, atol=1e-12)
    W = X.T @ (np.eye(sp.k)[y] - mu) / (lam * len(y))
    np.testing.assert_allclose(res.W, W, atol=1e-10)


@pytest.mark.parametrize("options", VARIANTS, ids=lambda o: "+".join(f"{k}={v}" for k, v in o.items()))
@pytest.mark.parametrize("loss", ["zero_one", "ordinal"])
def test_variants_reach_the_cvxpy_optimum_with_certified_gaps(loss, options):
    X, y = small_problem()
    sp = make_space(loss, 4)
    lam = 0.1
    ref = cvx_m3n(sp, X, y, lam)
    # Frank-Wolfe steps converge sublinearly (measured: gap 2.4e-5 to 3.9e-5 after 2000 passes)
    rtol = 1e-5 if options.get("steps") == "pairwise" else 1e-4
    res = bcfw(Hinge(sp), X, y, lam, n_passes=2000, random_state=0, rtol=rtol, **options)
    h = res.history
    last = h[-1]
    assert last["gap"] <= rtol * last["primal"] and len(h) < 2000
    assert abs(last["primal"] - ref) <= 2 * rtol * ref
    assert abs(primal(Hinge(sp), X, y, res.W, lam) - last["primal"]) < 1e-12
    for r in h:  # weak duality: every recorded gap is a true bound
        assert r["dual"] <= ref + 1e-9 <= r["primal"] + 2e-9
    # each step maximises the dual on its segment: the dual never decreases
    assert np.all(np.diff([r["dual"] for r in h]) >= -1e-12)
    multiclass_dual_checks(sp, X, y, res, lam)


def test_pairwise_and_gap_sampling_take_fewer_passes():
    """Measured on this problem (n = 200, lam = 0.01, rtol 1e-4): Frank-Wolfe steps 1419 passes,
    pairwise 309, pairwise with 5 steps per visit and gap sampling under 250."""
    X, y = small_problem(n=200, d=8, k=5)
    sp = make_space("zero_one", 5)
    passes = {}
    for name, options in {"fw": {}, "pw": PAIRWISE, "pw5gap": VARIANTS[3]}.items():
        res = bcfw(Hinge(sp), X, y, 0.01, n_passes=3000, random_state=0, rtol=1e-4, **options)
        passes[name] = len(res.history)
        assert res.history[-1]["gap"] <= 1e-4 * res.history[-1]["primal"]
    assert passes["pw"] < passes["fw"] / 3
    assert passes["pw5gap"] < passes["pw"]


@pytest.mark.parametrize("block_steps", [1, 3])
def test_compiled_pairwise_pass_matches_the_generic_one(block_steps):
    """The multiclass numba loop and the generic loop over the space's oracles take the same
    steps (one step per visit; with more, the generic one only looks among its active set:
    the compiled one looks at every label, so the iterates differ but reach the same optimum)."""
    X, y = small_problem(n=40)
    sp = make_space("ordinal", 4)
    out = []
    for generic in (False, True):
        rule = BCFW(Hinge(sp), steps="pairwise", block_steps=block_steps)
        pb = check_problem(sp, X, y, 0.05)
        rule.init(pb)
        if generic:
            rule.kernels = GenericKernels(sp, pb.fmap, pb.y, pb.lam)
            rule.kernels.bcfw_pairwise_pass = GenericKernels.bcfw_pairwise_pass.__get__(rule.kernels)
        rng = np.random.default_rng(3)
        for _ in range(30):
            rule.epoch(rule.draw_order(rng, pb.n))
        out.append((rule.W.copy(), rule.mu.copy(), rule.ell[0], rule.gaps.copy(), rule.objectives()))
    (W0, mu0, l0, g0, o0), (W1, mu1, l1, g1, o1) = out
    if block_steps == 1:
        np.testing.assert_allclose(W0, W1, atol=1e-12)
        np.testing.assert_allclose(mu0, mu1, atol=1e-12)
        np.testing.assert_allclose(g0, g1, atol=1e-12)
        assert abs(l0 - l1) < 1e-12
    for o in (o0, o1):
        assert o["gap"] >= -1e-12 and abs(o["gap"] - (o["primal"] - o["dual"])) < 1e-12


def test_generic_pairwise_on_chains_matches_cvxpy():
    """Chains have no compiled pairwise loop: the generic one keeps each block's active set of
    labelings; its dual blocks stay marginals and map to the weights."""
    sp = Chain(3)
    X, Y, E = problem(0)
    ref, _ = m3n_reference(0)
    res = bcfw(Hinge(sp), X, Y, LAM, n_passes=400, random_state=0, rtol=2e-4, steps="pairwise", block_steps=3,
               sampling="gap")
    h = res.history
    assert h[-1]["gap"] <= 2e-4 * h[-1]["primal"] and len(h) < 400
    assert abs(h[-1]["primal"] - ref) <= 3e-4 * ref
    for r in h:
        assert r["dual"] <= ref + 1e-7 and r["primal"] >= ref - 1e-7
    assert np.all(np.diff([r["dual"] for r in h]) >= -1e-12)
    check_marginals(sp, res.mu, 1e-10)
    fm = joint_map(sp, X)
    np.testing.assert_allclose(primal_dual_map(fm, sp, Y, res.mu, LAM), res.W, atol=1e-10)


def test_gap_sampling_draws_by_the_recorded_gaps():
    rule = BCFW(Hinge(make_space("zero_one", 3)), sampling="gap", gap_refresh=3)
    rule.gaps = np.array([0.0, 1.0, 3.0, 0.0])
    rng = np.random.default_rng(0)
    for passes, permutation in [(0, True), (1, False), (2, False), (3, True)]:
        rule.passes = passes
        order = rule.draw_order(rng, 4)
        if permutation:
            assert sorted(order) == [0, 1, 2, 3]
        else:
            assert set(order) <= {1, 2}
    rule.passes = 1
    counts = np.bincount(np.concatenate([rule.draw_order(rng, 4) for _ in range(2000)]), minlength=4)
    assert counts[0] == counts[3] == 0 and abs(counts[2] / counts[1] - 3.0) < 0.3
    rule.gaps = np.zeros(4)                 # no gap left: a permutation
    assert sorted(rule.draw_order(rng, 4)) == [0, 1, 2, 3]


def test_bad_options_and_determinism():
    sp = make_space("zero_one", 4)
    for bad, msg in [({"steps": "away"}, "steps must be one of"), ({"sampling": "importance"}, "sampling must be"),
                     ({"block_steps": 0}, "block_steps must be"), ({"block_steps": 3}, "needs steps='pairwise'"),
                     ({"gap_refresh": 1.5}, "gap_refresh must be")]:
        with pytest.raises(StructpredError, match=msg):
            BCFW(Hinge(sp), **bad)
    X, y = small_problem()
    with pytest.raises(StructpredError, match="rtol must be"):
        bcfw(Hinge(sp), X, y, 0.1, rtol=0.0)
    a, b = (bcfw(Hinge(sp), X, y, 0.1, n_passes=20, random_state=5, **VARIANTS[3]) for _ in range(2))
    assert np.array_equal(a.W, b.W)
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in a.history] == \
        [{k: v for k, v in r.items() if k != "seconds"} for r in b.history]
    # the plain rule draws exactly as before: the same passes with an explicit driver call
    pb = check_problem(sp, X, y, 0.1)
    c = run(BCFW(Hinge(sp)), pb, n_passes=5, random_state=1)
    d = bcfw(Hinge(sp), X, y, 0.1, n_passes=5, random_state=1)
    assert np.array_equal(c.W, d.W)


# --- the M4N authors' protocol: BCFW's fixed step, GBCFW's averaged iterate -------------------

@pytest.mark.parametrize("loss", ["zero_one", "ordinal"])
@pytest.mark.parametrize("averaging", [False, True])
def test_fixed_step_bcfw_converges_with_true_bounds_and_its_kernels_agree(loss, averaging):
    """BCFW with the fixed step ``2n / (t + 2n)`` (Lacoste-Julien et al. 2013, Alg. 3): every
    recorded dual is below cvxpy's optimum and every primal above it, the gap closes, and the
    compiled multiclass pass gives the generic loop's weights."""
    X, y = small_problem()
    sp = make_space(loss, 4)
    lam = 0.1
    res = run(BCFW(Hinge(sp), averaging=averaging, step="fixed"), check_problem(sp, X, y, lam), n_passes=400,
              random_state=0, eval_every=50)
    ref = cvx_m3n(sp, X, y, lam)
    assert all(r["dual"] <= ref + 1e-9 and r["primal"] >= ref - 1e-9 for r in res.history)
    assert res.history[-1]["gap"] < 0.02 * abs(ref)
    assert abs(primal(Hinge(sp), X, y, res.W, lam) - res.history[-1]["primal"]) < 1e-12
    if not averaging:
        multiclass_dual_checks(sp, X, y, res, lam)
    pb = check_problem(sp, X, y, lam)
    out = []
    for compiled in (True, False):
        k = GenericKernels(sp, pb.fmap, pb.y, pb.lam, pb.compiled if compiled else None)
        W, mu, W_avg = np.zeros(pb.fmap.weight_shape), pb.init_dual(), np.zeros(pb.fmap.weight_shape)
        ell, ell_avg, gaps = np.zeros(1), np.zeros(1), np.zeros(len(y))
        order = np.random.default_rng(0).permutation(len(y)).astype(np.int64)
        t = 0
        for _ in range(5):
            t = k.bcfw_pass(W, mu, order, t, averaging, W_avg, ell, ell_avg, gaps, True)
        out.append((W, mu, W_avg, ell, ell_avg))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_fixed_step_is_refused_with_pairwise_steps():
    with pytest.raises(StructpredError, match="fixed"):
        BCFW(Hinge(make_space("zero_one", 3)), steps="pairwise", step="fixed")
    with pytest.raises(StructpredError, match="step must be one of"):
        BCFW(Hinge(make_space("zero_one", 3)), step="exact")


@pytest.mark.parametrize("space_name", ["multiclass", "chain"])
def test_gbcfw_averaged_iterate_has_a_true_gap_and_averaging_off_changes_nothing(space_name):
    """GBCFW with the weighted average of its iterates (the M4N authors' ``do_averaging``): the
    recorded primal is the average's exact (SP-MP upper-bounded) objective and ``primal - dual``
    bounds its suboptimality against cvxpy's optimum; the compiled and generic loops agree; with
    averaging off the weights are those of the plain rule."""
    from structpred.solvers import GBCFW
    from structpred.surrogates import MaxMinMargin
    from tests.test_solvers import cvx_m4n, exact_m4n_primal

    if space_name == "multiclass":
        X, y = small_problem(seed=1)
        sp = make_space("ordinal", 4)
    else:
        X, y, E = problem()
        sp = Chain(E.R)
    lam = 0.1
    pb = check_problem(sp, X, y, lam)

    def fit(averaging, compiled=True):
        sur = MaxMinMargin(sp, n_iter=30, warm_start=True, n_iter_eval=300)
        rule = GBCFW(sur, averaging=averaging)
        p = check_problem(sp, X, y, lam)
        if not compiled:
            p.__dict__["compiled"] = None
        return run(rule, p, n_passes=60, random_state=0, eval_every=20), rule

    avg, rule = fit(True)
    assert np.array_equal(avg.W, rule.W_avg) and not np.array_equal(rule.W_avg, rule.W)
    plain, plain_rule = fit(False)
    assert np.array_equal(plain.W, plain_rule.W)
    np.testing.assert_array_equal(plain_rule.W, rule.W)  # averaging does not touch the iterates
    for r in avg.history:
        assert r["primal"] >= r["dual"] - 1e-12
    if space_name == "multiclass":
        ref = cvx_m4n(sp, X, y, lam)
        exact = exact_m4n_primal(sp, X, y, avg.W, lam)
        h = avg.history[-1]
        assert h["dual"] <= ref + 1e-7 and exact >= ref - 1e-7
        assert exact - ref <= h["gap"] + 1e-9           # the recorded gap bounds the average's suboptimality
        assert h["primal"] >= exact - 1e-9                # SP-MP's value is an upper bound
        generic, _ = fit(True, compiled=False)
        np.testing.assert_allclose(generic.W, avg.W, rtol=1e-9, atol=1e-12)
