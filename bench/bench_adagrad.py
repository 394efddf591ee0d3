"""Benchmark: AdaGrad's dense step on hashed SRL-sized weights (AGM's full-set refit), against C.

Usage: python bench/bench_adagrad.py [--quick] [--weights 1048576] [--nonzero 0.64] [--touched 600]
                                     [--threads 2 4 8] [--seconds 0.5] [--repeat 5] [--seed 0]

AGM trains by AdaGrad on the primal, ``g = Psi_i dS/dv_i + lam W``: the regulariser makes every
step touch all ``--weights`` coordinates (2^20: the hashed tree features of ``agm_srl_full``),
while the sample's own gradient touches ``--touched`` of them.  A step here is the sample's
sparse add into ``G`` followed by the dense work; columns, all in alternated timings
(``bench_chain.paired``: every round times each column once, best of ``--repeat`` rounds):

* ``fused``: ours, ``structpred.solvers._dense.adagrad_update`` (``S += G^2``, ``W -= step G /
  sqrt(S)``, then the next step's ``G = lam W``: one pass over the three arrays);
* ``two passes``: the step as it was before (``_dense.scaled`` for ``G = lam W``, then the
  update), compiled here with the same numba settings;
* ``C``: the fused loop in plain C (``cc -O3``, baseline ISA, no fast-math), one ctypes call a
  step.  gcc keeps ``sqrt``'s ``errno`` check there, so this loop does not vectorise;
* ``K threads``: ``_dense.adagrad_update_threads``, the fused loop split over ``K`` numba threads
  (``--threads``; what AGM's fit takes at hashed sizes when numba has more than one thread);
* ``C native``: the same with ``-march=native -fno-math-errno -ffp-contract=off`` (no fused
  multiply-adds and no fast-math: the same
  bits), the strongest plain C of this loop.  It is memory-bound: this column is the speed of
  the machine's memory, not of a compiler.

Every column is checked to leave the same bits in ``W``, ``S`` and ``G`` after a few steps before
anything is timed.  Prints the CPU model, the instruction set numba compiles for and the load
average: ratios compare within this run only.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import tempfile
from pathlib import Path

import numba
import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_chain  # noqa: E402  (compile_shared, paired, print_target)

from structpred.solvers import _dense  # noqa: E402

C_SOURCE = r"""
#include <math.h>

void adagrad_fused(double *W, double *S, double *G, long n, double step, double lam)
{
    for (long j = 0; j < n; j++) {
        double g = G[j];
        double s = S[j] + g * g;
        S[j] = s;
        double w = W[j] - step * g / sqrt(s > 0.0 ? s : 1.0);
        W[j] = w;
        G[j] = lam * w;
    }
}
"""


@njit(cache=True, error_model="numpy")
def two_pass_update(W, S, G, step):
    """The update without the fused ``G = lam W`` (the step before the fusion: ``_dense.scaled``
    ran first)."""
    for j in range(W.size):
        g = G[j]
        s = S[j] + g * g
        S[j] = s
        W[j] -= step * g / np.sqrt(s if s > 0.0 else 1.0)


@njit(cache=True)
def sparse_add(G, idx, val):
    """The sample's gradient: ``G[idx[k]] += val[k]`` in order (repeated indices add twice)."""
    for k in range(idx.size):
        G[idx[k]] += val[k]


