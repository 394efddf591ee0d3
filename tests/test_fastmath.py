"""The kernels' inlined ``exp`` (:mod:`structpred.outputs._fastmath`) against numpy's."""

import numpy as np
import pytest
from numba import njit

from structpred.outputs._fastmath import fexp


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
