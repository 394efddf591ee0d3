"""AGM's exact game (AGM §3.2, eq. 6-9) on chains and trees: its bounds against an exact LP over
the local polytope (every shape up to 7 nodes, R = 3, the three node losses, weighted and not),
SP-MP's limit, the per-node closed forms against an LP over the node simplex, warm starts,
unsupported losses and bad input, and AGM(game="exact") on a small emotion-like problem."""

import numpy as np
import pytest
from scipy.optimize import linprog

from structpred.errors import StructpredError
from structpred.estimators import AGM
from structpred.outputs import Chain, Multiclass, Tree, TreeArray, capabilities
from structpred.outputs import _game_kernels as GK
from structpred.outputs.node_loss import GAME_LOSSES
from structpred.surrogates import MaxMinMargin
from tests.reference import chain_maxmin_lp, random_loss, ref_node_loss, ref_weights, tree_maxmin_lp
from tests.test_tree import SHAPES, tree_parents

LOSSES = ("hamming", "absolute", "squared")
CASES = [(loss, w) for loss in LOSSES for w in (None, "position")]
CASE_IDS = [f"{loss}-{w or 'uniform'}" for loss, w in CASES]
#: score scales of the LP comparisons; ``tied`` rounds the scores to thirds (degenerate games,
#: many ties at the optimum), scale 0 is the first game of training (all scores zero)
SCORES = ((1.0, False), (0.1, False), (0.01, False), (0.3, True), (0.0, False))


def random_scores(rng, dim, scale, tied):
    v = rng.normal(size=dim) * scale
    return np.round(v * 3) / 3 if tied else v


def game_value(v, mu, A, R, T):
    """``min_nu F(nu, mu) = sum_t min_i (A_t mu_t)[i] + <v, mu>``, independently of the library."""
    node = np.asarray(mu)[: T * R].reshape(T, R)
    return float(sum(np.min(A[t] @ node[t]) for t in range(T)) + np.asarray(v) @ np.asarray(mu))


def check_feasible(mu, nu, parents, R):
    """``mu`` on the tree's local polytope, ``nu`` on the product of simplices (to 1e-12)."""
    T = len(parents)
    mu = np.asarray(mu)
    node, edge = mu[: T * R].reshape(T, R), mu[T * R:].reshape(T - 1, R, R)
    nu = np.asarray(nu).reshape(T, R)
    assert node.min() >= 0 and nu.min() >= 0 and (T == 1 or edge.min() >= 0)
    np.testing.assert_allclose(node.sum(1), 1.0, atol=1e-12)
    np.testing.assert_allclose(nu.sum(1), 1.0, atol=1e-12)
    for t in range(1, T):
        np.testing.assert_allclose(edge[t - 1].sum(1), node[parents[t]], atol=1e-12)
        np.testing.assert_allclose(edge[t - 1].sum(0), node[t], atol=1e-12)


@pytest.mark.parametrize("loss,weights", CASES, ids=CASE_IDS)
def test_exact_game_equals_lp_on_trees(loss, weights):
    """value <= LP <= upper with both within 1e-6 of the LP, gap >= 0, mu feasible and value its
    exact value; a chain as a Chain and as a Tree gives the same answer."""
    R = 3
    worst = 0.0
    for shape in SHAPES:
        for T in range(1, 8):
            parents = tree_parents(shape, T, seed=T)
            sp = Tree(R, loss, weights=weights)
            A = ref_weights(weights, T)[:, None, None] * ref_node_loss(loss, R)[None]
            for k, (scale, tied) in enumerate(SCORES):
                rng = np.random.default_rng(1000 * T + 10 * k + SHAPES.index(shape))
                v = TreeArray(random_scores(rng, sp.dim(T), scale, tied), parents)
                lp = tree_maxmin_lp(np.asarray(v), A, R, parents)
                res = sp.max_min_exact(v)
                where = f"{shape} T={T} scale={scale} tied={tied}"
                assert res.value <= lp + 1e-9 and lp <= res.upper + 1e-9, where
                assert res.gap >= 0 and abs(res.gap - max(res.upper - res.value, 0.0)) <= 1e-15, where
                worst = max(worst, lp - res.value, res.upper - lp)
                assert isinstance(res.mu, TreeArray) and np.array_equal(res.mu.parents, parents)
                check_feasible(res.mu, res.nu, parents, R)
                assert abs(res.value - game_value(v, res.mu, A, R, T)) <= 1e-12, where
                assert res.state.shape == ((T - 1) * R,)
                if shape == "chain":
                    ch = Chain(R, loss, weights=weights).max_min_exact(np.asarray(v))
                    assert abs(chain_maxmin_lp(np.asarray(v), A, R, T) - lp) <= 1e-9
                    assert abs(ch.value - res.value) <= 1e-12 and abs(ch.upper - res.upper) <= 1e-12, where
    # measured: 8.8e-10 (the default tolerance on the gap is 1e-9)
    assert worst <= 1e-6


