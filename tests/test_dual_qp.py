"""The dual QP (:class:`structpred.solvers.DualQP`): the M3N and M4N duals as one quadratic
program, against cvxpy's primal optima (chains by enumeration, multiclass), with certified gaps;
the marginal polytope capability it is built from; the estimators' ``solver`` parameter."""

import itertools

import numpy as np
import pytest

from structpred.errors import StructpredError
from structpred.estimators import M3N, M4N
from structpred.features.joint import joint_map
from structpred.outputs import Chain, Multiclass, Permutation, capabilities
from structpred.solvers import DualQP, dual_qp, run
from structpred.solvers.problem import check_problem
from structpred.surrogates import Hinge, LogLoss, MaxMinMargin
from tests.test_chain_solvers import LAM, R, check_marginals, m3n_reference, m4n_reference, primal_dual_map, problem
from tests.test_solvers import cvx_m3n, cvx_m4n, small_problem


# --- the marginal polytope ------------------------------------------------------------------

@pytest.mark.parametrize("T", [1, 2, 4])
def test_chain_polytope_holds_every_embedding_and_is_tight(T):
    sp = Chain(3)
    E = np.array([sp.embed(np.array(y)) for y in itertools.product(range(3), repeat=T)])
    A, b = sp.marginal_polytope(E[0])
    assert A.shape == (1 + 2 * 3 * (T - 1), sp.dim(T))
    np.testing.assert_array_equal(A @ E.T, np.repeat(b[:, None], len(E), axis=1))
    assert np.linalg.matrix_rank(A.toarray()) == A.shape[0]        # no redundant row for the QP
    # a locally consistent point that is not a chain's marginals is cut: a unary mass off the edges
    m = E[0].copy()
    m[0], m[1] = 0.5, 0.5
    assert T == 1 or np.abs(A @ m - b).max() > 0.4


def test_into_polytope_keeps_feasible_points_and_repairs_near_ones():
    rng = np.random.default_rng(0)
    sp = Chain(3)
    E = np.array([sp.embed(np.array(y)) for y in itertools.product(range(3), repeat=4)])
    m = rng.dirichlet(np.ones(len(E))) @ E
    np.testing.assert_allclose(sp.into_polytope(m), m, atol=1e-15)
    A, b = sp.marginal_polytope(m)
    bad = m + 1e-6 * rng.normal(size=m.size)
    fixed = sp.into_polytope(bad)
    assert fixed.min() >= 0.0 and np.abs(A @ fixed - b).max() < 1e-15
    assert np.abs(fixed - m).max() < 1e-5
    mc = Multiclass.zero_one(4)
    np.testing.assert_allclose(mc.into_polytope([0.5, -1e-9, 0.25, 0.25]), [0.5, 0.0, 0.25, 0.25])
    A, b = mc.marginal_polytope(np.zeros(4))
    assert A.shape == (1, 4) and b.tolist() == [1.0]
    with pytest.raises(StructpredError, match="4 entries"):
        mc.marginal_polytope(np.zeros(3))
    assert "marginal polytope" in capabilities(sp) and "marginal polytope" not in capabilities(Permutation(3))


# --- the QP against cvxpy's primal ------------------------------------------------------------

def check_certified(rec, ref, rel):
    assert rec["dual"] <= ref + 1e-7 <= rec["primal"] + 2e-7          # weak duality around the optimum
    assert rec["gap"] == pytest.approx(rec["primal"] - rec["dual"], abs=1e-15)
    assert 0.0 <= rec["gap"] <= rel * ref