def c_step(fused, arrays, idx, val, step, lam):
    """One step of a C column: the sample's add, then the C loop ``fused`` on its ``arrays`` (W, S, G)."""
    W, S, G = arrays

    def run():
        sparse_add(G, idx, val)
        fused(W, S, G, W.size, step, lam)
        return 1

    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="0.2 s per measurement, 3 rounds")
    ap.add_argument("--weights", type=int, default=2 ** 20)
    ap.add_argument("--nonzero", type=float, default=0.64, help="fraction of nonzero weights (pass 10: 671k of 2^20)")
    ap.add_argument("--touched", type=int, default=600, help="coordinates of one sample's gradient")
    ap.add_argument("--threads", type=int, nargs="*", default=None,
                    help="threaded columns (default: 2, 4, 8, ... up to numba's threads)")
    ap.add_argument("--seconds", type=float, default=0.5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    seconds, repeat = (0.2, 3) if args.quick else (args.seconds, args.repeat)
    n, lam, step = args.weights, 0.01, 0.1
    rng = np.random.default_rng(args.seed)
    W0 = rng.normal(size=n) * (rng.random(n) < args.nonzero)
    S0 = rng.random(n) * (W0 != 0)
    threads = args.threads if args.threads is not None else [
        k for k in (2, 4, 8, 16, 32, 64) if k <= numba.config.NUMBA_NUM_THREADS]
    idx = np.sort(rng.integers(0, n, size=args.touched))
    val = rng.normal(size=args.touched)

    bench_chain.print_target()
    print(f"AdaGrad step on {n} weights ({args.nonzero:.0%} nonzero), {args.touched} touched by the sample, "
          f"lam {lam}, step {step}; {seconds:g} s per measurement, best of {repeat} alternated rounds, "
          f"load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmpdir:
        libs = {"C": bench_chain.compile_shared(C_SOURCE, tmpdir, "adagrad_ref"),
                "C native": bench_chain.compile_shared(C_SOURCE, tmpdir, "adagrad_native",
                                                       ("-march=native", "-fno-math-errno", "-ffp-contract=off"))}
        for name, (_, info) in libs.items():
            print(f"{name} reference: {info}")
        columns = ("fused", "two passes", *(f"{k} threads" for k in threads), *libs)
        state = {name: (W0.copy(), S0.copy(), lam * W0) for name in columns}

        def fused():
            W, S, G = state["fused"]
            sparse_add(G, idx, val)
            _dense.adagrad_update(W, S, G, step, lam)
            return 1

        def two_passes():
            W, S, G = state["two passes"]
            _dense.scaled(G, W, lam)
            sparse_add(G, idx, val)
            two_pass_update(W, S, G, step)
            return 1

        def threaded(k):
            def run():
                W, S, G = state[f"{k} threads"]
                sparse_add(G, idx, val)
                numba.set_num_threads(k)
                _dense.adagrad_update_threads(W, S, G, step, lam)
                return 1
            return run

        runs = {"fused": fused, "two passes": two_passes, **{f"{k} threads": threaded(k) for k in threads}}
        f8 = np.ctypeslib.ndpointer(np.float64, flags="C_CONTIGUOUS")
        for name, (lib, _) in libs.items():
            if lib is not None:
                lib.adagrad_fused.argtypes = [f8, f8, f8, ctypes.c_long, ctypes.c_double, ctypes.c_double]
                runs[name] = c_step(lib.adagrad_fused, state[name], idx, val, step, lam)
        for _ in range(5):                      # the same bits from the same start, before timing
            for run in runs.values():
                run()
        ref = state["fused"]
        for name in runs:
            W, S, G = state[name]
            G_next = lam * W if name == "two passes" else G   # two passes builds lam W at its next step
            if not (np.array_equal(W, ref[0]) and np.array_equal(S, ref[1]) and np.array_equal(G_next, ref[2])):
                raise SystemExit(f"{name} left other bits than fused after 5 steps")
        print("W, S and the next G: the same bits in every column after 5 steps")
        best = bench_chain.paired(runs, seconds, repeat)
    print(f"{'column':>12} {'ms / step':>10} {'GB/s':>7}")
    traffic = {"two passes": 7}   # arrays read + written over the step's passes (6 in the fused loops)
    for name, t in best.items():
        print(f"{name:>12} {1e3 * t:10.3f} {traffic.get(name, 6) * 8 * n / t / 1e9:7.1f}")
    print(f"two passes / fused: {best['two passes'] / best['fused']:.2f}x (> 1: the fusion is faster)")
    for k in threads:
        print(f"fused / {k} threads: {best['fused'] / best[f'{k} threads']:.2f}x (the threaded update's speed-up)")
    for name in libs:
        if name in best:
            print(f"{name} / fused: {best[name] / best['fused']:.2f}x (>= 1: at or above C)")


if __name__ == "__main__":
    main()