def test_exact_game_scaled_and_unnormalised_losses():
    """A positive multiple of a supported matrix is supported (the scale goes into the weights);
    normalize=False (counts, not means) too."""
    R, T = 3, 6
    rng = np.random.default_rng(3)
    for name in LOSSES:
        C = 2.5 * ref_node_loss(name, R)
        for normalize in (True, False):
            sp = Chain(R, C, weights="position", normalize=normalize)
            assert "exact max-min game" in capabilities(sp)
            w = np.arange(1.0, T + 1)
            A = (w / w.sum() if normalize else w)[:, None, None] * C[None]
            v = rng.normal(size=sp.dim(T))
            lp = chain_maxmin_lp(v, A, R, T)
            res = sp.max_min_exact(v)
            assert res.value <= lp + 1e-9 <= res.upper + 2e-9 and res.gap <= 1e-9, (name, normalize)


def test_spmp_converges_to_the_exact_value():
    """SP-MP's bracket shrinks onto the exact value: it always contains it, and after many
    iterations both bounds are close to it."""
    R = 3
    for loss in LOSSES:
        for parents in (np.arange(-1, 4), np.array([-1, 0, 0, 1, 1])):
            T = len(parents)
            sp = Tree(R, loss, weights="position")
            v = TreeArray(np.random.default_rng(T).normal(size=sp.dim(T)), parents)
            exact = sp.max_min_exact(v)
            gaps = []
            for n_iter in (10, 100, 1000, 10000):
                r = sp.max_min(v, n_iter=n_iter)
                assert r.value <= exact.value + 1e-9 and exact.upper <= r.upper + 1e-9, (loss, n_iter)
                gaps.append(r.gap)
            # SP-MP's O(1/K) rate: measured 0.23, 0.020, 0.0018, 0.00018 (absolute, chain),
            # 0.49 ... 0.00052 (squared)
            assert gaps[-1] <= 2e-3 * gaps[0] and gaps[-1] <= 1e-3, (loss, gaps)
            assert abs(r.value - exact.value) <= gaps[-1] and abs(r.upper - exact.upper) <= gaps[-1]


def node_lp(a, w, C):
    """``max_{r in simplex} a^T r + w min_i (C r)_i`` by an LP (variables ``r``, ``s``)."""
    R = len(a)
    res = linprog(-np.r_[a, w], A_ub=np.c_[-C, np.ones(R)], b_ub=np.zeros(R), A_eq=np.r_[np.ones(R), 0.0][None],
                  b_eq=[1.0], bounds=[(0, None)] * R + [(None, None)], method="highs")
    assert res.status == 0
    return -res.fun


@pytest.mark.parametrize("loss", LOSSES)
def test_node_closed_forms_against_lp(loss):
    """AGM eq. 8 per node: the closed form's value equals the LP over the node simplex, its
    maximiser attains it, and every vertex of the optimal face (read with a tolerance) does."""
    rng = np.random.default_rng(7)
    kind = GAME_LOSSES["zero_one" if loss == "hamming" else loss]
    for R in (2, 3, 4, 5, 9):
        C = ref_node_loss(loss, R)
        order, r, V = np.empty(R, dtype=np.int64), np.empty(R), np.empty((GK._MAXV, R))
        for trial in range(40):
            a = rng.normal(size=R) * (0.1, 1.0, 5.0)[trial % 3]
            if trial % 4 == 0:
                a = np.round(a)                       # ties among the potentials
            w = float(rng.uniform(0.05, 3.0))
            value = GK.node_game(a, w, kind, order, r)
            assert abs(value - node_lp(a, w, C)) <= 1e-12 * max(1.0, abs(value)), (R, trial)
            assert r.min() >= 0 and abs(r.sum() - 1.0) <= 1e-15
            assert abs(a @ r + w * np.min(C @ r) - value) <= 1e-12 * max(1.0, abs(value))
            n = GK._face(a, w, kind, C, 1e-9, order, r, V)
            assert n >= 1
            for k in range(n):
                assert a @ V[k] + w * np.min(C @ V[k]) >= value - 1e-8, (R, trial, k)


