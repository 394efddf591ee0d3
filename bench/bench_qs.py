"""Benchmark: QS on USPS against scikit-learn's KernelRidge, and the QS ranking decoder's greedy
feedback-arc-set order against a plain C reference.

Usage: python bench/bench_qs.py [--quick] [--sizes 50 400] [--seconds 0.3] [--seed 0] [--n 1000 7000] [--cache DIR]

1. **QS vs KernelRidge** (``bench_krr``): USPS through the data layer (cache ->
   STRUCTPRED_MIRROR -> download, sha256-checked), upper halves in, lower halves as histograms
   out (the ``qs_usps`` experiment's representation), ``n`` training images and 2000 queries.
   ``QS(loss=Hellinger(128))`` (fit: one Cholesky of ``K + n lam I`` and the kernel ridge
   coefficients of ``sqrt(Y)``; predict: the kernel columns, one product, the closed-form
   decoder) against ``sklearn.kernel_ridge.KernelRidge`` with the same Gaussian kernel and
   regularisation (``alpha = n lam``, ``gamma = 1 / (2 sigma^2)``) fitted on ``sqrt(Y)``, the same
   kernel ridge problem without the decoding.  Printed: fit + predict seconds of each (best of
   3) and the ratio KernelRidge / QS (> 1: QS faster), and the largest difference of the two
   statistics as a check that both solve the same problem.

2. **FAS decoding** (``bench_fas``):

:func:`structpred.outputs._ranking_kernels.fas_order` (the weighted Eades, Lin and Smyth 1993
greedy order that :meth:`PairwiseRanking.weighted_decode` runs on the net weights, ``O(M^2)``)
on random antisymmetric net-weight matrices ``D = U - U^T`` (``U`` strictly upper triangular,
N(0, 1) entries, fixed seed) at ``M = 50`` and ``M = 400`` items, against a straightforward C
implementation of the same algorithm (same scans, same incremental updates, same tie-breaking)
compiled at run time with ``cc -O3 -shared -fPIC`` (``bench_chain.find_cc``) and called through
ctypes.  Before timing, both orders are checked equal on every matrix of the pool.

Items / second (``M`` times orders per second), best of 3 (``bench_chain.throughput``):

* ``per call``: one Python call per matrix: ``fas_order(D)`` (numba dispatch, its work arrays
  and output allocated per call) against the C function through ctypes with precomputed raw
  pointers (its work arrays ``malloc``-ed per call, output preallocated).
* ``loop``: the same over ``n`` matrices inside compiled code (a numba ``@njit`` loop calling our
  kernel, a C loop calling the C function; one call from Python), the compiled code alone.

``ours / C`` is the throughput ratio (> 1: structpred faster; the target is >= 1/1.5).  The
machine load average is printed: numbers only compare between runs on an idle machine.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_chain  # noqa: E402  (find_cc and the timing helper)

C_FAS = r"""
#include <stdint.h>
#include <stdlib.h>
#include <math.h>

/* Greedy weighted FAS order (Eades, Lin and Smyth 1993) on antisymmetric D (M, M), C order.
   Each step: highest-index sink (no D[u,k] > 0 among the remaining) to the back, else the
   lowest-index source (no D[k,u] > 0) to the front, else the lowest index of largest
   delta(u) = sum_k D[u,k] to the front; delta and the arc counts updated from row w. */
void fas_order(int M, const double *D, int64_t *order)
{
    char *alive = malloc(M);
    double *delta = malloc(sizeof(double) * M);
    int64_t *outc = malloc(sizeof(int64_t) * M), *inc = malloc(sizeof(int64_t) * M);
    for (int u = 0; u < M; u++) {
        double s = 0.0;
        int64_t o = 0, q = 0;
        const double *Du = D + (size_t)u * M;
        for (int k = 0; k < M; k++) {
            if (k != u) {
                double x = Du[k];
                s += x;
                if (x > 0.0) o++;
                else if (x < 0.0) q++;
            }
        }
        delta[u] = s; outc[u] = o; inc[u] = q; alive[u] = 1;
    }
    int lo = 0, hi = M - 1;
    for (int step = 0; step < M; step++) {
        int sink = -1, source = -1, best = -1;
        double bestv = -INFINITY;
        for (int u = 0; u < M; u++) {
            if (alive[u]) {
                if (outc[u] == 0) sink = u;
                else if (inc[u] == 0) { if (source < 0) source = u; }
                else if (delta[u] > bestv) { bestv = delta[u]; best = u; }
            }
        }
        int w;
        if (sink >= 0) { w = sink; order[hi--] = w; }
        else { w = source >= 0 ? source : best; order[lo++] = w; }
        alive[w] = 0;
        const double *row = D + (size_t)w * M;
        for (int u = 0; u < M; u++) {
            if (alive[u]) {
                double x = row[u];
                delta[u] += x;
                if (x < 0.0) outc[u]--;
                else if (x > 0.0) inc[u]--;
            }
        }
    }
    free(alive); free(delta); free(outc); free(inc);
}

