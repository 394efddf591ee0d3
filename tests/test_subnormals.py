"""Subnormals flushed in SP-MP's scaled sums (``structpred.outputs._subnormals``): the MXCSR is set
and restored, and the flushed kernels give the bits of their IEEE runs."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from structpred.outputs import _chain_kernels as K
from structpred.outputs import _tree_kernels as TK
from structpred.outputs._subnormals import FTZ_DAZ, X86, flushing, mxcsr, restore
from structpred.outputs.chain import Chain
from structpred.outputs.tree import Tree

pytestmark = pytest.mark.skipif(not X86, reason="MXCSR is x86's: elsewhere flushing is a no-op")

#: MXCSR's control bits (its low six are sticky exception flags, which arithmetic sets)
CONTROL = 0xFFC0


@njit(cache=False)
def _product_inside_and_after(x, on):
    """``x[0] * x[1]`` with and without the flush (arguments pass a mode change through memory)."""
    saved = flushing(on)
    inside_csr = mxcsr()
    inside = x[0] * x[1]
    restore(saved, on)
    return inside_csr, inside, x[0] * x[1]


def test_flushing_sets_ftz_and_daz_and_restore_puts_the_callers_state_back():
    before = mxcsr() & CONTROL
    assert before & FTZ_DAZ == 0                    # Python's threads run IEEE subnormals
    x = np.array([1e-300, 1e-10])
    csr, inside, after = _product_inside_and_after(x, True)
    assert csr & CONTROL == before | FTZ_DAZ and inside == 0.0
    assert after == pytest.approx(1e-310) and after > 0.0
    assert mxcsr() & CONTROL == before
    csr, inside, _ = _product_inside_and_after(x, False)
    assert csr & CONTROL == before and inside > 0.0


@njit(cache=False)
def _chain_spmp_all_flushed(U, P, Lw, kind, eta, n_iter, thU, thP, lnu, mu_node, mu_edge, nu_bar, mix):
    """The whole call under FTZ and DAZ (not only the sums ``flush`` covers), the caller's state
    then restored."""
    saved = flushing(True)
    K.spmp(U, P, Lw, kind, eta, n_iter, thU, thP, lnu, mu_node, mu_edge, nu_bar, mix, False)
    inside = mxcsr()
    restore(saved, True)
    return inside


def _chain_runs(call, n_words=8, warm_calls=5, mix=0.0, seed=0):
    """bench/bench_chain.py's instances: 26 labels, 8 positions, N(0, 1) scores, 80 iterations;
    every state and average after each of ``warm_calls`` + 1 calls from a cold start."""
    R, T = 26, 8
    sp = Chain(R)
    rng = np.random.default_rng(seed)
    V = rng.normal(size=(n_words, sp.dim(T)))
    Lw = sp.weighted_loss(T)
    eta = 1.0 / (2.0 * sp._cmax * float(np.max(sp.position_weights(T))))
    outs = []
    for v in V:
        U = np.ascontiguousarray(v[: T * R].reshape(T, R))
        P = np.ascontiguousarray(v[T * R:].reshape(T - 1, R, R))
        state = [np.zeros((T, R)), np.zeros((T - 1, R, R)), np.full((T, R), -np.log(R)), np.empty((T, R)),
                 np.empty((T - 1, R, R)), np.empty((T, R))]
        for _ in range(warm_calls + 1):
            call(U, P, Lw, sp._kind, eta, 80, *state, mix)
            outs.append([a.copy() for a in state])
    return outs


def _bitwise_equal(a, b):
    return all(np.array_equal(x, y) for xs, ys in zip(a, b) for x, y in zip(xs, ys))


@pytest.mark.parametrize("mix", [0.0, 0.01])
def test_chain_spmp_with_flushed_sums_gives_the_ieee_bits(mix):
    before = mxcsr() & CONTROL
    flushed = _chain_runs(lambda *a: K.spmp(*a, True), mix=mix)
    assert mxcsr() & CONTROL == before
    ieee = _chain_runs(lambda *a: K.spmp(*a, False), mix=mix)
    assert _bitwise_equal(flushed, ieee)


def test_the_chain_instances_underflow_where_the_pairwise_marginals_are_made():
    """The same instances with the *whole* call flushed move pairwise averages (entries below
    1e-48): the instances reach the subnormal range, and only the sums may flush."""
    ieee = _chain_runs(lambda *a: K.spmp(*a, False))
    inside = []
    whole = _chain_runs(lambda *a: inside.append(_chain_spmp_all_flushed(*a)))
    assert all(csr & FTZ_DAZ == FTZ_DAZ for csr in inside) and mxcsr() & FTZ_DAZ == 0
    moved = [np.abs(w[4] - i[4])[w[4] != i[4]] for w, i in zip(whole, ieee)]
    assert sum(m.size for m in moved) > 0
    assert max(float(m.max()) for m in moved if m.size) < 1e-48
    # the other outputs keep their bits
    assert all(np.array_equal(w[k], i[k]) for w, i in zip(whole, ieee) for k in (0, 1, 2, 3, 5))


def test_tree_spmp_with_flushed_sums_gives_the_ieee_bits():
    """A random tree of 12 nodes, 9 labels, N(0, 1) scores: each state and average after each of
    six warm-started calls of 120 iterations."""
    rng = np.random.default_rng(3)
    R, T = 9, 12
    parents = np.array([-1] + [int(rng.integers(0, t)) for t in range(1, T)], dtype=np.int64)
    sp = Tree(R)
    Lw, eta = sp.weighted_loss(T), sp.spmp_step(T)
    scores = [(rng.normal(size=(T, R)), rng.normal(size=(T - 1, R, R))) for _ in range(4)]
    runs = {}
    for flush in (True, False):
        runs[flush] = []
        for U, P in scores:
            state = [np.zeros((T, R)), np.zeros((T - 1, R, R)), np.full((T, R), -np.log(R)), np.empty((T, R)),
                     np.empty((T - 1, R, R)), np.empty((T, R))]
            for _ in range(6):
                TK.spmp(parents, U, P, Lw, sp._kind, eta, 10 * T, *state, flush)
                runs[flush].append([a.copy() for a in state])
    assert _bitwise_equal(runs[True], runs[False])