def test_single_node_and_zero_scores():
    """One node: the game is the closed form; all-zero scores (training's first game): the
    uniform adversary for zero-one, value ``(R - 1) / R``, found without iterating."""
    sp = Chain(4, "hamming")
    v = np.random.default_rng(0).normal(size=4)
    res = sp.max_min_exact(v)
    assert abs(res.value - node_lp(v, 1.0, ref_node_loss("hamming", 4))) <= 1e-12 and res.gap <= 1e-12
    T, R = 9, 4
    parents = np.arange(-1, T - 1)
    u, node, edge, nu = np.zeros((T - 1, R)), np.empty((T, R)), np.empty((T - 1, R, R)), np.empty((T, R))
    lo, up, it = GK.solve_game(parents, np.zeros((T, R)), np.zeros((T - 1, R, R)), np.full(T, 1.0 / T),
                               GK.ZERO_ONE, ref_node_loss("hamming", R), u, 1e-9, 100, True, node, edge, nu)
    assert it == 0 and abs(lo - 0.75) <= 1e-15 and abs(up - 0.75) <= 1e-15
    np.testing.assert_allclose(node, 0.25, atol=1e-15)


def test_batches_and_warm_start_reduce_work():
    """A batch (list) gives per-input answers; warm starting from the multipliers of the
    previous scores (one training step away) takes fewer BFGS iterations for the same answer."""
    R = 3
    sp = Chain(R, "absolute", weights="position")
    rng = np.random.default_rng(11)
    Ts = [int(t) for t in rng.integers(20, 41, size=12)]
    vs = [rng.normal(size=sp.dim(T)) * 3.0 / T for T in Ts]
    first = sp.max_min_exact(vs)
    assert isinstance(first.mu, list) and first.gap.shape == (12,) and np.all(first.gap <= 1e-9)
    assert [s.shape for s in first.state] == [((T - 1) * R,) for T in Ts]
    steps = [v + rng.normal(size=v.shape) * 0.05 * 3.0 / len(v) ** 0.5 for v in vs]
    cold = sp.max_min_exact(steps)
    warm = sp.max_min_exact(steps, warm=first.state)
    np.testing.assert_allclose(warm.upper, cold.upper, atol=2e-9)
    np.testing.assert_allclose(warm.value, cold.value, atol=2e-9)
    kind, scale, C = sp._game

    def iterations(v, u0):
        T = sp.length(v)
        U, P = sp.split(v)
        u = np.zeros((T - 1, R)) if u0 is None else u0.reshape(T - 1, R).copy()
        out = np.empty((T, R)), np.empty((T - 1, R, R)), np.empty((T, R))
        return GK.solve_game(np.arange(-1, T - 1), np.ascontiguousarray(U), np.ascontiguousarray(P),
                             sp.position_weights(T) * scale, kind, C, u, 1e-9, 1000, u0 is None, *out)[2]

    n_cold = sum(iterations(v, None) for v in steps)
    n_warm = sum(iterations(v, s) for v, s in zip(steps, first.state))
    # measured: 290 warm vs 500 cold iterations
    assert n_warm <= 0.75 * n_cold, (n_warm, n_cold)


