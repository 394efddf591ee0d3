"""The kernels' inlined ``exp`` and ``log`` (:mod:`structpred.outputs._fastmath`) against numpy's; its
log-sum-exp against the loops it replaced."""

import numpy as np
import pytest
from numba import njit

from structpred.outputs._fastmath import fexp, flog, log_add_exp, log_sum_exp


@njit(cache=True)
def _fexp_all(x, out):
    for i in range(x.shape[0]):
        out[i] = fexp(x[i])


def _ulps(got, want):
    return np.abs(got - want) / np.spacing(np.abs(want))


@pytest.mark.parametrize("lo, hi", [(-0.35, 0.35), (-40.0, 40.0), (-708.0, 709.78), (-745.1, -708.4)])
def test_within_one_ulp_of_numpy(lo, hi):
    """Random arguments over the reduced range, the log-sum-exp range, the normal results and the
    subnormal ones: at most 1 ulp from numpy's ``exp``, and mostly equal."""
    x = np.random.default_rng(0).uniform(lo, hi, 200_000)
    got = np.empty_like(x)
    _fexp_all(x, got)
    want = np.exp(x)
    assert np.all(want > 0) and np.all(np.isfinite(want))
    ulps = _ulps(got, want)
    assert ulps.max() <= 1.0
    assert np.mean(ulps == 0) > 0.8


def test_special_arguments():
    """Underflow to 0 below -745.2, overflow to inf above 709.78, exact 1 at 0, NaN propagates."""
    x = np.array([-np.inf, -1e300, -746.0, -745.2001, 0.0, -0.0, 709.78, 709.79, 1e300, np.inf, np.nan,
                  -744.4, 1.0, -1.0, np.log(2.0)])
    got = np.empty_like(x)
    _fexp_all(x, got)
    with np.errstate(over="ignore"):
        want = np.exp(x)
    assert got[:4].tolist() == [0.0] * 4 and got[4] == got[5] == 1.0
    assert np.isfinite(got[6]) and got[7] == got[8] == got[9] == np.inf and np.isnan(got[10])
    assert got[11] > 0.0                              # the smallest subnormals are not flushed
    assert np.all(_ulps(got[[6, 11, 12, 13, 14]], want[[6, 11, 12, 13, 14]]) <= 1.0)


@njit(cache=True, error_model="numpy")
def _flog_all(x, out):
    for i in range(x.shape[0]):
        out[i] = flog(x[i])


@pytest.mark.parametrize("lo, hi", [(0.5, 2.0), (0.999, 1.001), (1e-300, 1e-100), (1e-3, 30.0), (1.0, 1e308),
                                    (2.2250738585072014e-308, 1e-300)])
def test_log_within_one_ulp_of_numpy(lo, hi):
    """Log-uniform arguments around 1 (where ``log`` is near 0), over the scaled sums' range and
    the whole normal range down to the smallest normal: at most 1 ulp from numpy's ``log``."""
    x = np.exp(np.random.default_rng(1).uniform(np.log(lo), np.log(hi), 200_000))
    got = np.empty_like(x)
    _flog_all(x, got)
    want = np.log(x)
    ulps = _ulps(got, want)
    assert ulps.max() <= 1.0
    assert np.mean(ulps == 0) > 0.9


def test_log_exact_values():
    """``log(1) = 0`` exactly, ``log(2^k) = k ln 2`` to 1 ulp, at the bounds of the reduced range."""
    x = np.array([1.0, 2.0, 0.5, 2.0 ** -1022, 2.0 ** 1023, np.sqrt(2.0), np.sqrt(0.5), np.nextafter(np.sqrt(2.0), 2)])
    got = np.empty_like(x)
    _flog_all(x, got)
    assert got[0] == 0.0
    assert np.all(_ulps(got[1:], np.log(x[1:])) <= 1.0)


@njit(cache=True)
def _lse_rows(A, b, out, loop):
    """``out[i] = log sum_j exp(A[i, j] + b[j])`` by :func:`log_sum_exp`, or by the loops it replaced
    in ``sinkhorn_log`` (rows of ``Z``, and of ``Z.T``: strided)."""
    for i in range(A.shape[0]):
        if not loop:
            out[i] = log_sum_exp(A[i], b)
            continue
        m = -np.inf
        for j in range(A.shape[1]):
            x = A[i, j] + b[j]
            if x > m:
                m = x
        s = 0.0
        for j in range(A.shape[1]):
            s += np.exp(A[i, j] + b[j] - m)
        out[i] = m + np.log(s)


@njit(cache=True)
def _log_add_exp_all(x, y, out, loop):
    for i in range(x.shape[0]):
        if loop:            # the mixing loops it replaced
            m = max(y[i], x[i])
            out[i] = m + np.log(np.exp(x[i] - m) + np.exp(y[i] - m))
        else:
            out[i] = log_add_exp(x[i], y[i])


def test_log_sum_exp_keeps_the_bits_of_the_loops_it_replaced():
    """Rows, strided columns (ties, -inf entries and a wide range of scales included) and the
    two-term form: bit for bit the loops of the multiclass and permutation kernels."""
    rng = np.random.default_rng(2)
    Z = rng.normal(0.0, 50.0, (9, 7))
    Z[2, 3] = Z[2, 4] = Z[2].max() + 1.0
    Z[5] = -np.inf
    Z[:, 6] = -np.inf
    g, f = rng.normal(0.0, 30.0, 7), rng.normal(0.0, 30.0, 9)
    for A, b in ((Z, g), (Z.T, f)):
        got, want = np.empty(A.shape[0]), np.empty(A.shape[0])
        _lse_rows(A, b, got, False)
        _lse_rows(A, b, want, True)
        assert got.tobytes() == want.tobytes()
    x, y = rng.normal(0.0, 400.0, 10_000), rng.normal(0.0, 400.0, 10_000)
    x[:10] = y[:10]
    a, b = np.empty_like(x), np.empty_like(x)
    _log_add_exp_all(x, y, a, False)
    _log_add_exp_all(x, y, b, True)
    assert a.tobytes() == b.tobytes()
