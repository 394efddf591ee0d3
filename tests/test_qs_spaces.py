"""Loss-trick output spaces of QS (Ciliberto, Rosasco and Rudi 2016, §6 and Example 1):
histograms with the Hellinger and Gaussian (KDE) losses, real outputs with the Cauchy loss.
Decoders are checked against brute force, scipy's SLSQP and dense grids on random
instances with weights of both signs."""

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar

import structpred.outputs.real_line as RL
from structpred.errors import StructpredError
from structpred.outputs.base import LossSpace, OutputSpace, WeightedDecoding, capabilities, require
from structpred.outputs.histogram import GaussianHistogram, Hellinger
from structpred.outputs.real_line import Cauchy

SIMPLEX = {"type": "eq", "fun": lambda y: np.sum(y) - 1.0, "jac": lambda y: np.ones_like(y)}


def simplex_points(rng, n, d):
    """Random histograms: Dirichlet points of several concentrations plus the vertices and
    points on faces (zeros), where the decoders' answers may lie."""
    pts = [rng.dirichlet(np.full(d, a), n // 4) for a in (0.1, 0.5, 1.0, 5.0)]
    face = rng.dirichlet(np.ones(d), n // 4)
    face[rng.random(face.shape) < 0.4] = 0.0
    face[np.arange(face.shape[0]), rng.integers(0, d, face.shape[0])] += 1e-3
    face /= face.sum(1, keepdims=True)
    return np.vstack(pts + [face, np.eye(d)])


def hellinger_objective(alpha, Y, y):
    """``sum_i alpha_i L(Y_i, y)`` for each row of ``y`` (direct formula)."""
    y = np.atleast_2d(y)
    L = np.sum((np.sqrt(Y)[None, :, :] - np.sqrt(y)[:, None, :]) ** 2, axis=-1)
    return L @ alpha


def gauss_g(alpha, Y, y, sigma):
    """``g(y) = sum_i alpha_i exp(-||y - Y_i||^2 / (2 sigma^2))`` for each row of ``y``."""
    y = np.atleast_2d(y)
    D = np.sum((y[:, None, :] - Y[None, :, :]) ** 2, axis=-1)
    return np.exp(-D / (2 * sigma**2)) @ alpha


def cauchy_F(alpha, Y, t, c):
    t = np.atleast_1d(np.asarray(t, dtype=float))
    return (0.5 * c * c * np.log1p(((t[:, None] - Y[None, :]) / c) ** 2)) @ alpha


# --- common ---------------------------------------------------------------------------------

def test_spaces_are_loss_trick_spaces():
    for sp in (Hellinger(3), GaussianHistogram(3, 0.5), Cauchy(1.0)):
        assert isinstance(sp, LossSpace) and isinstance(sp, WeightedDecoding)
        assert not isinstance(sp, OutputSpace)
        assert capabilities(sp) == ["loss-trick decoding"]
        require(sp, WeightedDecoding, "QS")
    assert Hellinger(4).label_shape == (4,) and Cauchy().label_shape == ()
    assert repr(Hellinger(4)) == "Hellinger(d=4)" and repr(Cauchy(2.0)) == "Cauchy(c=2)"


# --- Hellinger ------------------------------------------------------------------------------

def test_hellinger_loss_formula():
    sp = Hellinger(5)
    rng = np.random.default_rng(0)
    Y1 = simplex_points(rng, 40, 5)
    Y2 = simplex_points(rng, 40, 5)
    L = sp.loss(Y1, Y2)
    assert L.shape == (Y1.shape[0],)
    np.testing.assert_allclose(L, 2.0 - 2.0 * np.sum(np.sqrt(Y1 * Y2), axis=1), atol=1e-14)
    assert np.all(L >= 0) and np.all(L <= 2.0 + 1e-15)
    e = np.eye(5)
    assert sp.loss(e[0], e[3]) == 2.0 and sp.loss(Y1[3], Y1[3]) == 0.0
    assert sp.loss([0.25, 0.75, 0, 0, 0], [1, 0, 0, 0, 0]) == pytest.approx((np.sqrt(0.25) - 1) ** 2 + 0.75)
    # one truth against a batch, and the symmetry
    np.testing.assert_allclose(sp.loss(Y1[0], Y2), [sp.loss(Y1[0], y) for y in Y2], rtol=0, atol=0)
    np.testing.assert_allclose(sp.loss(Y1, Y2), sp.loss(Y2, Y1), atol=1e-15)


def _slsqp_best(f, jac, starts, d):
    best = np.inf
    for y0 in starts:
        r = minimize(f, y0, jac=jac, method="SLSQP", bounds=[(0.0, 1.0)] * d, constraints=[SIMPLEX],
                     options={"ftol": 1e-14, "maxiter": 500})
        y = np.clip(r.x, 0, None)
        y /= y.sum()
        best = min(best, float(f(y)))
    return best


@pytest.mark.parametrize("d", [2, 3, 4, 6])
def test_hellinger_decode_vs_brute_force_and_slsqp(d):
    sp = Hellinger(d)
    rng = np.random.default_rng(10 + d)
    cand = simplex_points(rng, 20000, d)
    n_vertex = 0
    for trial in range(25):
        n = int(rng.integers(2, 12))
        P = simplex_points(rng, 4 * n, d)
        Y = P[rng.choice(P.shape[0], n, replace=False)]
        alpha = rng.normal(size=n) * rng.choice([0.1, 1.0, 10.0])
        y = sp.weighted_decode(alpha, Y)
        assert y.shape == (d,) and np.all(y >= 0) and abs(y.sum() - 1) < 1e-14
        f = hellinger_objective(alpha, Y, y)[0]
        scale = np.abs(alpha).sum()
        # brute force over many simplex points
        assert f <= hellinger_objective(alpha, Y, cand).min() + 1e-12 * scale
        # SLSQP on the simplex in y (several starts)
        obj = lambda z: hellinger_objective(alpha, Y, np.clip(z, 0, None))[0]  # noqa: E731
        ref = _slsqp_best(obj, None, [np.full(d, 1.0 / d), *rng.dirichlet(np.ones(d), 3)], d)
        assert f <= ref + 1e-9 * scale
        n_vertex += int(np.count_nonzero(y) == 1)
    assert n_vertex < 25  # the instances are not all vertex cases


def test_hellinger_kkt():
    """In ``u = sqrt(y)`` the decoding maximises ``<s, u>`` on the non-negative unit sphere: at the
    answer, ``s`` is a positive multiple of ``u`` on the support and ``s <= 0`` off it."""
    sp = Hellinger(8)
    rng = np.random.default_rng(3)
    n_partial = 0
    for _ in range(50):
        Y = rng.dirichlet(np.full(8, 0.3), 15)
        alpha = rng.normal(size=15)
        y = sp.weighted_decode(alpha, Y)
        u = np.sqrt(y)
        s = alpha @ np.sqrt(Y)  # the objective is const - 2 <s, u>: its gradient in u is -2 s
        supp = y > 0
        if np.any(s > 0):
            lam = s[supp] / u[supp]
            np.testing.assert_allclose(lam, np.linalg.norm(np.maximum(s, 0)), rtol=1e-12)
            assert np.all(lam > 0)
        assert np.all(s[~supp] <= 0)
        n_partial += int(0 < np.count_nonzero(~supp))
    assert n_partial > 10


def test_hellinger_vertex_case():
    sp = Hellinger(4)
    rng = np.random.default_rng(4)
    Y = rng.dirichlet(np.ones(4), 6)
    alpha = -rng.random(6) - 0.1  # s = alpha @ sqrt(Y) < 0: no positive entry
    s = alpha @ np.sqrt(Y)
    assert np.all(s < 0)
    y = sp.weighted_decode(alpha, Y)
    np.testing.assert_array_equal(y, np.eye(4)[np.argmax(s)])
    cand = simplex_points(rng, 20000, 4)
    assert hellinger_objective(alpha, Y, y)[0] <= hellinger_objective(alpha, Y, cand).min() + 1e-12
    # ties go to the lowest index; zero weights give s = 0 (no positive entry): e_0
    U = np.full((3, 4), 0.25)
    np.testing.assert_array_equal(sp.weighted_decode([-1.0, -0.5, -2.0], U), [1, 0, 0, 0])
    np.testing.assert_array_equal(sp.weighted_decode(np.zeros(6), Y), [1, 0, 0, 0])
    # s <= 0 with zeros: the vertex of a zero entry (value 0 beats any negative)
    Y2 = np.array([[0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0]])
    np.testing.assert_array_equal(sp.weighted_decode([-1.0, -1.0], Y2), [0, 0, 0, 1])


def test_hellinger_one_hot_and_batch():
    sp = Hellinger(5)
    rng = np.random.default_rng(5)
    Y = simplex_points(rng, 40, 5)
    n = Y.shape[0]
    for i in (0, 7, n - 1):
        np.testing.assert_allclose(sp.weighted_decode(np.eye(n)[i], Y), Y[i], atol=1e-15)
        np.testing.assert_allclose(sp.weighted_decode(3.5 * np.eye(n)[i], Y), Y[i], atol=1e-15)
    A = rng.normal(size=(9, n))
    B = sp.weighted_decode(A, Y)
    assert B.shape == (9, 5)
    for q in range(9):  # equal up to the rounding of a matrix product by rows or at once
        np.testing.assert_allclose(B[q], sp.weighted_decode(A[q], Y), rtol=1e-13, atol=1e-15)
    # tiny weights: no underflow of s_+^2
    np.testing.assert_allclose(sp.weighted_decode(1e-200 * np.eye(n)[3], Y), Y[3], atol=1e-15)


# --- Gaussian (KDE) loss --------------------------------------------------------------------

def test_gaussian_loss_formula():
    sp = GaussianHistogram(4, 0.3)
    rng = np.random.default_rng(6)
    Y1, Y2 = rng.dirichlet(np.ones(4), 30), rng.dirichlet(np.ones(4), 30)
    D = np.sum((Y1 - Y2) ** 2, axis=1)
    np.testing.assert_allclose(sp.loss(Y1, Y2), 1 - np.exp(-D / (2 * 0.09)), rtol=1e-13)
    np.testing.assert_allclose(sp.kernel(Y1, Y2), np.exp(-D / (2 * 0.09)), rtol=1e-13)
    assert sp.loss(Y1[0], Y1[0]) == 0.0
    e = np.eye(4)
    assert sp.loss(e[0], e[1]) == pytest.approx(1 - np.exp(-2 / 0.18), rel=1e-14)
    np.testing.assert_allclose(sp.objective(rng.normal(size=30), Y1, Y2[:5]).shape, (5,))
    a = rng.normal(size=30)
    np.testing.assert_allclose(sp.objective(a, Y1, Y2[:5]), gauss_g(a, Y1, Y2[:5], 0.3), rtol=1e-13)


def test_gaussian_one_hot_returns_training_output():
    rng = np.random.default_rng(7)
    for d, sigma in [(3, 0.05), (5, 0.3), (16, 1.0)]:
        sp = GaussianHistogram(d, sigma)
        Y = rng.dirichlet(np.ones(d), 12)
        for i in (0, 5, 11):
            np.testing.assert_allclose(sp.weighted_decode(np.eye(12)[i], Y), Y[i], atol=1e-15)
            np.testing.assert_allclose(sp.weighted_decode(2.0 * np.eye(12)[i], Y), Y[i], atol=1e-15)


@pytest.mark.parametrize("d", [3, 4, 5])
def test_gaussian_positive_weights_vs_slsqp(d):
    rng = np.random.default_rng(20 + d)
    worst = 0.0
    for trial in range(12):
        sigma = float(rng.choice([0.1, 0.2, 0.4]))
        sp = GaussianHistogram(d, sigma)
        n = int(rng.integers(3, 15))
        Y = rng.dirichlet(np.full(d, 0.7), n)
        alpha = rng.random(n) + 0.05
        y = sp.weighted_decode(alpha, Y)
        assert np.all(y >= 0) and abs(y.sum() - 1) < 1e-12
        g = gauss_g(alpha, Y, y, sigma)[0]
        gY = gauss_g(alpha, Y, Y, sigma)
        assert np.all(g >= gY - 1e-12)
        y0 = Y[np.argmax(gY)]
        f = lambda z: -gauss_g(alpha, Y, z, sigma)[0]  # noqa: E731

        def jac(z):
            k = np.exp(-np.sum((z - Y) ** 2, axis=1) / (2 * sigma**2)) * alpha
            return -(k @ (Y - z)) / sigma**2

        ref = -_slsqp_best(f, jac, [y0], d)
        assert g >= ref - 1e-6
        worst = max(worst, ref - g)
    assert worst < 1e-6


@pytest.mark.parametrize("d", [3, 5])
def test_gaussian_mixed_weights_ascends(d):
    """Weights of both signs: the answer is in the simplex and at least as good as every
    training output (the restarts' starting points) and as SLSQP from the best of them."""
    rng = np.random.default_rng(30 + d)
    for trial in range(12):
        sigma = float(rng.choice([0.1, 0.3]))
        sp = GaussianHistogram(d, sigma)
        n = 10
        Y = rng.dirichlet(np.full(d, 0.7), n)
        alpha = rng.normal(size=n)
        y = sp.weighted_decode(alpha, Y)
        assert np.all(y >= 0) and abs(y.sum() - 1) < 1e-12
        g = gauss_g(alpha, Y, y, sigma)[0]
        gY = gauss_g(alpha, Y, Y, sigma)
        assert g >= gY.max() - 1e-12
        f = lambda z: -gauss_g(alpha, Y, z, sigma)[0]  # noqa: E731
        ref = -_slsqp_best(f, None, [Y[np.argmax(gY)]], d)
        assert g >= ref - 1e-6


def simplex_kkt_gap(grad, y):
    """KKT residual of ``max g`` over the simplex at ``y``: with ``lam = max_j grad_j``, the
    multiplier, ``max(lam - min_{j in supp} grad_j)``; zero iff ``grad_j = lam`` on the
    support and ``grad_j <= lam`` off it."""
    return float(grad.max() - grad[y > 0].min())


def test_gaussian_all_negative_weights_and_batch():
    """All weights negative: ``g < 0`` is maximised away from the outputs, at a point the local
    method certifies only as stationary (KKT on the simplex), better than every output."""
    sigma = 0.3
    sp = GaussianHistogram(4, sigma)
    rng = np.random.default_rng(8)
    Y = rng.dirichlet(np.ones(4), 8)
    for _ in range(10):
        alpha = -rng.random(8) - 0.1
        y = sp.weighted_decode(alpha, Y)
        assert np.all(y >= 0) and abs(y.sum() - 1) < 1e-12
        assert gauss_g(alpha, Y, y, sigma)[0] >= gauss_g(alpha, Y, Y, sigma).max()
        k = np.exp(-np.sum((y - Y) ** 2, axis=1) / (2 * sigma**2)) * alpha
        grad = (k @ (Y - y)) / sigma**2
        assert simplex_kkt_gap(grad, y) < 1e-6 * np.abs(alpha).sum() / sigma**2
    A = rng.normal(size=(6, 8))
    B = sp.weighted_decode(A, Y)
    assert B.shape == (6, 4)
    for q in range(6):
        np.testing.assert_allclose(B[q], sp.weighted_decode(A[q], Y), rtol=0, atol=1e-12)


def test_gaussian_restarts_matter_and_d128_smoke():
    """Two outputs close together make a mode (near their midpoint, g = 2 a exp(-1/4) = 0.779)
    higher than a lone output of larger g (0.73 > 0.684 at the pair's outputs): the first
    restart stays at the lone output, the second finds the better mode."""
    Y = np.array([[0.9, 0.05, 0.05], [0.85, 0.1, 0.05], [0.05, 0.05, 0.9]])
    alpha = np.array([0.5, 0.5, 0.73])
    g_best = gauss_g(alpha, Y, GaussianHistogram(3, 0.05).weighted_decode(alpha, Y), 0.05)[0]
    y1 = GaussianHistogram(3, 0.05, n_restarts=1).weighted_decode(alpha, Y)
    np.testing.assert_allclose(y1, Y[2], atol=1e-6)
    y = GaussianHistogram(3, 0.05).weighted_decode(alpha, Y)
    np.testing.assert_allclose(y, [0.875, 0.075, 0.05], atol=1e-4)
    assert g_best == pytest.approx(2 * 0.5 * np.exp(-0.25), rel=1e-4)
    rng = np.random.default_rng(9)
    d, n = 128, 300
    Y = rng.dirichlet(np.full(d, 0.5), n)
    A = rng.normal(size=(4, n)) / n
    sp = GaussianHistogram(d, 0.1)
    out = sp.weighted_decode(A, Y)
    assert out.shape == (4, d) and np.all(out >= 0)
    np.testing.assert_allclose(out.sum(1), 1.0, atol=1e-12)
    G0 = A @ np.exp(-np.sum((Y[:, None] - Y[None]) ** 2, -1) / 0.02)  # g at the training outputs
    assert np.all(sp.objective(A, Y, out) >= G0.max(1) - 1e-12)


# --- Cauchy ---------------------------------------------------------------------------------

def test_cauchy_loss_formula():
    rng = np.random.default_rng(11)
    for c in (0.1, 1.0, 3.0):
        sp = Cauchy(c)
        y, y2 = rng.normal(size=50) * 5, rng.normal(size=50) * 5
        np.testing.assert_allclose(sp.loss(y, y2), c**2 / 2 * np.log(1 + ((y - y2) / c) ** 2), rtol=1e-13)
        np.testing.assert_allclose(sp.loss(y, y2), sp.loss(y2, y), rtol=0)
        assert sp.loss(1.5, 1.5) == 0.0 and np.ndim(sp.loss(1.0, 2.0)) == 0
        np.testing.assert_allclose(sp.loss(0.0, y2), [sp.loss(0.0, v) for v in y2])
    assert Cauchy(1.0).loss(0.0, 1.0) == pytest.approx(0.5 * np.log(2), rel=1e-15)
    assert Cauchy(2.0).loss(0.0, 1e-9) == pytest.approx(0.5e-18, rel=1e-9)  # ~ r^2 / 2 near 0


def cauchy_reference(alpha, Y, c):
    """Dense grid of 1e5 points on [min Y, max Y], refined by a bounded scalar solve around
    the best grid point."""
    lo, hi = Y.min(), Y.max()
    t = np.linspace(lo, hi, 100_001)
    F = np.concatenate([cauchy_F(alpha, Y, t[j:j + 5000], c) for j in range(0, t.size, 5000)])
    k = int(np.argmin(F))
    r = minimize_scalar(lambda s: cauchy_F(alpha, Y, s, c)[0], bounds=(t[max(k - 1, 0)], t[min(k + 1, t.size - 1)]),
                        method="bounded", options={"xatol": 1e-13 * max(1.0, abs(t[k]))})
    return (r.x, r.fun) if r.fun < F[k] else (t[k], F[k])


def test_cauchy_decode_vs_dense_grid():
    rng = np.random.default_rng(12)
    worst = -np.inf
    for trial in range(200):
        c = float(rng.choice([0.05, 0.3, 1.0, 4.0]))
        sp = Cauchy(c)
        n = int(rng.integers(2, 40))
        Y = rng.normal(size=n) * rng.choice([0.5, 2.0, 10.0])
        if trial % 4 == 1:
            Y[: min(3, n)] += rng.choice([-1, 1], min(3, n)) * 50  # outliers
        if trial % 4 == 2:
            Y = np.round(Y)  # repeated outputs
        alpha = rng.normal(size=n)
        if trial % 4 == 3:
            alpha -= alpha.mean()  # weights summing to zero
        t = sp.weighted_decode(alpha, Y)
        assert np.ndim(t) == 0 and Y.min() <= t <= Y.max()
        f = cauchy_F(alpha, Y, t, c)[0]
        assert f == pytest.approx(sp.objective(alpha, Y, t), rel=1e-12, abs=1e-12)
        tr, fr = cauchy_reference(alpha, Y, c)
        scale = np.abs(alpha) @ sp.rho(tr - Y)  # sum of |terms|: the relative scale of F
        assert f <= fr + 1e-9 * max(abs(fr), scale), (trial, t, tr, f, fr)
        worst = max(worst, (f - fr) / max(abs(fr), scale))
    assert worst < 1e-9


def test_cauchy_one_hot_constant_and_extremes():
    rng = np.random.default_rng(13)
    Y = rng.normal(size=30)
    sp = Cauchy(0.5)
    for i in (0, 13, 29):
        assert sp.weighted_decode(np.eye(30)[i], Y) == pytest.approx(Y[i], abs=1e-14)
    A = np.eye(30)[[3, 4, 5]] * 2.0
    np.testing.assert_allclose(sp.weighted_decode(A, Y), Y[[3, 4, 5]], atol=1e-14)
    # constant outputs
    assert sp.weighted_decode(rng.normal(size=5), np.full(5, 2.5)) == 2.5
    np.testing.assert_array_equal(sp.weighted_decode(rng.normal(size=(3, 5)), np.full(5, -1.0)), [-1.0] * 3)
    # one training output
    assert sp.weighted_decode([-0.7], [4.0]) == 4.0
    # all weights negative: F is maximised at the data, its minimum is at an end of the range
    a = -rng.random(30)
    t = sp.weighted_decode(a, Y)
    assert t in (Y.min(), Y.max())
    assert cauchy_F(a, Y, t, 0.5)[0] == pytest.approx(cauchy_F(a, Y, [Y.min(), Y.max()], 0.5).min(), rel=1e-14)
    # zero weights: F = 0, the first grid point (min Y)
    assert sp.weighted_decode(np.zeros(30), Y) == Y.min()


def test_cauchy_nonnegative_weights_are_global_on_the_line():
    """Robust Nadaraya-Watson: with non-negative weights the answer is the minimiser over the
    whole real line (checked on a grid reaching well beyond the data)."""
    rng = np.random.default_rng(14)
    for _ in range(20):
        Y = rng.standard_cauchy(size=25)
        w = rng.random(25)
        w /= w.sum()
        sp = Cauchy(0.7)
        t = sp.weighted_decode(w, Y)
        wide = np.linspace(Y.min() - 100, Y.max() + 100, 200_001)
        Fw = np.concatenate([cauchy_F(w, Y, wide[j:j + 5000], 0.7) for j in range(0, wide.size, 5000)])
        assert cauchy_F(w, Y, t, 0.7)[0] <= Fw.min() + 1e-12


def test_cauchy_small_scale_blocks_and_grid_cap(monkeypatch):
    """Many separated wells (c much smaller than the spacing of the outputs): the graded grid,
    the blocked tables and a capped grid all give the global minimum."""
    rng = np.random.default_rng(15)
    Y = rng.normal(size=150)
    A = rng.normal(size=(30, 150))
    sp = Cauchy(0.002, n_grid=16)
    t1 = sp.weighted_decode(A, Y)
    monkeypatch.setattr(RL, "TABLE_ENTRIES", 2000)
    t2 = sp.weighted_decode(A, Y)
    np.testing.assert_allclose(t2, t1, rtol=0, atol=1e-12)
    monkeypatch.setattr(RL, "MAX_GRID", 40)
    assert sp.grid(Y).size <= 40 + 2
    t3 = sp.weighted_decode(A, Y)
    F1 = np.array([cauchy_F(A[q], Y, t1[q], 0.002)[0] for q in range(30)])
    F3 = np.array([cauchy_F(A[q], Y, t3[q], 0.002)[0] for q in range(30)])
    np.testing.assert_allclose(F3, F1, rtol=1e-12, atol=1e-15)
    for q in range(0, 30, 6):
        _, fr = cauchy_reference(A[q], Y, 0.002)
        assert F1[q] <= fr + 1e-9 * abs(fr)


def test_cauchy_speed_smoke():
    """n_train = 1000 and 1000 queries with kernel-ridge weights (QS's robust regression setting):
    runs, answers in range, batch equals single decoding (no timing assertion)."""
    rng = np.random.default_rng(16)
    n = 1000
    X = rng.uniform(-1, 1, n)
    Y = np.sin(3 * X) + 0.1 * rng.normal(size=n)
    out = rng.random(n) < 0.2
    Y[out] = rng.uniform(-10, 10, out.sum())
    Xt = rng.uniform(-1, 1, 1000)
    k = lambda a, b: np.exp(-(a[:, None] - b[None]) ** 2 / (2 * 0.1**2))  # noqa: E731
    A = np.linalg.solve(k(X, X) + n * 1e-3 * np.eye(n), k(Xt, X).T).T
    sp = Cauchy(0.3)
    t = sp.weighted_decode(A, Y)
    assert t.shape == (1000,) and np.all((t >= Y.min()) & (t <= Y.max()))
    for q in (0, 500, 999):
        assert sp.weighted_decode(A[q], Y) == pytest.approx(t[q], rel=1e-12, abs=1e-12)
    # KRR with outliers: the robust fit follows sin(3x) where the weights are informative
    assert np.median(np.abs(t - np.sin(3 * Xt))) < 0.1


# --- bad inputs and determinism --------------------------------------------------------------

@pytest.mark.parametrize("make, match", [
    (lambda: Hellinger(0), "d .* positive integer"),
    (lambda: Hellinger(2.5), "positive integer"),
    (lambda: Hellinger("a"), "positive integer"),
    (lambda: GaussianHistogram(3, 0.0), "sigma must be a positive number"),
    (lambda: GaussianHistogram(3, -1.0), "sigma must be a positive number"),
    (lambda: GaussianHistogram(3, np.nan), "sigma must be a positive number"),
    (lambda: GaussianHistogram(3, 1.0, n_restarts=0), "n_restarts"),
    (lambda: GaussianHistogram(3, 1.0, max_iter=-2), "max_iter"),
    (lambda: GaussianHistogram(3, 1.0, tol=0), "tol"),
    (lambda: Cauchy(0.0), "c must be a positive number"),
    (lambda: Cauchy(-2), "c must be a positive number"),
    (lambda: Cauchy(np.inf), "c must be a positive number"),
    (lambda: Cauchy(1.0, n_grid=1), "n_grid"),
    (lambda: Cauchy(1.0, rtol=-1e-9), "rtol"),
])
def test_bad_parameters(make, match):
    with pytest.raises(StructpredError, match=match):
        make()


def test_bad_histograms_and_weights():
    rng = np.random.default_rng(17)
    Y = rng.dirichlet(np.ones(3), 5)
    for sp in (Hellinger(3), GaussianHistogram(3, 0.5)):
        with pytest.raises(StructpredError, match="row 1 has a negative entry"):
            sp.check_labels([[0.5, 0.5, 0.0], [1.2, -0.2, 0.0]])
        with pytest.raises(StructpredError, match="row 0 sums to 0.9"):
            sp.loss([0.5, 0.4, 0.0], Y[0])
        sp.check_labels([0.5, 0.5 + 5e-7, 0.0])  # within 1e-6
        with pytest.raises(StructpredError, match="sums to"):
            sp.check_labels([0.5, 0.5 + 5e-6, 0.0])
        with pytest.raises(StructpredError, match="NaN or infinite"):
            sp.check_labels([np.nan, 0.5, 0.5])
        with pytest.raises(StructpredError, match="NaN or infinite"):
            sp.weighted_decode(np.ones(5), np.where(np.eye(5, 3) > 0, np.inf, Y))
        with pytest.raises(StructpredError, match=r"shape \(3,\) or \(n, 3\)"):
            sp.check_labels(np.ones((2, 4)) / 4)
        with pytest.raises(StructpredError, match=r"shape \(3,\) or \(n, 3\)"):
            sp.check_labels(np.ones((2, 2, 3)) / 3)
        with pytest.raises(StructpredError, match="complex"):
            sp.check_labels(np.array([0.5, 0.5, 0j]))
        with pytest.raises(StructpredError, match="real numbers"):
            sp.check_labels(["a", "b", "c"])
        with pytest.raises(StructpredError, match="do not match"):
            sp.loss(Y[:2], Y[:3])
        with pytest.raises(StructpredError, match="training outputs must have shape"):
            sp.weighted_decode(np.ones(1), Y[0])
        with pytest.raises(StructpredError, match=r"weights must have shape \(5,\)"):
            sp.weighted_decode(np.ones(4), Y)
        with pytest.raises(StructpredError, match=r"weights must have shape"):
            sp.weighted_decode(np.ones((2, 2, 5)), Y)
        with pytest.raises(StructpredError, match="weights contain NaN"):
            sp.weighted_decode([1, 2, np.nan, 0, 1], Y)
        with pytest.raises(StructpredError, match="weights contain NaN"):
            sp.weighted_decode([[1, 2, -np.inf, 0, 1]], Y)
    sp = Cauchy()
    with pytest.raises(StructpredError, match=r"shape \(\) or \(n,\)"):
        sp.check_labels(np.zeros((2, 2)))
    with pytest.raises(StructpredError, match="NaN or infinite"):
        sp.loss(np.inf, 0.0)
    with pytest.raises(StructpredError, match="NaN or infinite"):
        sp.weighted_decode(np.ones(3), [0.0, np.nan, 1.0])
    with pytest.raises(StructpredError, match="n_train >= 1"):
        sp.weighted_decode(np.ones(0), np.zeros(0))
    with pytest.raises(StructpredError, match="training outputs must have shape"):
        sp.weighted_decode(np.ones(1), 3.0)
    with pytest.raises(StructpredError, match=r"weights must have shape \(3,\)"):
        sp.weighted_decode(np.ones(2), [0.0, 1.0, 2.0])
    with pytest.raises(StructpredError, match="weights contain NaN"):
        sp.weighted_decode([0.0, np.nan, 1.0], [0.0, 1.0, 2.0])
    with pytest.raises(StructpredError, match="do not match"):
        sp.loss([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(StructpredError, match="real numbers"):
        sp.loss("x", 1.0)


def test_determinism():
    rng = np.random.default_rng(18)
    Y = rng.dirichlet(np.ones(6), 40)
    A = rng.normal(size=(5, 40))
    for sp in (Hellinger(6), GaussianHistogram(6, 0.2)):
        np.testing.assert_array_equal(sp.weighted_decode(A, Y), sp.weighted_decode(A.copy(), Y.copy()))
    y = rng.normal(size=40)
    sp = Cauchy(0.4)
    np.testing.assert_array_equal(sp.weighted_decode(A, y), sp.weighted_decode(A.copy(), y.copy()))
    # list inputs are accepted like arrays
    np.testing.assert_array_equal(sp.weighted_decode(A[0].tolist(), y.tolist()), sp.weighted_decode(A[0], y))