def test_unsupported_losses_and_bad_input():
    R = 3
    other = Chain(R, random_loss(R))
    assert "exact max-min game" not in capabilities(other) and "max-min" in capabilities(other)
    v = np.zeros(other.dim(4))
    for call in (lambda: other.max_min_exact(v), lambda: MaxMinMargin(other, game="exact"),
                 lambda: AGM(loss=other, game="exact", n_passes=1).fit([np.ones((4, 2))], [np.zeros(4, int)])):
        with pytest.raises(StructpredError, match="zero_one.*absolute.*squared") as err:
            call()
        assert "\n" not in str(err.value)
    dense = Multiclass(np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [3.0, 1.0, 0.0]]))
    with pytest.raises(StructpredError, match="exact max-min game.*zero-one and absolute"):
        AGM(loss=dense, game="exact", n_passes=1).fit(np.ones((6, 2)), np.arange(6) % 3)   # multiclass, dense loss
    AGM(game="exact", n_passes=1).fit(np.ones((6, 2)), np.arange(6) % 2)     # zero-one: the closed form
    with pytest.raises(StructpredError, match="game must be one of spmp, exact"):
        AGM(loss=Chain(R), game="nash", n_passes=1).fit([np.ones((4, 2))], [np.zeros(4, int)])
    sp = Chain(R)
    with pytest.raises(StructpredError, match="warm state .* expected 9 multipliers"):
        sp.max_min_exact(np.zeros(sp.dim(4)), warm=np.zeros(5))
    with pytest.raises(StructpredError, match="tol"):
        sp.max_min_exact(np.zeros(sp.dim(4)), tol=0.0)
    with pytest.raises(StructpredError, match="max_iter"):
        sp.max_min_exact(np.zeros(sp.dim(4)), max_iter=-1)


