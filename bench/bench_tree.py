"""Benchmark: the tree space's sum-product and max-product on SRL-sized trees, against plain C.

Usage: python bench/bench_tree.py [--quick] [--R 9] [--nodes 20 40] [--pool 256] [--seconds 0.3] [--repeat 5] [--seed 0]
                               [--no-game] [--game-pool 16] [--game-scale 3]

A pool of ``--pool`` random trees with ``T`` uniform in ``--nodes`` (20..40: the pruned parse
trees of a CoNLL-2005 proposition, AGM §4.2) over ``R = 9`` labels (the 9 SRL classes); each
tree is a random recursive tree (the parent of node ``t`` uniform among ``0..t-1``), its scores
N(0, 1) (fixed seed).  Throughput in **nodes / second** (trees / second times the pool's mean
``T``), best of ``--repeat`` (5; ``bench_chain.throughput``, calibrated to ``--seconds`` per
measurement: the best run is the least disturbed one on a shared machine; numba compilation /
cache loading is done before any timing).

Rows: ``sum-product`` (unary and pairwise marginals and ``log Z``: one upward and one downward
pass of log-domain messages), ``log Z`` (upward pass only), ``max-product`` (upward max
messages with back-pointers, labels top-down).  Columns:

* ``method``: the public call on a :class:`~structpred.outputs.tree.TreeArray` (``sp.marginals(v)``,
  ``sp.log_partition(v)``, ``sp.decode(v)``): input checks, splitting, allocation and the
  Python overhead included.
* ``kernel``: the numba kernel of ``structpred.outputs._tree_kernels`` (``sum_product`` with
  pairwise marginals, ``log_partition``, ``max_product``) called once per tree from Python on
  preallocated inputs and outputs (numba dispatch included; the kernels allocate their own
  work arrays per call).
* ``C``: the same recursions in plain C (``cc -O3 -shared -fPIC``, baseline ISA, no fast-math;
  ``bench_chain.find_cc``), one ctypes call per tree with precomputed raw pointers; work arrays
  on the stack (VLAs).  The C log-sum-exp evaluates every term; ours skips terms more than
  ``_CUT = 40`` nats below the maximum, which on N(0, 1) scores is (almost) none.
* ``loop numba`` / ``loop C``: the same over ``n`` trees inside compiled code (a numba loop
  calling our kernels on slices of the packed pool, a C loop calling the C functions).

``kern/C`` and ``loop/C`` are throughput ratios ours / C (> 1: structpred faster; the target is
>= 0.67).  Before timing, C's marginals, ``log Z`` and max-product labellings are checked
against ours on every tree of the pool.  The machine load average is printed: the numbers only
compare between runs on an otherwise idle machine.

Second table (skipped with ``--no-game``): AGM's max-min game, **exact game vs SP-MP, time to a
certified gap**, milliseconds per tree (cold starts, public calls ``sp.max_min_exact(v, tol=gap)``
and ``sp.max_min(v, n_iter=K)``, best of ``--repeat`` passes over the pool).  Pools of
``--game-pool`` (16) inputs: chains of 20..40 nodes over R = 3 labels (the emotion sizes, every
node loss, position weights) and random recursive trees of 30 nodes over R = 9 labels (SRL's
ordinal classes: the absolute loss); scores N(0, (c / T)^2) with ``c = --game-scale`` (3: the
per-node score size of an AGM trained on emotion-like data).  A target ``gap`` is reached when
*every* input's gap ``upper - value`` is at most ``gap``: the exact game stops there by itself;
SP-MP takes the first of ``K = 1, 2, 5, ..., 200`` iterations per node that reaches it (``>``:
not within 200; the passes of a cell stop repeating once they took 2 s).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import sys
import tempfile
from itertools import cycle, islice
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_chain  # noqa: E402  (find_cc and the timing helper)

C_SOURCE = r"""
#include <math.h>
#include <stdint.h>
#include <string.h>

/* A tree of T nodes: par (T) with par[0] = -1 and par[t] < t; U (T, R); P (T-1, R, R), the edge
   of child t at P[t-1], indexed [parent label][child label].  Work arrays are VLAs. */

static double lse(const double *x, int n)
{
    double m = x[0];
    for (int j = 1; j < n; j++)
        if (x[j] > m) m = x[j];
    if (m == -INFINITY) return m;
    double s = 0.0;
    for (int j = 0; j < n; j++) s += exp(x[j] - m);
    return m + log(s);
}