def test_dual_qp_m3n_chain_matches_cvxpy():
    X, Y, E = problem(0)
    ref, wref = m3n_reference(0)
    sp = Chain(R)
    res = dual_qp(Hinge(sp), X, Y, LAM)
    assert len(res.history) == 1 and res.state["status"] == "Solved"
    check_certified(res.history[0], ref, 1e-7)
    np.testing.assert_allclose(res.W.ravel(), wref, atol=1e-4)
    check_marginals(sp, res.mu, 1e-14)                         # mapped into the polytope
    np.testing.assert_allclose(primal_dual_map(joint_map(sp, X), sp, Y, res.mu, LAM), res.W, atol=1e-12)
    assert np.array_equal(dual_qp(Hinge(sp), X, Y, LAM).W, res.W)  # deterministic to the bit


@pytest.mark.parametrize("game", ["exact", "spmp"])
def test_dual_qp_m4n_chain_matches_cvxpy(game):
    X, Y, _ = problem(0)
    ref, wref = m4n_reference(0)
    sp = Chain(R)
    res = dual_qp(MaxMinMargin(sp, game=game, n_iter=200), X, Y, LAM)
    rec = res.history[0]
    # the dual is exact either way; SP-MP's primal is an upper bound (200 x T cold iterations:
    # measured 0.0068 relative above the optimum)
    check_certified(rec, ref, 1e-7 if game == "exact" else 1e-2)
    assert game == "exact" or rec["gap"] > 1e-3 * ref
    np.testing.assert_allclose(res.W.ravel(), wref, atol=1e-4)
    check_marginals(sp, res.mu, 1e-14)


@pytest.mark.parametrize("loss", ["zero_one", "ordinal"])
def test_dual_qp_multiclass_matches_cvxpy(loss):
    X, y = small_problem(n=25, k=4, seed=1)
    sp = Multiclass.zero_one(4) if loss == "zero_one" else Multiclass.ordinal(4)
    lam = 0.05
    for sur, cvx in ((Hinge(sp), cvx_m3n), (MaxMinMargin(sp, game="exact"), cvx_m4n)):
        ref = cvx(sp, X, y, lam)
        res = dual_qp(sur, X, y, lam)
        check_certified(res.history[0], ref, 1e-6)
        assert res.mu.shape == (25, 4) and np.allclose(res.mu.sum(1), 1.0, atol=1e-15) and res.mu.min() >= 0.0


# --- estimators and errors --------------------------------------------------------------------

def test_estimators_take_solver_qp():
    X, Y, _ = problem(0)
    ref = m4n_reference(0)[0]
    est = M4N(loss="sequence_hamming", n_labels=R, lam=LAM, game="exact", solver="qp", n_passes=50).fit(X, Y)
    assert est.history_["pass"].tolist() == [1]                 # finished after its solve
    assert est.history_["gap"].iloc[0] <= 1e-7 * ref
    assert est.get_params()["solver"] == "qp"
    m3 = M3N(loss="sequence_hamming", n_labels=R, lam=LAM, solver="qp").fit(X, Y)
    assert m3.history_["gap"].iloc[0] <= 1e-7 * m3n_reference(0)[0]
    with pytest.raises(StructpredError, match="solver must be 'bcfw' or 'qp', got 'newton'"):
        M3N(loss="sequence_hamming", n_labels=R, solver="newton").fit(X, Y)
    with pytest.raises(StructpredError, match="solver must be 'gbcfw' or 'qp'"):
        M4N(loss="sequence_hamming", n_labels=R, solver="bcfw").fit(X, Y)


def test_dual_qp_refuses_what_it_cannot_solve():
    X, y = small_problem(n=10, k=3)
    with pytest.raises(StructpredError, match="hinge .* or the max-min margin"):
        DualQP(LogLoss(Multiclass.zero_one(3)))
    sp = Permutation(3)
    Y = np.array([np.random.default_rng(i).permutation(3) for i in range(10)])
    with pytest.raises(StructpredError, match="the dual QP needs marginal polytope"):
        run(DualQP(Hinge(sp)), check_problem(sp, X, Y, 1.0), n_passes=1)
    with pytest.raises(StructpredError, match="tol must be"):
        DualQP(Hinge(Multiclass.zero_one(3)), tol=0)