/* n orders over a pool of `pool` matrices (call i uses matrix i % pool), one ctypes call. */
double fas_loop(long n, int pool, int M, const double *D, int64_t *order)
{
    double acc = 0.0;
    for (long i = 0; i < n; i++) {
        fas_order(M, D + (size_t)(i % pool) * M * M, order);
        acc += (double)order[0];
    }
    return acc;
}
"""


def build_fas_c(tmpdir):
    """Compile :data:`C_FAS`; returns ``(CDLL, compiler line)`` or ``(None, reason)``."""
    so, line = bench_chain.compile_shared(C_FAS, tmpdir, "fas_ref")
    if so is None:
        return None, line
    vp = ctypes.c_void_p
    so.fas_order.argtypes = [ctypes.c_int, vp, vp]
    so.fas_order.restype = None
    so.fas_loop.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_int, vp, vp]
    so.fas_loop.restype = ctypes.c_double
    return so, line


def random_net_weights(rng, n_pool, M):
    """``n_pool`` antisymmetric ``(M, M)`` matrices ``U - U^T``, ``U`` strictly upper, N(0, 1)."""
    U = np.triu(rng.normal(size=(n_pool, M, M)), 1)
    return np.ascontiguousarray(U - np.transpose(U, (0, 2, 1)))


def make_numba_loop():
    from numba import njit

    from structpred.outputs import _ranking_kernels as K

    @njit(cache=False)
    def fas_loop(n, D):
        acc = 0.0
        for i in range(n):
            acc += K.fas_order(D[i % D.shape[0]])[0]
        return acc

    return fas_loop


def bench_fas(sizes=(50, 400), seconds=0.3, seed=0, pools=None):
    """Items / second of our ``fas_order`` and of the C reference at each ``M`` in ``sizes``;
    prints a table and returns ``{M: {column: items per second}}``."""
    import numba

    from structpred.outputs import _ranking_kernels as K

    pools = pools or {M: (256 if M <= 100 else 16) for M in sizes}
    rng = np.random.default_rng(seed)
    nb_loop = make_numba_loop()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"greedy weighted FAS order (Eades et al. 1993), random antisymmetric N(0, 1) net weights "
          f"(seed {seed}), {seconds:g} s per measurement, best of 3")
    print(f"numba {numba.__version__}, numpy {np.__version__}, {platform.machine()}, "
          f"{os.cpu_count()} cores, load average {load:.2f}")
    results = {}
    with tempfile.TemporaryDirectory() as tmpdir:
        c, info = build_fas_c(tmpdir)
        print(f"C reference: {info}")
        cols = ["per call", "C per call", "ours / C", "loop", "C loop", "ours / C"]
        print()
        print("items / second (ratios: numba / C throughput, > 1 = structpred faster)")
        print(f"{'M':>6}{'pool':>6}" + "".join(f"{h:>14}" for h in cols))
        for M in sizes:
            n_pool = pools[M]
            D = random_net_weights(rng, n_pool, M)
            K.fas_order(D[0])                 # compile / load the cache, not timed
            nb_loop(1, D)
            r = {"per call": M * bench_chain.throughput(
                     lambda n, D=D: [K.fas_order(D[i % n_pool]) for i in range(n)], seconds),
                 "loop": M * bench_chain.throughput(lambda n, D=D: nb_loop(n, D), seconds)}
            if c is not None:
                out = np.empty(M, dtype=np.int64)
                for k in range(n_pool):    # the same order on every matrix
                    c.fas_order(M, D[k].ctypes.data, out.ctypes.data)
                    if not np.array_equal(out, K.fas_order(D[k])):
                        raise SystemExit(f"M={M}: the C reference's order differs from ours on matrix {k}")
                ptrs = [D[k].ctypes.data for k in range(n_pool)]
                po, p0 = out.ctypes.data, D.ctypes.data
                f, floop = c.fas_order, c.fas_loop
                r["C per call"] = M * bench_chain.throughput(
                    lambda n: [f(M, ptrs[i % n_pool], po) for i in range(n)], seconds)
                r["C loop"] = M * bench_chain.throughput(lambda n: floop(n, n_pool, M, p0, po), seconds)
            results[M] = r

            def fmt(x, ratio=False):
                if x is None:
                    return f"{'-':>14}"
                return f"{x:>13.2f}x" if ratio else f"{x:>14,.0f}"

            ratio_call = r["per call"] / r["C per call"] if "C per call" in r else None
            ratio_loop = r["loop"] / r["C loop"] if "C loop" in r else None
            print(f"{M:>6}{n_pool:>6}" + "".join([fmt(r["per call"]), fmt(r.get("C per call")), fmt(ratio_call, True),
                                                  fmt(r["loop"]), fmt(r.get("C loop")), fmt(ratio_loop, True)]),
                  flush=True)
            if c is not None:
                print(f"{'':>12}orders equal to C on all {n_pool} matrices")
    return results


def usps_histograms(cache: str):
    """USPS upper halves (inputs) and lower-half histograms (outputs), as ``qs_usps`` builds them."""
    from structpred.data.acquire import fetch
    from structpred.data.parsers import parse_view
    from structpred.papers.qs.usps import halves

    arrays = parse_view("usps", fetch("usps", Path(cache) / "usps"))
    return halves(arrays["X"])


def _best(fn, repeat=3):
    import time

    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def bench_krr(sizes=(1000, 7000), cache=".cache/bench", n_query=2000, seed=0, sigma=2.7, lam=1e-4):
    """Fit + predict seconds of QS (Hellinger) and of KernelRidge on the same kernel ridge problem;
    returns ``{n: (qs seconds, KernelRidge seconds)}``."""
    from sklearn.kernel_ridge import KernelRidge

    from structpred.estimators import QS
    from structpred.outputs import Hellinger

    upper, lower = usps_histograms(cache)
    rng = np.random.default_rng(seed)
    print(f"QS (Hellinger) vs scikit-learn KernelRidge on USPS: fit + predict {n_query} queries, "
          f"sigma {sigma}, lam {lam}; load average {os.getloadavg()[0]:.1f}")
    print(f"{'n':>6} {'QS s':>9} {'KernelRidge s':>14} {'KRR / QS':>9} {'max |diff| of sum_i alpha_i sqrt(y_i)':>40}")
    results = {}
    for n in sizes:
        idx = rng.permutation(len(upper))
        tr, te = idx[:n], idx[n:n + n_query]
        qs = QS(loss=Hellinger(lower.shape[1]), kernel="gaussian", sigma=sigma, lam=lam)
        t_qs, pred = _best(lambda: qs.fit(upper[tr], lower[tr]).predict(upper[te]))
        krr = KernelRidge(alpha=n * lam, kernel="rbf", gamma=1.0 / (2.0 * sigma ** 2))
        t_krr, stat = _best(lambda: krr.fit(upper[tr], np.sqrt(lower[tr])).predict(upper[te]))
        ours = qs._kernel_columns(upper[te]).T @ qs.dual_coef_
        diff = float(np.abs(ours - stat).max())
        np.testing.assert_allclose(pred, Hellinger(lower.shape[1]).decode_statistic(stat), atol=1e-6)
        print(f"{n:>6} {t_qs:>9.3f} {t_krr:>14.3f} {t_krr / t_qs:>8.2f}x {diff:>40.2e}", flush=True)
        results[n] = (t_qs, t_krr)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="short measurements (0.03 s; QS at n = 1000 only)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[50, 400], help="numbers of items M")
    ap.add_argument("--seconds", type=float, default=None, help="time per measurement (0.3 s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, nargs="+", default=None, help="QS training sizes (1000 7000)")
    ap.add_argument("--cache", default=".cache/bench", help="raw-data cache folder")
    args = ap.parse_args()
    bench_krr(tuple(args.n or ([1000] if args.quick else [1000, 7000])), args.cache, seed=args.seed)
    bench_fas(tuple(args.sizes), args.seconds or (0.03 if args.quick else 0.3), args.seed)


if __name__ == "__main__":
    main()