double max_product(int T, int R, const int64_t *par, const double *U, const double *P, int64_t *out)
{
    double up[T * R];
    int64_t back[T * R];
    memcpy(up, U, sizeof(double) * T * R);
    for (int t = T - 1; t > 0; t--) {
        const double *Pt = P + (size_t)(t - 1) * R * R;
        const double *ut = up + t * R;
        double *pp = up + par[t] * R;
        for (int a = 0; a < R; a++) {
            double best = ut[0] + Pt[a * R];
            int arg = 0;
            for (int b = 1; b < R; b++) {
                double s = ut[b] + Pt[a * R + b];
                if (s > best) { best = s; arg = b; }
            }
            pp[a] += best;
            back[t * R + a] = arg;
        }
    }
    int arg = 0;
    for (int a = 1; a < R; a++)
        if (up[a] > up[arg]) arg = a;
    out[0] = arg;
    for (int t = 1; t < T; t++) out[t] = back[t * R + out[par[t]]];
    return up[arg];
}

static double upward(int T, int R, const int64_t *par, const double *U, const double *P, double *in, double *mup)
{
    double tmp[R];
    memcpy(in, U, sizeof(double) * T * R);
    for (int t = T - 1; t > 0; t--) {
        const double *Pt = P + (size_t)(t - 1) * R * R;
        for (int a = 0; a < R; a++) {
            for (int b = 0; b < R; b++) tmp[b] = Pt[a * R + b] + in[t * R + b];
            double m = lse(tmp, R);
            mup[t * R + a] = m;
            in[par[t] * R + a] += m;
        }
    }
    return lse(in, R);
}

double log_partition(int T, int R, const int64_t *par, const double *U, const double *P)
{
    double in[T * R], mup[T * R];
    return upward(T, R, par, U, P, in, mup);
}

double sum_product(int T, int R, const int64_t *par, const double *U, const double *P, double *node, double *edge)
{
    double in[T * R], mup[T * R], down[T * R], x[R], tmp[R];
    double logz = upward(T, R, par, U, P, in, mup);
    for (int j = 0; j < R; j++) {
        down[j] = 0.0;
        node[j] = exp(in[j] - logz);
    }
    for (int t = 1; t < T; t++) {
        const double *Pt = P + (size_t)(t - 1) * R * R;
        double *Et = edge + (size_t)(t - 1) * R * R;
        int p = (int)par[t];
        for (int a = 0; a < R; a++) x[a] = in[p * R + a] + down[p * R + a] - mup[t * R + a];
        for (int b = 0; b < R; b++) {
            for (int a = 0; a < R; a++) tmp[a] = x[a] + Pt[a * R + b];
            down[t * R + b] = lse(tmp, R);
            node[t * R + b] = exp(in[t * R + b] + down[t * R + b] - logz);
        }
        for (int a = 0; a < R; a++) {
            double base = x[a] - logz;
            for (int b = 0; b < R; b++) Et[a * R + b] = exp(base + Pt[a * R + b] + in[t * R + b]);
        }
    }
    return logz;
}

/* n calls cycling through a packed pool: tree j has nodes off[j]..off[j+1]-1 of par / U and
   edges off[j]-j.. of P. */
#define POOL_LOOP(CALL)                                                       \
    double acc = 0.0;                                                         \
    for (long i = 0; i < n; i++) {                                            \
        int j = (int)(i % n_pool);                                            \
        int64_t o = off[j];                                                   \
        int T = (int)(off[j + 1] - o);                                        \
        const int64_t *par = par_all + o;                                     \
        const double *U = U_all + (size_t)o * R;                              \
        const double *P = P_all + (size_t)(o - j) * R * R;                    \
        acc += CALL;                                                          \
    }                                                                         \
    return acc;

double max_product_loop(long n, int n_pool, int R, const int64_t *off, const int64_t *par_all,
                        const double *U_all, const double *P_all, int64_t *out)
{ POOL_LOOP(max_product(T, R, par, U, P, out)) }

double log_partition_loop(long n, int n_pool, int R, const int64_t *off, const int64_t *par_all,
                          const double *U_all, const double *P_all)
{ POOL_LOOP(log_partition(T, R, par, U, P)) }

