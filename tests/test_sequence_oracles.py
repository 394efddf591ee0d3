"""The chain's compiled oracles on the dense sequence map (:mod:`structpred.outputs._sequence_oracles`):
GBCFW's compiled pass against the generic loop over the public oracles (``Chain.max_min``,
``mix_warm_state``, ``min_loss_lines``, ``SequenceJoint``), pass by pass, with both step sizes,
warm and cold, groups, the ragged blocks and warm states kept as the solver's lists."""

import numpy as np
import pytest

from structpred.errors import StructpredError
from structpred.features.joint import SequenceJoint, joint_map, sequence_add, sequence_scores
from structpred.features.sequences import Sequences
from structpred.outputs import Chain
from structpred.solvers._compiled_passes import CompiledPasses
from structpred.solvers._generic_kernels import GenericKernels
from structpred.solvers.problem import check_problem
from structpred.surrogates import MaxMinMargin


def data(n=12, R=4, d=5, Tmax=6, seed=0, G=1):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, Tmax + 1, n)
    lengths[:2] = [1, Tmax]
    frames = rng.normal(size=(lengths.sum(), d))
    groups = None if G == 1 else rng.integers(0, G, n)
    X = Sequences(frames, np.r_[0, np.cumsum(lengths)], groups=groups, n_groups=None if G == 1 else G)
    y = [rng.integers(0, R, T) for T in lengths]
    return X, y


def passes(space, X, y, compiled, lam=0.05, n_passes=3, line_search=False, averaging=False, **sur_kw):
    problem = check_problem(space, X, y, lam)
    sur = MaxMinMargin(space, **sur_kw)
    sur.init_state(problem.n)
    kern = GenericKernels(space, problem.fmap, problem.y, lam,
                          CompiledPasses(space.compiled_oracles(problem.fmap, problem.y), lam) if compiled else None,
                          sur)
    W = np.zeros(problem.fmap.weight_shape)
    W_avg = np.zeros_like(W) if averaging else None
    mu = problem.init_dual()
    gaps = np.full(problem.n, np.inf)
    rng = np.random.default_rng(1)
    t = 0
    for _ in range(n_passes):
        order = rng.permutation(problem.n).astype(np.int64)
        t = kern.gbcfw_pass(W, mu, order, t, sur, line_search, gaps, W_avg)
    return kern, dict(W=W, W_avg=W_avg, mu=mu, gaps=gaps, oracle_gaps=sur.gaps, LMU=sur.LMU, LNU=sur.LNU, t=t)


def assert_same(a, b, tol):
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, list):
            assert len(x) == len(y)
            for u, w in zip(x, y):
                np.testing.assert_allclose(u, w, rtol=0, atol=tol, err_msg=key)
        elif x is not None:
            np.testing.assert_allclose(x, y, rtol=0, atol=tol, err_msg=key)


@pytest.mark.parametrize("space, sur_kw, step, averaging", [
    (Chain(4), dict(n_iter=5), False, False),
    (Chain(4, node_loss="absolute"), dict(n_iter=5, warm_mix=0.2), True, False),
    (Chain(4, weights="position", normalize=False), dict(n_iter=3, warm_start=False), False, True),
    (Chain(4, iterations_per_node=False), dict(n_iter=20, warm_mix=0.0), True, True),
])
def test_compiled_gbcfw_pass_is_the_generic_one(space, sur_kw, step, averaging):
    X, y = data()
    kc, comp = passes(space, X, y, True, line_search=step, averaging=averaging, **sur_kw)
    kg, gen = passes(space, X, y, False, line_search=step, averaging=averaging, **sur_kw)
    assert kc.gbcfw_pass.__func__.__name__ == "_gbcfw_pass" and kg.gbcfw_pass.__func__ is GenericKernels.gbcfw_pass
    # measured: at most 4e-12 apart after 3 passes (sums in loops here, BLAS / numpy there)
    assert_same(comp, gen, 1e-9)
    assert comp["t"] == gen["t"] == 3 * len(y)
    assert np.all(np.isfinite(comp["gaps"])) and np.all(comp["oracle_gaps"] > -1e-9)
    assert np.abs(comp["W"]).max() > 1e-3          # it moved