def emotion_like(n, seed, R=3, d=4):
    """Sequences of 8..15 frames whose ordinal labels follow a noisy random walk seen in feature 0."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        T = int(rng.integers(8, 16))
        z = np.cumsum(rng.normal(size=T)) * 0.4
        Y.append(np.clip(np.round(z + 1), 0, R - 1).astype(np.int64))
        X.append(np.c_[z + 0.3 * rng.normal(size=T), rng.normal(size=(T, d - 1))])
    return X, Y


def test_agm_exact_game_fits_emotion_like_sequences():
    """AGM(game="exact"): the certified objective decreases, every oracle gap is within the
    tolerance, and the fit beats the best constant labelling; the SP-MP variant's objective is
    an upper bound of a game the exact solver bounds from both sides."""
    X, Y = emotion_like(12, seed=0)
    space = Chain(3, "absolute", weights="position")
    agm = AGM(loss=space, lam=0.01, n_passes=15, game="exact", random_state=0).fit(X, Y)
    primal = agm.history_["primal"].to_numpy()
    # measured: 0.388 after the first pass, 0.296 after the 15th (AdaGrad: not monotone)
    assert len(primal) == 15 and primal[-1] < 0.85 * primal[0] and np.argmin(primal) >= 8, primal
    assert np.all(agm.surrogate_.gaps <= 1e-9)
    assert len(agm.solver_state_["multipliers"]) == 12
    const = min(np.mean(space.loss(Y, [np.full(len(y), c) for y in Y])) for c in range(3))
    assert agm.task_loss(X, Y) < 0.6 * const, (agm.task_loss(X, Y), const)
    # the exact game's certified bracket at the final weights holds SP-MP's lower bound
    sur = MaxMinMargin(space, n_iter=5)
    lower, upper, _ = agm.surrogate_.bounds(agm.decision_function(X), Y)
    s_lower, s_upper, _ = sur.bounds(agm.decision_function(X), Y)
    assert np.all(upper - lower <= 1e-9) and np.all(s_lower <= upper + 1e-9) and np.all(lower <= s_upper + 1e-9)


def test_gbcfw_on_the_exact_game_brackets_agms_optimum():
    """M4N(game="exact") minimises AGM's objective by GBCFW: its primal is the exact objective at
    its weights, its dual never goes down and is a true lower bound (below every AdaGrad
    iterate of AGM on the same objective), and the certified gap shrinks."""
    from structpred.estimators import M4N

    X, Y = emotion_like(12, seed=0)
    space = Chain(3, "absolute", weights="position")
    m4n = M4N(loss=space, lam=0.05, n_passes=200, game="exact", eval_every=50, random_state=0).fit(X, Y)
    h = m4n.history_
    assert np.all(m4n.surrogate_.gaps <= 1e-9)
    upper = np.mean(m4n.surrogate_.bounds(m4n.decision_function(X), Y)[1]) + 0.025 * np.sum(m4n.coef_ ** 2)
    assert upper == pytest.approx(h["primal"].iloc[-1], rel=1e-9)
    assert np.all(np.diff(h["dual"].to_numpy()) > 0)
    # measured: gap / primal 0.81 after 50 passes, 0.20 after 200, 0.08 after 400 (O(1/t) steps;
    # the primal of Frank-Wolfe's iterates is not monotone)
    assert h["gap"].iloc[-1] < 0.25 * h["primal"].iloc[-1] and h["gap"].iloc[-1] < 0.5 * h["gap"].iloc[0]
    agm = AGM(loss=space, lam=0.05, n_passes=200, game="exact", random_state=0, eval_every=50).fit(X, Y)
    primal = agm.history_["primal"].to_numpy()
    assert np.all(primal >= h["dual"].iloc[-1]) and primal.min() < h["primal"].iloc[-1]
    with pytest.raises(StructpredError, match="game"):
        M4N(loss=space, game="nash", n_passes=1).fit(X, Y)


def _full_polish_system(parents, P, w, C, u, acol, rows, V, nv, allowed):
    """The tie equations of :func:`GK.polish` as one dense system over all ``(T - 1) R``
    multipliers (the reference the grouped solve must match)."""
    T, R = acol.shape
    value = lambda t, r: float(acol[t] @ r + w[t] * np.min(C @ r))
    E, rhs = [], []
    for t in range(T):
        children = [c for c in range(t + 1, T) if parents[c] == t]
        for k in range(1, nv[t]):
            row = np.zeros((T - 1) * R)
            for b in range(R):
                d = V[t, k, b] - V[t, 0, b]
                for c in children:
                    row[(c - 1) * R + b] += d
                if t > 0:
                    row[(t - 1) * R + rows[t, b]] -= d
            E.append(row)
            rhs.append(value(t, V[t, 0]) - value(t, V[t, k]))
    for t in range(1, T):
        for b in range(R):
            a0 = rows[t, b]
            for a in range(R):
                if allowed[t, a, b] and a != a0:
                    row = np.zeros((T - 1) * R)
                    row[(t - 1) * R + a], row[(t - 1) * R + a0] = 1.0, -1.0
                    E.append(row)
                    rhs.append((P[t - 1, a, b] - u[t - 1, a]) - (P[t - 1, a0, b] - u[t - 1, a0]))
    return np.array(E), np.array(rhs)


@pytest.mark.parametrize("shape", SHAPES)
def test_polish_is_the_least_norm_move_of_the_whole_system(shape):
    """``polish`` solves its tie equations group by group (the edges that a node's vertex
    equations couple): the same least-norm least-squares move as one solve of the whole system,
    on tied and all-zero games, whose nodes have several optimal vertices (so groups span several
    edges), and on generic ones."""
    R, worst, coupled = 3, 0.0, 0
    rng = np.random.default_rng(5)
    C = ref_node_loss("absolute", R)
    for T in (2, 5, 8):
        parents = tree_parents(shape, T, seed=T)
        for scale, tied in SCORES:
            U = random_scores(rng, (T, R), scale, tied)
            P = random_scores(rng, (T - 1, R, R), scale, tied)
            w = np.full(T, 1.0 / 3.0)     # the thirds of the tied scores: ties in the node games
            u = random_scores(rng, (T - 1, R), scale, tied)
            acol, rows = np.empty((T, R)), np.empty((T, R), dtype=np.int64)
            GK.game_dual(parents, U, P, w, GK.ABSOLUTE, u, np.empty((T - 1, R)), np.empty((T, R)), acol, rows,
                         np.empty(R, dtype=np.int64))
            V, nv = np.empty((T, GK._MAXV, R)), np.empty(T, dtype=np.int64)
            allowed = np.zeros((T, R, R), dtype=np.bool_)
            GK.faces(parents, U, P, w, GK.ABSOLUTE, C, u, 1e-8, acol, rows, V, nv, allowed)
            out = np.empty_like(u)
            m = GK.polish(parents, P, w, C, u, acol, rows, V, nv, allowed, out)
            E, rhs = _full_polish_system(parents, P, w, C, u, acol, rows, V, nv, allowed)
            assert m == len(rhs)
            want = u.ravel() + (np.linalg.lstsq(E, rhs, rcond=None)[0] if m else 0.0)
            worst = max(worst, np.max(np.abs(out.ravel() - want)))
            coupled += int(nv.max() > 1)
    assert worst <= 1e-9
    assert coupled > 0          # some systems had vertex equations that couple edges