double sum_product_loop(long n, int n_pool, int R, const int64_t *off, const int64_t *par_all,
                        const double *U_all, const double *P_all, double *node, double *edge)
{ POOL_LOOP(sum_product(T, R, par, U, P, node, edge)) }
"""


def build_c(tmpdir):
    """Compile :data:`C_SOURCE`; returns ``(CDLL with typed entry points, compiler line)`` or
    ``(None, reason)``."""
    so, line = bench_chain.compile_shared(C_SOURCE, tmpdir, "tree_ref")
    if so is None:
        return None, line
    i, lng, vp = ctypes.c_int, ctypes.c_long, ctypes.c_void_p
    for name, args in (("max_product", [i, i, vp, vp, vp, vp]), ("log_partition", [i, i, vp, vp, vp]),
                       ("sum_product", [i, i, vp, vp, vp, vp, vp]),
                       ("max_product_loop", [lng, i, i, vp, vp, vp, vp, vp]),
                       ("log_partition_loop", [lng, i, i, vp, vp, vp, vp]),
                       ("sum_product_loop", [lng, i, i, vp, vp, vp, vp, vp, vp])):
        f = getattr(so, name)      # cached on the CDLL (so[name] would be a fresh, untyped object)
        f.argtypes = args
        f.restype = ctypes.c_double
    return so, line


def random_pool(rng, n_pool, R, lo, hi):
    """Packed pool of random recursive trees: ``(off, parents, U, P)`` with tree ``j`` at nodes
    ``off[j]:off[j+1]`` and edges ``off[j]-j:off[j+1]-j-1``."""
    sizes = rng.integers(lo, hi + 1, size=n_pool)
    off = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    parents = np.concatenate([[-1] + [int(rng.integers(0, t)) for t in range(1, T)] for T in sizes]).astype(np.int64)
    U = rng.normal(size=(off[-1], R))
    P = rng.normal(size=(off[-1] - n_pool, R, R))
    return off, parents, U, P


def make_numba_loops():
    from numba import njit

    from structpred.outputs import _tree_kernels as TK

    @njit(cache=False)
    def sum_product_loop(n, off, par, U, P, node, edge):
        acc = 0.0
        n_pool = off.shape[0] - 1
        for i in range(n):
            j = i % n_pool
            a, b = off[j], off[j + 1]
            acc += TK.sum_product(par[a:b], U[a:b], P[a - j: b - j - 1], node[: b - a], edge[: b - a - 1], True)
        return acc

    @njit(cache=False)
    def log_partition_loop(n, off, par, U, P):
        acc = 0.0
        n_pool = off.shape[0] - 1
        for i in range(n):
            j = i % n_pool
            a, b = off[j], off[j + 1]
            acc += TK.log_partition(par[a:b], U[a:b], P[a - j: b - j - 1])
        return acc

    @njit(cache=False)
    def max_product_loop(n, off, par, U, P, out):
        acc = 0.0
        n_pool = off.shape[0] - 1
        for i in range(n):
            j = i % n_pool
            a, b = off[j], off[j + 1]
            acc += TK.max_product(par[a:b], U[a:b], P[a - j: b - j - 1], out[: b - a])
        return acc

    return sum_product_loop, log_partition_loop, max_product_loop


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="short measurements (0.03 s), pool of 64")
    ap.add_argument("--R", type=int, default=9, help="number of labels")
    ap.add_argument("--nodes", type=int, nargs=2, default=(20, 40), help="tree sizes (uniform, inclusive)")
    ap.add_argument("--pool", type=int, default=None, help="distinct trees cycled through (256)")
    ap.add_argument("--seconds", type=float, default=None, help="time per measurement (0.3 s)")
    ap.add_argument("--repeat", type=int, default=5, help="measurements per cell, the best is kept (5)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-game", action="store_true", help="skip the exact game vs SP-MP table")
    ap.add_argument("--game-pool", type=int, default=None, help="inputs per game row (16; 4 with --quick)")
    ap.add_argument("--game-scale", type=float, default=3.0, help="scores N(0, (c / T)^2) of the game rows")
    args = ap.parse_args()
    seconds = args.seconds or (0.03 if args.quick else 0.3)
    n_pool = args.pool or (64 if args.quick else 256)

    import numba

    from structpred.outputs import Tree, TreeArray
    from structpred.outputs import _tree_kernels as TK

    R, (lo, hi) = args.R, args.nodes
    rng = np.random.default_rng(args.seed)
    off, par, U, P = random_pool(rng, n_pool, R, lo, hi)
    trees = [(par[a:b], U[a:b], P[a - j: b - j - 1]) for j, (a, b) in enumerate(zip(off[:-1], off[1:]))]
    mean_T = float(np.mean(np.diff(off)))
    sp = Tree(R)
    vs = [TreeArray(np.r_[u.ravel(), p.ravel()], pa) for pa, u, p in trees]
    node, edge = np.empty((hi, R)), np.empty((hi - 1, R, R))
    out = np.empty(hi, dtype=np.int64)

    # compile / load the caches (not timed)
    sp.marginals(vs[0])
    sp.log_partition(vs[0])
    sp.decode(vs[0])
    nb_sum_product, nb_log_partition, nb_max_product = make_numba_loops()
    nb_sum_product(1, off, par, U, P, node, edge)
    nb_log_partition(1, off, par, U, P)
    nb_max_product(1, off, par, U, P, out)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"Tree R={R}: {n_pool} random recursive trees of {lo}..{hi} nodes (mean {mean_T:.1f}), N(0, 1) scores "
          f"(seed {args.seed}), {seconds:g} s per measurement, best of {args.repeat}")
    print(f"numba {numba.__version__}, numpy {np.__version__}, {platform.machine()}, "
          f"{os.cpu_count()} cores, load average {load:.2f}")

    with tempfile.TemporaryDirectory() as tmpdir:
        c, info = build_c(tmpdir)
        print(f"C reference: {info}")
        if c is not None:       # the same answers on every tree before timing
            dmarg = dlogz = 0.0
            paths = True
            yc = np.empty(hi, dtype=np.int64)
            nc, ec = np.empty((hi, R)), np.empty((hi - 1, R, R))
            for (pa, u, p), v in zip(trees, vs):
                T = pa.shape[0]
                ptr = (pa.ctypes.data, u.ctypes.data, p.ctypes.data)
                lz_c = c.sum_product(T, R, *ptr, nc.ctypes.data, ec.ctypes.data)
                m = sp.marginals(v)
                dmarg = max(dmarg, np.max(np.abs(m[: T * R] - nc[:T].ravel())),
                            np.max(np.abs(m[T * R:] - ec[: T - 1].ravel())))
                lz = sp.log_partition(v)
                dlogz = max(dlogz, abs(lz - lz_c), abs(lz - c.log_partition(T, R, *ptr)))
                c.max_product(T, R, *ptr, yc.ctypes.data)
                paths &= bool(np.array_equal(yc[:T], sp.decode(v)))
            ok = paths and dmarg <= 1e-10 and dlogz <= 1e-10
            print(f"check vs C on {n_pool} trees: max-product labellings {'equal' if paths else 'DIFFER'}, "
                  f"max |marginal diff| {dmarg:.1e}, max |log Z diff| {dlogz:.1e} -> {'OK' if ok else 'MISMATCH'}")
            if not ok:
                raise SystemExit("the C reference disagrees with structpred: not timing it")

        def per_call(fn, items):
            def run(n):
                for it in islice(cycle(items), n):
                    fn(*it)
            return run

        rows = {
            "sum-product": {"method": per_call(sp.marginals, [(v,) for v in vs]),
                            "kernel": per_call(lambda pa, u, p: TK.sum_product(pa, u, p, node, edge, True), trees),
                            "loop numba": lambda n: nb_sum_product(n, off, par, U, P, node, edge)},
            "log Z": {"method": per_call(sp.log_partition, [(v,) for v in vs]),
                      "kernel": per_call(TK.log_partition, trees),
                      "loop numba": lambda n: nb_log_partition(n, off, par, U, P)},
            "max-product": {"method": per_call(sp.decode, [(v,) for v in vs]),
                            "kernel": per_call(lambda pa, u, p: TK.max_product(pa, u, p, out), trees),
                            "loop numba": lambda n: nb_max_product(n, off, par, U, P, out)},
        }
        if c is not None:
            ptrs = [(pa.shape[0], pa.ctypes.data, u.ctypes.data, p.ctypes.data) for pa, u, p in trees]
            pn, pe, po = node.ctypes.data, edge.ctypes.data, out.ctypes.data
            pool = (n_pool, R, off.ctypes.data, par.ctypes.data, U.ctypes.data, P.ctypes.data)
            f_sp, f_lz, f_mp = c.sum_product, c.log_partition, c.max_product
            rows["sum-product"]["C"] = per_call(lambda T, a, b, d: f_sp(T, R, a, b, d, pn, pe), ptrs)
            rows["log Z"]["C"] = per_call(lambda T, a, b, d: f_lz(T, R, a, b, d), ptrs)
            rows["max-product"]["C"] = per_call(lambda T, a, b, d: f_mp(T, R, a, b, d, po), ptrs)
            rows["sum-product"]["loop C"] = lambda n: c.sum_product_loop(n, *pool, pn, pe)
            rows["log Z"]["loop C"] = lambda n: c.log_partition_loop(n, *pool)
            rows["max-product"]["loop C"] = lambda n: c.max_product_loop(n, *pool, po)

        cols = ["method", "kernel", "C", "kern/C", "loop numba", "loop C", "loop/C"]
        print()
        print("nodes / second (ratios: ours / C throughput, > 1 = structpred faster)")
        print(f"{'oracle':<14}" + "".join(f"{h:>13}" for h in cols))

        def fmt(x, ratio=False):
            if x is None:
                return f"{'-':>13}"
            return f"{x:>12.2f}x" if ratio else f"{x:>13,.0f}"

        for name, runs in rows.items():
            r = {k: mean_T * bench_chain.throughput(f, seconds, args.repeat) for k, f in runs.items()}
            kc = r["kernel"] / r["C"] if "C" in r else None
            lc = r["loop numba"] / r["loop C"] if "loop C" in r else None
            vals = [fmt(r["method"]), fmt(r["kernel"]), fmt(r.get("C")), fmt(kc, True),
                    fmt(r["loop numba"]), fmt(r.get("loop C")), fmt(lc, True)]
            print(f"{name:<14}" + "".join(vals), flush=True)
    if not args.no_game:
        game_table(args)


#: target certified gaps of the game table, and SP-MP's iterations per node tried for each
GAPS = (1e-2, 1e-4, 1e-6)
SPMP_LADDER = (1, 2, 5, 10, 20, 50, 100, 200)


def game_table(args):
    """Exact game vs SP-MP: milliseconds per input to a certified gap (see the module docstring)."""
    import time

    from structpred.outputs import Chain, Tree, TreeArray

    n_pool = args.game_pool or (4 if args.quick else 16)
    rng = np.random.default_rng(args.seed)
    cases = [(f"chain R=3 {loss}", Chain(3, loss, weights="position"), 3, (20, 40), False)
             for loss in ("zero_one", "absolute", "squared")]
    cases.append(("tree R=9 absolute", Tree(9, "absolute", weights="position"), 9, (30, 30), True))

    def best_ms(fn, vs):
        """Best of ``--repeat`` passes over the pool (fewer once 2 s are spent): ms per input, and
        the results of the last pass."""
        times = []
        while len(times) < args.repeat and sum(times) < 2.0:
            t0 = time.perf_counter()
            out = [fn(v) for v in vs]
            times.append(time.perf_counter() - t0)
        return 1e3 * min(times) / len(vs), out

    print()
    print(f"AGM's game, exact (BFGS on the Lagrangian dual) vs SP-MP: ms per input to a certified gap, "
          f"{n_pool} inputs per row, scores N(0, ({args.game_scale:g} / T)^2), cold starts, best of {args.repeat}")
    print(f"{'input':<22}{'gap':>8}{'exact ms':>11}{'exact gap':>11}{'SP-MP K':>9}{'SP-MP ms':>11}"
          f"{'SP-MP gap':>11}{'SP-MP/exact':>13}")
    for name, sp, R, (lo, hi), tree in cases:
        vs = []
        for _ in range(n_pool):
            T = int(rng.integers(lo, hi + 1))
            parents = [-1] + [int(rng.integers(0, t)) for t in range(1, T)] if tree else np.arange(-1, T - 1)
            vs.append(TreeArray(rng.normal(size=sp.dim(T)) * args.game_scale / T, parents))
        if not tree:
            vs = [np.asarray(v) for v in vs]
        sp.max_min_exact(vs[0])                       # compile / load the caches (not timed)
        sp.max_min(vs[0], n_iter=1)
        ladder = []                                   # (K, ms per input, max gap) of SP-MP
        for K in SPMP_LADDER:
            ms, res = best_ms(lambda v: sp.max_min(v, n_iter=K), vs)
            ladder.append((K, ms, max(r.gap for r in res)))
            if ladder[-1][2] <= min(GAPS):
                break
        for gap in GAPS:
            ms, res = best_ms(lambda v: sp.max_min_exact(v, tol=gap), vs)
            g_exact = max(r.gap for r in res)
            hit = next((row for row in ladder if row[2] <= gap), None)
            if hit is None:
                K, ms_s, g_s = ladder[-1]
                spmp = f"{'>' + str(K):>9}{'>' + f'{ms_s:.2f}':>11}{g_s:>11.1e}{'>' + f'{ms_s / ms:.1f}':>13}"
            else:
                K, ms_s, g_s = hit
                spmp = f"{K:>9}{ms_s:>11.2f}{g_s:>11.1e}{ms_s / ms:>13.1f}"
            print(f"{name:<22}{gap:>8.0e}{ms:>11.2f}{g_exact:>11.1e}" + spmp, flush=True)


if __name__ == "__main__":
    main()