def test_groups_and_the_blocks_stay_the_solvers_lists():
    X, y = data(G=3, seed=2)
    space = Chain(4)
    kc, comp = passes(space, X, y, True, n_iter=4)
    _, gen = passes(space, X, y, False, n_iter=4)
    assert_same(comp, gen, 1e-9)
    # the lists hold views of the flat arrays the pass updates in place
    flat = kc.gbcfw_pass.__self__.space_oracles._mu
    assert all(m.base is flat for m in comp["mu"])
    assert all(s.base is not None for s in comp["LMU"] + comp["LNU"])
    # a list of copies (a restored checkpoint) is packed again, and the pass goes on from it
    mu = [m.copy() for m in comp["mu"]]
    oracles = kc.gbcfw_pass.__self__.space_oracles
    again = oracles.dual_array(mu)
    assert again is not flat and all(m.base is again for m in mu)
    np.testing.assert_array_equal(again, flat)


def test_the_exact_game_runs_in_the_generic_loop():
    X, y = data(n=5, R=3, Tmax=3)
    space = Chain(3)
    problem = check_problem(space, X, y, 0.1)
    compiled = CompiledPasses(space.compiled_oracles(problem.fmap, problem.y), problem.lam)
    assert compiled.serves("gbcfw_pass", MaxMinMargin(space))
    assert not compiled.serves("gbcfw_pass", MaxMinMargin(space, game="exact"))
    assert compiled.serves("sdca_pass") and compiled.serves("bcfw_pass")
    assert not compiled.serves("bcfw_pairwise_pass")     # pairwise steps: dense blocks only
    k = GenericKernels(space, problem.fmap, problem.y, problem.lam, compiled, MaxMinMargin(space, game="exact"))
    assert k.gbcfw_pass.__func__ is GenericKernels.gbcfw_pass


def test_edge_features_have_no_compiled_oracles():
    X, y = data(n=4)
    edges = np.ones((X.frames.shape[0], 2))
    Xe = Sequences(X.frames, X.offsets, edges=edges)
    space = Chain(4)
    assert space.compiled_oracles(joint_map(space, Xe), y) is None
    assert space.compiled_oracles(joint_map(space, X), y) is not None


def test_sequence_scores_and_add_are_the_maps():
    X, y = data(G=2, seed=3)
    fm = SequenceJoint(X, 4)
    rng = np.random.default_rng(0)
    W = rng.normal(size=fm.weight_shape)
    for i in range(fm.n):
        a, b = X.offsets[i], X.offsets[i + 1]
        row0 = int(X.groups[i]) * X.n_features
        v = np.empty_like(fm.score(i, W))
        sequence_scores(X.frames, a, b, row0, W, v)
        np.testing.assert_allclose(v, fm.score(i, W), rtol=1e-13, atol=1e-13)
        c = rng.normal(size=v.shape)
        W1, W2 = W.copy(), W.copy()
        fm.add(i, W1, c)
        sequence_add(X.frames, a, b, row0, W2, c)
        np.testing.assert_allclose(W2, W1, rtol=1e-13, atol=1e-13)


def test_non_finite_scores_are_one_clear_error():
    X, y = data(n=4)
    space = Chain(4)
    problem = check_problem(space, X, y, 0.1)
    sur = MaxMinMargin(space)
    sur.init_state(problem.n)
    k = GenericKernels(space, problem.fmap, problem.y, problem.lam,
                       CompiledPasses(space.compiled_oracles(problem.fmap, problem.y), problem.lam), sur)
    W = np.full(problem.fmap.weight_shape, np.nan)
    with pytest.raises(StructpredError, match="NaN or infinite"):
        k.gbcfw_pass(W, problem.init_dual(), np.arange(4, dtype=np.int64), 0, sur, False, np.zeros(4))


@pytest.mark.parametrize("T", [1, 2, 7])
def test_the_kernels_mix_is_mix_warm_state(T):
    """``spmp(..., mix)`` leaves the warm state ``Chain.mix_warm_state`` gives after a plain call
    (the marginals from the kernel's scaled potentials instead of a sum-product), and the same
    averages."""
    from structpred.outputs._chain_kernels import spmp

    R = 5
    sp = Chain(R, node_loss="absolute")
    rng = np.random.default_rng(T)
    v = 3.0 * rng.normal(size=sp.dim(T))
    U, P = (np.ascontiguousarray(a) for a in sp.split(v))
    theta, lnu = rng.normal(size=sp.dim(T)), np.log(rng.dirichlet(np.ones(R), T)).ravel()
    out = []
    for mix in (0.0, 0.1):
        th, ln = theta.copy(), lnu.copy()
        node, edge, nu = np.empty((T, R)), np.empty((T - 1, R, R)), np.empty((T, R))
        spmp(U, P, sp.weighted_loss(T), sp._kind, sp.spmp_step(T), 4 * T, th[: T * R].reshape(T, R),
             th[T * R:].reshape(T - 1, R, R), ln.reshape(T, R), node, edge, nu, mix)
        if mix == 0.0:
            sp.mix_warm_state(th, ln, 0.1)
        out.append((th, ln, node, edge, nu))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-11)


def dual_passes(rule, space, X, y, compiled, lam=0.05, n_passes=3, **kw):
    problem = check_problem(space, X, y, lam)
    kern = GenericKernels(space, problem.fmap, problem.y, lam,
                          CompiledPasses(space.compiled_oracles(problem.fmap, problem.y), lam) if compiled else None)
    W = np.zeros(problem.fmap.weight_shape)
    mu = problem.init_dual()
    rng = np.random.default_rng(2)
    out = dict(W=W, mu=mu)
    if rule == "sdca":
        for _ in range(n_passes):
            kern.sdca_pass(W, mu, rng.permutation(problem.n).astype(np.int64))
        return kern, out
    W_avg, ell, ell_avg, gaps = np.zeros_like(W), np.zeros(1), np.zeros(1), np.zeros(problem.n)
    t = 0
    for _ in range(n_passes):
        t = kern.bcfw_pass(W, mu, rng.permutation(problem.n).astype(np.int64), t, True, W_avg, ell, ell_avg,
                           gaps, **kw)
    out.update(W_avg=W_avg, ell=ell, ell_avg=ell_avg, gaps=gaps)
    return kern, out


@pytest.mark.parametrize("rule, space, kw", [
    ("sdca", Chain(4), {}),
    ("sdca", Chain(4, weights="position"), {}),
    ("bcfw", Chain(4), {}),
    ("bcfw", Chain(4, node_loss="absolute", weights="position", normalize=False), {"fixed": True}),
])
def test_compiled_bcfw_and_sdca_passes_are_the_generic_ones(rule, space, kw):
    X, y = data(G=2, seed=5)
    kc, comp = dual_passes(rule, space, X, y, True, **kw)
    kg, gen = dual_passes(rule, space, X, y, False, **kw)
    name = rule + "_pass"
    assert getattr(kc, name).__func__.__name__ == "_" + name
    assert getattr(kg, name).__func__ is getattr(GenericKernels, name)
    # measured: at most 2e-15 apart after 3 passes
    assert_same(comp, gen, 1e-11)
    assert np.abs(comp["W"]).max() > 1e-3


@pytest.mark.parametrize("scale", [0.1, 3.0, 60.0, 800.0])
def test_scaled_marginals_are_sum_products(scale):
    """The scaled projection's marginals (SDCA's compiled step) against the log-domain sum-product,
    from flat scores to scores whose columns span hundreds of nats (the exact rescues)."""
    from structpred.outputs._chain_kernels import scaled_marginals, sum_product

    R = 6
    rng = np.random.default_rng(int(scale * 10))
    for T in (1, 2, 9):
        U, P = scale * rng.normal(size=(T, R)), scale * rng.normal(size=(T - 1, R, R))
        want = np.empty((T, R)), np.empty((T - 1, R, R))
        got = np.empty((T, R)), np.full((T - 1, R, R), 7.0)
        sum_product(U, P, *want, True)
        scaled_marginals(U, P, *got)
        for a, b in zip(got, want):     # measured: 1.8e-12 relative at scale 800 (logs of ~1e3 nats)
            np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-15)
