"""Benchmark: the chain space's oracles on OCR-sized chains, against a plain C reference.

Usage: python bench/bench_chain.py [--quick] [--R 26] [--T 8] [--pool 256] [--seed 0]

Throughput (sequences / second) of every oracle of :class:`structpred.outputs.chain.Chain`
at ``R = 26`` labels and length ``T = 8`` (OCR, M4N Table 1), on a pool of ``--pool``
score vectors with N(0, 1) entries (fixed seed), cycled through.  Each measurement runs
enough calls to take ``--seconds`` (0.3 s; 0.03 s with ``--quick``) and reports the best
of 3 repetitions (``time.perf_counter``).  Numba compilation / cache loading is done
before any timing.

Columns:

* ``method``: the public Python method, one call per sequence (``sp.decode(v)``,
  ``sp.loss_augmented(v, y)``, ``sp.marginals(v)``, ``sp.log_partition(v)``,
  ``sp.top_k(v, None, 5)``, ``sp.bayes_decode(mu)``, ``sp.max_min(v, n_iter=10)``, the last
  being 10 SP-MP iterations per node = 80 iterations, as M4N on OCR, including the exact
  duality gap), i.e. including input checks, splitting, allocations and Python overhead.
* ``kernel``: the raw numba kernel of ``structpred.outputs._chain_kernels``
  (``viterbi``, ``sum_product`` with pairwise marginals, ``log_partition``,
  ``top_k_viterbi``, ``spmp``) called from Python once per sequence on preallocated
  inputs and outputs (the numba dispatch overhead is included; the kernels' own
  internal work arrays are still allocated per call).  ``spmp`` is cold-started: its
  state arrays are reset in the loop (three small array fills, negligible next to 80
  iterations).  ``loss_augmented`` runs ``viterbi`` (same cost as the ``decode`` row)
  and ``bayes_decode`` is numpy only, so those rows have no kernel column.
* ``C``: a plain C reference compiled at run time with ``cc -O3 -shared -fPIC``
  (baseline target: no ``-march=native``, no ``-ffast-math``) and called through ctypes
  once per sequence with precomputed raw pointers: Viterbi (same recursion and the same
  tie-breaking as ours), list Viterbi for the top K (the same merge of sorted lists), log-domain forward-backward with a *full* log-sum-exp (max,
  then ``exp`` of every term) giving unary and pairwise marginals, a forward-only
  ``log Z``, and SP-MP (M4N Algorithm 2): the same mirror-prox iteration as our ``spmp``
  kernel (half step, full step, averages of the half-step iterates, the same O(R) zero-one
  loss products), each projection a plain log-domain forward-backward on the natural
  parameters ``(thU, thP + k eta P)``, where ours keeps scaled pairwise potentials and
  multiplies them by ``exp(eta P)`` once per iteration instead of an ``exp`` per entry.
  The C work arrays live on the stack (VLAs).
* ``loop numba`` / ``loop C``: the same kernels run over ``n`` sequences inside compiled
  code (a numba ``@njit`` loop in this script calling our kernels, and a C loop calling
  the C functions; one call from Python), which removes the per-call dispatch cost and
  compares the compiled code alone.

``max_min warm`` times the same 80 SP-MP iterations from the state each chain has after 6 such
calls on its scores (copied in before every call, on both sides), the regime of training: GBCFW
warm-starts each example's oracle, and the pairwise natural parameters grow by ``iters * eta * P``
per call, so they span thousands of nats and most of our forward / backward entries take the
exact pruned log-sum-exp (the C reference's cost does not depend on the state).

``kern/C`` and ``loop n/C`` are throughput ratios numba / C (> 1: we are faster).

``max_min IEEE`` and ``max_min all FTZ`` time the same cold and warm calls with the subnormal
handling changed (``structpred.outputs._subnormals``): ``IEEE`` with ``flush=False`` (the
projections' scaled sums keep IEEE subnormals: every underflowing product costs the core what
its hardware charges, a microcode assist on Intel cores), ``all FTZ`` with the whole call under
``FTZ`` and ``DAZ`` (a diagnostic only: its pairwise averages differ from ``spmp``'s in entries
below 1e-48).  The line after the table gives their time over ``spmp``'s.

The last lines set the cold SP-MP call (``loop numba``) beside its arithmetic bounds
(``bench/_bound.py``): the operations one iteration counts on the scaled path (``spmp_counts``:
``7 (T-1) R^2`` multiply-adds, ``4 (T-1) R + 4 T R`` exps, ``4 (T-1) R + 2 T`` logs) times this
core's measured cost of each: the *scalar* bound (multiply-adds one per instruction, exps and logs
in loops of their own that vectorise, as the kernel takes them; issue 40's goal is at most 2x it),
the *vectorised* bound (which only a kernel whose every loop vectorises approaches), and in
parentheses the looser bound with scalar exps and logs too (``_bound.bound_costs``).

The header names the CPU, the instruction set numba compiles for (``structpred._numba_target``:
the host's features, plus ``-prefer-256-bit`` on AVX-512 hosts) and the vector registers the
measuring loops of ``fexp`` and ``flog`` get, read from their assembly (``zmm``: 8 doubles a
vector; ``ymm``: 4, LLVM's choice for Intel's AVX-512 cores without that flag).

The last table times the batched kernels (``outputs/_chain_batch.py``: the pool's words across
the SIMD lanes, 32 a block, one call for the whole pool; the path of ``marginals``,
``log_partition`` and ``top_k`` of a ragged batch) against the single-word kernels in a compiled
loop and the C reference's loop, each timing alternated with the others so that their ratios see the same
load; the batched results are first checked to be bitwise those of the single-word kernels.

What differs between the two sides, besides the compilers (numba's LLVM targets the
host CPU, the C build the baseline x86-64 ISA):

* our log-sum-exp skips ``exp`` for terms more than ``_CUT = 40`` nats below the
  maximum, and our marginals set ``exp(z)`` to 0 for ``z < -40``; the C reference
  evaluates every term.  The script prints the fraction of log-sum-exp terms that fall
  below the cut on the benchmark scores: with N(0, 1) scores it is (almost) zero, so
  here both sides evaluate (almost) the same number of ``exp``; the cut only pays off on
  peaked (e.g. trained, large-norm) scores, which this benchmark does not measure.
* both ``log_partition`` implementations run the forward recursion only.
* our kernels allocate their work arrays (numpy) on every call, C uses the stack.

Before timing, the C results are checked against ours on every sequence of the pool:
the same Viterbi path and score, the same top-K lists, unary and pairwise marginals and
``log Z`` within 1e-10, SP-MP's final state and averages within 1e-9 after the same
cold-started iterations.  ``--R 8 --T 15`` is a CoNLL-2003 NER sentence (Casimir).  Without a C compiler (``$CC``, ``cc``, ``gcc`` or ``clang`` on the PATH) the C
columns are skipped with a message.  The machine load average is printed: the numbers
are only comparable between runs on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import shutil
import subprocess
import tempfile
import time
from itertools import cycle, islice
from pathlib import Path

import numpy as np

C_SOURCE = r"""
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Plain reference implementations.  U is (T, R), P is (T-1, R, R), both C order;
   P[t, a, b] scores y_t = a, y_{t+1} = b.  Work arrays are VLAs (small T, R only). */

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

double viterbi(int T, int R, const double *U, const double *P, int64_t *out)
{
    int64_t back[T][R];
    double delta[R], nw[R];
    for (int b = 0; b < R; b++) delta[b] = U[b];
    for (int t = 1; t < T; t++) {
        const double *Pt = P + (size_t)(t - 1) * R * R;
        for (int b = 0; b < R; b++) {
            double best = delta[0] + Pt[b];
            int arg = 0;
            for (int a = 1; a < R; a++) {
                double s = delta[a] + Pt[a * R + b];
                if (s > best) { best = s; arg = a; }
            }
            nw[b] = best + U[t * R + b];
            back[t][b] = arg;
        }
        memcpy(delta, nw, sizeof(double) * R);
    }
    int arg = 0;
    for (int b = 1; b < R; b++)
        if (delta[b] > delta[arg]) arg = b;
    out[T - 1] = arg;
    for (int t = T - 1; t > 0; t--) out[t - 1] = back[t][out[t]];
    return delta[arg];
}

static double forward(int T, int R, const double *U, const double *P, double *alpha)
{
    double tmp[R];
    for (int b = 0; b < R; b++) alpha[b] = U[b];
    for (int t = 1; t < T; t++) {
        const double *Pt = P + (size_t)(t - 1) * R * R;
        for (int b = 0; b < R; b++) {
            for (int a = 0; a < R; a++) tmp[a] = alpha[(t - 1) * R + a] + Pt[a * R + b];
            alpha[t * R + b] = lse(tmp, R) + U[t * R + b];
        }
    }
    return lse(alpha + (T - 1) * R, R);
}

double log_partition(int T, int R, const double *U, const double *P)
{
    double alpha[T * R];
    return forward(T, R, U, P, alpha);
}

/* Unary marginals into node and pairwise ones into edge (added to it if accumulate; none if
   edge is NULL); returns log Z. */
static double marginals(int T, int R, const double *U, const double *P, double *node, double *edge, int accumulate)
{
    double alpha[T * R], beta[T * R], tmp[R];
    double logz = forward(T, R, U, P, alpha);
    for (int b = 0; b < R; b++) beta[(T - 1) * R + b] = 0.0;
    for (int t = T - 2; t >= 0; t--) {
        const double *Pt = P + (size_t)t * R * R;
        for (int a = 0; a < R; a++) {
            for (int b = 0; b < R; b++) tmp[b] = Pt[a * R + b] + U[(t + 1) * R + b] + beta[(t + 1) * R + b];
            beta[t * R + a] = lse(tmp, R);
        }
    }
    for (int i = 0; i < T * R; i++) node[i] = exp(alpha[i] + beta[i] - logz);
    if (!edge) return logz;
    for (int t = 0; t < T - 1; t++) {
        const double *Pt = P + (size_t)t * R * R;
        double *Et = edge + (size_t)t * R * R;
        for (int a = 0; a < R; a++) {
            double base = alpha[t * R + a] - logz;
            for (int b = 0; b < R; b++) {
                double e = exp(base + Pt[a * R + b] + U[(t + 1) * R + b] + beta[(t + 1) * R + b]);
                Et[a * R + b] = accumulate ? Et[a * R + b] + e : e;
            }
        }
    }
    return logz;
}

double sum_product(int T, int R, const double *U, const double *P, double *node, double *edge)
{
    return marginals(T, R, U, P, node, edge, 0);
}

/* The K best sequences (list Viterbi): each (t, b) keeps its K best prefixes, merged from the
   predecessors' sorted lists (ties to the smaller predecessor, then the better rank, as ours).
   Fills Y (K, T) and S (K); returns how many exist. */
double top_k(int T, int R, int K, const double *U, const double *P, int64_t *Y, double *S)
{
    double sc[T][R][K];
    int bl[T][R][K], br[T][R][K], head[R];
    for (int b = 0; b < R; b++) {
        for (int k = 0; k < K; k++) sc[0][b][k] = -INFINITY;
        sc[0][b][0] = U[b];
    }
    for (int t = 1; t < T; t++) {
        const double *Pt = P + (size_t)(t - 1) * R * R;
        for (int b = 0; b < R; b++) {
            for (int a = 0; a < R; a++) head[a] = 0;
            for (int k = 0; k < K; k++) {
                int best = -1;
                double val = -INFINITY;
                for (int a = 0; a < R; a++) {
                    if (head[a] < K) {
                        double c = sc[t - 1][a][head[a]] + Pt[a * R + b];
                        if (best < 0 || c > val) { best = a; val = c; }
                    }
                }
                sc[t][b][k] = val + U[t * R + b];
                bl[t][b][k] = best;
                br[t][b][k] = head[best]++;
            }
        }
    }
    for (int a = 0; a < R; a++) head[a] = 0;
    int found = 0;
    for (int k = 0; k < K; k++) {
        int best = -1;
        double val = -INFINITY;
        for (int a = 0; a < R; a++)
            if (head[a] < K && (best < 0 || sc[T - 1][a][head[a]] > val)) { best = a; val = sc[T - 1][a][head[a]]; }
        if (val == -INFINITY) break;
        int b = best, r = head[best]++;
        S[k] = val;
        for (int t = T - 1; t >= 0; t--) {
            Y[k * T + t] = b;
            if (t > 0) { int nb = bl[t][b][r]; r = br[t][b][r]; b = nb; }
        }
        found++;
    }
    return found;
}

double top_k_loop(long n, int pool, int T, int R, int K, const double *U, const double *P,
                  int64_t *Y, double *S)
{
    double acc = 0.0;
    for (long i = 0; i < n; i++) {
        long j = i % pool;
        acc += top_k(T, R, K, U + j * T * R, P + j * (T - 1) * R * R, Y, S);
    }
    return acc;
}

/* n calls over a pool of `pool` chains (call i uses chain i % pool), one ctypes call. */
double viterbi_loop(long n, int pool, int T, int R, const double *U, const double *P, int64_t *out)
{
    double acc = 0.0;
    for (long i = 0; i < n; i++) {
        long j = i % pool;
        acc += viterbi(T, R, U + j * T * R, P + j * (T - 1) * R * R, out);
    }
    return acc;
}

double sum_product_loop(long n, int pool, int T, int R, const double *U, const double *P,
                        double *node, double *edge)
{
    double acc = 0.0;
    for (long i = 0; i < n; i++) {
        long j = i % pool;
        acc += sum_product(T, R, U + j * T * R, P + j * (T - 1) * R * R, node, edge);
    }
    return acc;
}

/* SP-MP (M4N Algorithm 2) with the same iteration as structpred's kernel, written plainly:
   every projection is a log-domain forward-backward with full log-sum-exps on the natural
   parameters (thU, thP + k eta P); Lw (T, R, R) is the weighted node loss (row = the min
   player's label), kind 1 = c_t (11^T - I) done in O(R) as ours.  State thU, thP, lnu in/out
   (warm start); averages of the half-step iterates into mu_node, mu_edge, nu_bar. */
static void loss_times(int T, int R, const double *Lw, int kind, const double *x, double *out, int transpose)
{
    for (int t = 0; t < T; t++) {
        const double *L = Lw + (size_t)t * R * R;
        if (kind == 1) {
            double c = L[1], s = 0.0;
            for (int j = 0; j < R; j++) s += x[t * R + j];
            for (int i = 0; i < R; i++) out[t * R + i] = c * (s - x[t * R + i]);
            continue;
        }
        for (int i = 0; i < R; i++) {
            double s = 0.0;
            for (int j = 0; j < R; j++) s += (transpose ? L[j * R + i] : L[i * R + j]) * x[t * R + j];
            out[t * R + i] = s;
        }
    }
}

static void log_softmax(int T, int R, double *z, double *out)
{
    for (int t = 0; t < T; t++) {
        double m = z[t * R];
        for (int j = 1; j < R; j++) if (z[t * R + j] > m) m = z[t * R + j];
        double s = 0.0;
        for (int j = 0; j < R; j++) s += exp(z[t * R + j] - m);
        double shift = m + log(s);
        for (int j = 0; j < R; j++) { z[t * R + j] -= shift; out[t * R + j] = exp(z[t * R + j]); }
    }
}

double spmp(int T, int R, const double *U, const double *P, const double *Lw, int kind, double eta, int n_iter,
            double *thU, double *thP, double *lnu, double *mu_node, double *mu_edge, double *nu_bar)
{
    int nu_ = T * R, ne = (T - 1) * R * R;
    double Pk[ne > 0 ? ne : 1], cur[nu_], nu[nu_], hU[nu_], hnode[nu_], hnu[nu_], hlnu[nu_], g[nu_];
    for (int i = 0; i < nu_; i++) { mu_node[i] = 0.0; nu_bar[i] = 0.0; }
    for (int i = 0; i < ne; i++) mu_edge[i] = 0.0;
    marginals(T, R, thU, thP, cur, 0, 0);
    log_softmax(T, R, lnu, nu);
    for (int k = 1; k <= n_iter; k++) {
        for (int i = 0; i < ne; i++) Pk[i] = thP[i] + k * eta * P[i];
        loss_times(T, R, Lw, kind, nu, g, 1);                      /* half step */
        for (int i = 0; i < nu_; i++) hU[i] = thU[i] + eta * (U[i] + g[i]);
        marginals(T, R, hU, Pk, hnode, mu_edge, 1);
        loss_times(T, R, Lw, kind, cur, g, 0);
        for (int i = 0; i < nu_; i++) hlnu[i] = lnu[i] - eta * g[i];
        log_softmax(T, R, hlnu, hnu);
        loss_times(T, R, Lw, kind, hnu, g, 1);                     /* full step */
        for (int i = 0; i < nu_; i++) thU[i] += eta * (U[i] + g[i]);
        loss_times(T, R, Lw, kind, hnode, g, 0);
        for (int i = 0; i < nu_; i++) lnu[i] -= eta * g[i];
        log_softmax(T, R, lnu, nu);
        marginals(T, R, thU, Pk, cur, 0, 0);
        for (int i = 0; i < nu_; i++) { mu_node[i] += hnode[i]; nu_bar[i] += hnu[i]; }
    }
    for (int i = 0; i < ne; i++) thP[i] += n_iter * eta * P[i];
    if (n_iter > 0) {
        double inv = 1.0 / n_iter;
        for (int i = 0; i < nu_; i++) { mu_node[i] *= inv; nu_bar[i] *= inv; }
        for (int i = 0; i < ne; i++) mu_edge[i] *= inv;
    }
    return mu_node[0];
}

/* n cold-started SP-MP calls over the pool (state reset as the numba loop does). */
double spmp_loop(long n, int pool, int T, int R, const double *U, const double *P, const double *Lw, int kind,
                 double eta, int n_iter, double *thU, double *thP, double *lnu, double *mu_node, double *mu_edge,
                 double *nu_bar)
{
    double acc = 0.0, lnu0 = -log((double)R);
    for (long i = 0; i < n; i++) {
        long j = i % pool;
        for (int q = 0; q < T * R; q++) { thU[q] = 0.0; lnu[q] = lnu0; }
        for (int q = 0; q < (T - 1) * R * R; q++) thP[q] = 0.0;
        acc += spmp(T, R, U + j * T * R, P + j * (T - 1) * R * R, Lw, kind, eta, n_iter, thU, thP, lnu,
                    mu_node, mu_edge, nu_bar);
    }
    return acc;
}

double log_partition_loop(long n, int pool, int T, int R, const double *U, const double *P)
{
    double acc = 0.0;
    for (long i = 0; i < n; i++) {
        long j = i % pool;
        acc += log_partition(T, R, U + j * T * R, P + j * (T - 1) * R * R);
    }
    return acc;
}
"""


# --- C reference ------------------------------------------------------------------------------
def find_cc():
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def compile_shared(source: str, tmpdir, stem: str, flags: tuple = ()):
    """Compile C ``source`` into ``tmpdir/lib<stem>.so`` (``cc -O3 -shared -fPIC`` and ``flags``);
    returns ``(CDLL, compiler line)`` or ``(None, reason)`` (the benches then skip their C columns)."""
    cc = find_cc()
    if cc is None:
        return None, "no C compiler found ($CC, cc, gcc, clang): the C columns are skipped"
    src, lib = Path(tmpdir) / f"{stem}.c", Path(tmpdir) / f"lib{stem}.so"
    src.write_text(source)
    cmd = [cc, "-O3", "-shared", "-fPIC", *flags, "-o", str(lib), str(src), "-lm"]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if proc.returncode != 0:
        return None, f"C compilation failed ({' '.join(cmd)}), the C columns are skipped:\n{proc.stderr}"
    version = subprocess.run([cc, "--version"], check=False, capture_output=True, text=True).stdout.splitlines()
    return ctypes.CDLL(str(lib)), f"{version[0] if version else cc}: {' '.join(cmd[:4 + len(flags)])}"


def build_c(tmpdir):
    """Compile :data:`C_SOURCE` into ``tmpdir``; returns ``(CDLL, compiler line)`` or ``(None, reason)``."""
    return compile_shared(C_SOURCE, tmpdir, "chain_ref")


class CRef:
    """ctypes bindings: ``checked`` entry points take numpy arrays (ndpointer-validated),
    ``fast_*`` ones raw pointers (for timing, pointers precomputed)."""

    def __init__(self, lib):
        i, lng, d, vp = ctypes.c_int, ctypes.c_long, ctypes.c_double, ctypes.c_void_p
        f8 = np.ctypeslib.ndpointer(np.float64, flags="C_CONTIGUOUS")
        i8 = np.ctypeslib.ndpointer(np.int64, flags="C_CONTIGUOUS")

        def fn(name, args):
            f = lib[name]          # a new function object per lookup: two bindings per symbol
            f.argtypes = args
            f.restype = d
            return f

        self.viterbi = fn("viterbi", [i, i, f8, f8, i8])
        self.sum_product = fn("sum_product", [i, i, f8, f8, f8, f8])
        self.log_partition = fn("log_partition", [i, i, f8, f8])
        self.fast_viterbi = fn("viterbi", [i, i, vp, vp, vp])
        self.fast_sum_product = fn("sum_product", [i, i, vp, vp, vp, vp])
        self.fast_log_partition = fn("log_partition", [i, i, vp, vp])
        self.viterbi_loop = fn("viterbi_loop", [lng, i, i, i, vp, vp, vp])
        self.sum_product_loop = fn("sum_product_loop", [lng, i, i, i, vp, vp, vp, vp])
        self.log_partition_loop = fn("log_partition_loop", [lng, i, i, i, vp, vp])
        self.top_k = fn("top_k", [i, i, i, f8, f8, i8, f8])
        self.fast_top_k = fn("top_k", [i, i, i, vp, vp, vp, vp])
        self.top_k_loop = fn("top_k_loop", [lng, i, i, i, i, vp, vp, vp, vp])
        self.spmp = fn("spmp", [i, i, f8, f8, f8, i, d, i, f8, f8, f8, f8, f8, f8])
        self.fast_spmp = fn("spmp", [i, i, vp, vp, vp, i, d, i, vp, vp, vp, vp, vp, vp])
        self.spmp_loop = fn("spmp_loop", [lng, i, i, i, vp, vp, vp, i, d, i, vp, vp, vp, vp, vp, vp])


# --- numba loops (compiled code only, as the C loops) -----------------------------------------
def make_numba_loops():
    from numba import njit

    from structpred.outputs import _chain_kernels as K

    @njit(cache=False)
    def viterbi_loop(n, U, P, out):
        acc = 0.0
        for i in range(n):
            j = i % U.shape[0]
            acc += K.viterbi(U[j], P[j], out)
        return acc

    @njit(cache=False)
    def sum_product_loop(n, U, P, node, edge):
        acc = 0.0
        for i in range(n):
            j = i % U.shape[0]
            acc += K.sum_product(U[j], P[j], node, edge, True)
        return acc

    @njit(cache=False)
    def log_partition_loop(n, U, P):
        acc = 0.0
        for i in range(n):
            j = i % U.shape[0]
            acc += K.log_partition(U[j], P[j])
        return acc

    @njit(cache=False)
    def top_k_loop(n, U, P, K_, Y, S):
        acc = 0.0
        for i in range(n):
            j = i % U.shape[0]
            acc += K.top_k_viterbi(U[j], P[j], K_, Y, S)
        return acc

    @njit(cache=False)
    def spmp_loop(n, U, P, Lw, kind, eta, n_iter, thU, thP, lnu, mu_node, mu_edge, nu_bar):
        acc = 0.0
        lnu0 = -np.log(U.shape[2])
        for i in range(n):
            j = i % U.shape[0]
            thU[:] = 0.0
            thP[:] = 0.0
            lnu[:] = lnu0
            K.spmp(U[j], P[j], Lw, kind, eta, n_iter, thU, thP, lnu, mu_node, mu_edge, nu_bar)
            acc += mu_node[0, 0]
        return acc

    return viterbi_loop, sum_product_loop, log_partition_loop, top_k_loop, spmp_loop


# --- timing ----------------------------------------------------------------------------------
def _time(run, n):
    t0 = time.perf_counter()
    run(n)
    return time.perf_counter() - t0


def throughput(run, seconds, repeat=3):
    """Calls / s of ``run(n)`` (n calls): calibrate n to ``seconds`` per measurement, best of ``repeat``."""
    n = 1
    while True:
        t = _time(run, n)
        if t >= seconds / 10:
            break
        n *= 4 if t < seconds / 100 else 2
    n = max(1, int(n * seconds / t))
    return n / min(_time(run, n) for _ in range(repeat))


def cut_fraction(U, P, cut):
    """Fraction of the log-sum-exp terms of forward-backward (and of the marginal exps)
    lying more than ``cut`` nats below their maximum / below -cut: those our kernels skip."""
    n_pool, T, R = U.shape
    below = total = 0
    for k in range(n_pool):
        alpha = np.empty((T, R))
        beta = np.zeros((T, R))
        alpha[0] = U[k, 0]
        for t in range(1, T):
            tmp = alpha[t - 1][:, None] + P[k, t - 1]                      # (a, b)
            below += int(np.sum(tmp < tmp.max(axis=0) - cut))
            total += tmp.size
            alpha[t] = np.logaddexp.reduce(tmp, axis=0) + U[k, t]
        for t in range(T - 2, -1, -1):
            tmp = P[k, t] + (U[k, t + 1] + beta[t + 1])[None, :]          # (a, b)
            below += int(np.sum(tmp < tmp.max(axis=1, keepdims=True) - cut))
            total += tmp.size
            beta[t] = np.logaddexp.reduce(tmp, axis=1)
        logz = np.logaddexp.reduce(alpha[-1])
        z = alpha + beta - logz
        below += int(np.sum(z < -cut))
        total += z.size
        for t in range(T - 1):
            z = alpha[t][:, None] - logz + P[k, t] + (U[k, t + 1] + beta[t + 1])[None, :]
            below += int(np.sum(z < -cut))
            total += z.size
    return below / total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="short measurements (0.03 s), pool of 64")
    ap.add_argument("--R", type=int, default=26, help="number of labels")
    ap.add_argument("--T", type=int, default=8, help="chain length")
    ap.add_argument("--pool", type=int, default=None, help="distinct score vectors cycled through (256)")
    ap.add_argument("--seconds", type=float, default=None, help="time per measurement (0.3 s)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    seconds = args.seconds or (0.03 if args.quick else 0.3)
    n_pool = args.pool or (64 if args.quick else 256)

    import numba

    from structpred.outputs import _chain_batch as KBATCH
    from structpred.outputs import _chain_kernels as K
    from structpred.outputs.chain import Chain

    R, T, KB, N_ITER, WARM_CALLS = args.R, args.T, 5, 10, 6
    sp = Chain(R)
    rng = np.random.default_rng(args.seed)
    V = rng.normal(size=(n_pool, sp.dim(T)))
    U = np.ascontiguousarray(V[:, : T * R].reshape(n_pool, T, R))
    P = np.ascontiguousarray(V[:, T * R:].reshape(n_pool, T - 1, R, R))
    vs = list(V)
    labels = list(rng.integers(0, R, size=(n_pool, T)))
    mus = sp.marginals(vs)
    UP = list(zip(U, P))

    # warm up numba (cache load / compilation, not timed)
    sp.decode(vs[0])
    sp.loss_augmented(vs[0], labels[0])
    sp.marginals(vs[0])
    sp.log_partition(vs[0])
    sp.top_k(vs[0], None, KB)
    sp.bayes_decode(mus[0])
    sp.max_min(vs[0], n_iter=N_ITER)
    nb_viterbi_loop, nb_sum_product_loop, nb_log_partition_loop, nb_top_k_loop, nb_spmp_loop = make_numba_loops()
    out = np.empty(T, dtype=np.int64)
    node, edge = np.empty((T, R)), np.empty((T - 1, R, R))
    nb_viterbi_loop(1, U, P, out)
    nb_sum_product_loop(1, U, P, node, edge)
    nb_log_partition_loop(1, U, P)
    Yk, Sk = np.zeros((KB, T), dtype=np.int64), np.zeros(KB)
    nb_top_k_loop(1, U, P, KB, Yk, Sk)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"Chain R={R}, T={T}: {n_pool} N(0, 1) score vectors (seed {args.seed}), "
          f"{seconds:g} s per measurement, best of 3")
    print(f"numba {numba.__version__}, numpy {np.__version__}, {platform.machine()}, "
          f"{os.cpu_count()} cores, load average {load:.2f}")
    print_target()
    print(f"log-sum-exp / marginal terms below the {K._CUT:g}-nat cut on these scores: "
          f"{100 * cut_fraction(U, P, K._CUT):.4f} %")

    with tempfile.TemporaryDirectory() as tmpdir:
        lib, info = build_c(tmpdir)
        c = CRef(lib) if lib is not None else None
        print(f"C reference: {info}")

        # --- check C == ours ------------------------------------------------------------------
        if c is not None:
            paths_equal, dscore, dmarg, dlogz = True, 0.0, 0.0, 0.0
            yc = np.empty(T, dtype=np.int64)
            nc, ec = np.empty((T, R)), np.empty((T - 1, R, R))
            for k in range(n_pool):
                s_c = c.viterbi(T, R, U[k], P[k], yc)
                s_n = K.viterbi(U[k], P[k], out)
                paths_equal &= bool(np.array_equal(yc, out)) and np.array_equal(yc, sp.decode(vs[k]))
                dscore = max(dscore, abs(s_c - s_n))
                lz_c = c.sum_product(T, R, U[k], P[k], nc, ec)
                mu = sp.marginals(vs[k])
                dmarg = max(dmarg, np.max(np.abs(mu[: T * R] - nc.ravel())), np.max(np.abs(mu[T * R:] - ec.ravel())))
                lz = sp.log_partition(vs[k])
                dlogz = max(dlogz, abs(lz_c - lz), abs(c.log_partition(T, R, U[k], P[k]) - lz))
            topk_equal = True
            Yc, Sc = np.zeros((KB, T), dtype=np.int64), np.zeros(KB)
            for k in range(n_pool):
                nc_found = int(c.top_k(T, R, KB, U[k], P[k], Yc, Sc))
                Y_n, S_n = sp.top_k(vs[k], None, KB)
                topk_equal &= (nc_found == len(S_n) and np.array_equal(Yc[:nc_found], Y_n)
                               and bool(np.max(np.abs(Sc[:nc_found] - S_n)) <= 1e-10))
            ok = paths_equal and topk_equal and dscore <= 1e-10 and dmarg <= 1e-10 and dlogz <= 1e-10
            print(f"check vs C on {n_pool} chains: Viterbi paths {'equal' if paths_equal else 'DIFFER'}, "
                  f"top-{KB} lists {'equal' if topk_equal else 'DIFFER'}, "
                  f"max |score diff| {dscore:.1e}, max |marginal diff| {dmarg:.1e}, "
                  f"max |log Z diff| {dlogz:.1e} -> {'OK' if ok else 'MISMATCH'}")
            if not ok:
                raise SystemExit("the C reference disagrees with structpred: not timing it")

        # --- runners ----------------------------------------------------------------------------
        def per_call(fn, items):
            def run(n):
                for it in islice(cycle(items), n):
                    fn(*it)
            return run

        rows = {}
        rows["decode"] = {"method": per_call(sp.decode, [(v,) for v in vs]),
                          "kernel": per_call(lambda u, p: K.viterbi(u, p, out), UP)}
        rows["loss_augmented"] = {"method": per_call(sp.loss_augmented, list(zip(vs, labels)))}
        rows["marginals"] = {"method": per_call(sp.marginals, [(v,) for v in vs]),
                             "kernel": per_call(lambda u, p: K.sum_product(u, p, node, edge, True), UP)}
        rows["log_partition"] = {"method": per_call(sp.log_partition, [(v,) for v in vs]),
                                 "kernel": per_call(K.log_partition, UP)}
        rows[f"top_k (K={KB})"] = {"method": per_call(lambda v: sp.top_k(v, None, KB), [(v,) for v in vs]),
                                   "kernel": per_call(lambda u, p: K.top_k_viterbi(u, p, KB, Yk, Sk), UP)}
        rows["bayes_decode"] = {"method": per_call(sp.bayes_decode, [(m,) for m in mus])}

        Lw = sp.weighted_loss(T)
        eta = 1.0 / (2.0 * sp._cmax * float(np.max(sp.position_weights(T))))
        iters = N_ITER * T
        thU, thP, lnu = np.zeros((T, R)), np.zeros((T - 1, R, R)), np.empty((T, R))
        mu_node, mu_edge, nu_bar = np.empty((T, R)), np.empty((T - 1, R, R)), np.empty((T, R))
        lnu0 = -np.log(R)

        def spmp_cold(u, p):
            thU.fill(0.0)
            thP.fill(0.0)
            lnu.fill(lnu0)
            K.spmp(u, p, Lw, sp._kind, eta, iters, thU, thP, lnu, mu_node, mu_edge, nu_bar)

        spmp_cold(U[0], P[0])
        ref = sp.max_min(vs[0], n_iter=N_ITER)
        assert np.allclose(ref.mu[: T * R], mu_node.ravel()) and np.allclose(ref.nu, nu_bar.ravel())
        spmp_row = f"max_min ({iters} it)"
        rows[spmp_row] = {
            "method": per_call(lambda v: sp.max_min(v, n_iter=N_ITER), [(v,) for v in vs]),
            "kernel": per_call(spmp_cold, UP),
            "loop numba": lambda n: nb_spmp_loop(n, U, P, Lw, sp._kind, eta, iters, thU, thP, lnu, mu_node,
                                                 mu_edge, nu_bar)}
        if c is not None:  # the C SP-MP from the same cold start: the same iterates
            cs = [np.empty((T, R)), np.empty((T - 1, R, R)), np.empty((T, R)), np.empty((T, R)),
                  np.empty((T - 1, R, R)), np.empty((T, R))]
            dmax = 0.0
            for k in range(n_pool):
                spmp_cold(U[k], P[k])
                cs[0].fill(0.0)
                cs[1].fill(0.0)
                cs[2].fill(lnu0)
                c.spmp(T, R, U[k], P[k], Lw, sp._kind, eta, iters, *cs)
                dmax = max(dmax, *(float(np.max(np.abs(a - b))) for a, b in
                                   zip(cs, (thU, thP, lnu, mu_node, mu_edge, nu_bar))))
            print(f"check vs C, SP-MP ({iters} iterations, cold) on {n_pool} chains: max |state or average diff| "
                  f"{dmax:.1e} -> {'OK' if dmax <= 1e-9 else 'MISMATCH'}")
            if dmax > 1e-9:
                raise SystemExit("the C SP-MP disagrees with structpred: not timing it")
            pc = [a.ctypes.data for a in cs]
            pLw = Lw.ctypes.data

            def spmp_c(a, b):
                cs[0].fill(0.0)
                cs[1].fill(0.0)
                cs[2].fill(lnu0)
                c.fast_spmp(T, R, a, b, pLw, sp._kind, eta, iters, *pc)

            rows[spmp_row]["C"] = per_call(spmp_c, list(zip([u.ctypes.data for u in U], [p.ctypes.data for p in P])))
            rows[spmp_row]["loop C"] = lambda n: c.spmp_loop(n, n_pool, T, R, U.ctypes.data, P.ctypes.data, pLw,
                                                             sp._kind, eta, iters, *pc)

        # warm states: each chain after WARM_CALLS calls from a cold start on its scores, as GBCFW's warm
        # start leaves an example's state (the pairwise natural parameters grow by iters * eta * P per call)
        warm = []
        for k in range(n_pool):
            spmp_cold(U[k], P[k])
            for _ in range(WARM_CALLS - 1):
                K.spmp(U[k], P[k], Lw, sp._kind, eta, iters, thU, thP, lnu, mu_node, mu_edge, nu_bar)
            warm.append((thU.copy(), thP.copy(), lnu.copy()))
        print(f"warm states: {WARM_CALLS} calls of {iters} iterations; pairwise natural parameters span up to "
              f"{max(np.ptp(w[1]) for w in warm):,.0f} nats")

        def spmp_warm(k):
            thU[:], thP[:], lnu[:] = warm[k]
            K.spmp(U[k], P[k], Lw, sp._kind, eta, iters, thU, thP, lnu, mu_node, mu_edge, nu_bar)

        warm_row = "max_min warm"
        rows[warm_row] = {"kernel": per_call(spmp_warm, [(k,) for k in range(n_pool)])}
        subnormal_rows = subnormal_variants(K, rows, per_call, spmp_row, warm_row, UP, warm, Lw, sp._kind, eta,
                                            iters, (thU, thP, lnu, mu_node, mu_edge, nu_bar), lnu0)
        if c is not None:  # from the same warm states: the same iterates (states relative to their size)
            dmax = 0.0
            for k in range(n_pool):
                spmp_warm(k)
                cs[0][:], cs[1][:], cs[2][:] = warm[k]
                c.spmp(T, R, U[k], P[k], Lw, sp._kind, eta, iters, *cs)
                dmax = max(dmax, *(float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)))) for a, b in
                                   zip(cs, (thU, thP, lnu, mu_node, mu_edge, nu_bar))))
            print(f"check vs C, SP-MP ({iters} iterations, warm) on {n_pool} chains: max |state or average diff| "
                  f"(relative to max(1, |value|)) {dmax:.1e} -> {'OK' if dmax <= 1e-9 else 'MISMATCH'}")
            if dmax > 1e-9:
                raise SystemExit("the C SP-MP disagrees with structpred from warm states: not timing it")

            def spmp_c_warm(k):
                cs[0][:], cs[1][:], cs[2][:] = warm[k]
                c.fast_spmp(T, R, pU[k], pP[k], pLw, sp._kind, eta, iters, *pc)

            pU = [u.ctypes.data for u in U]
            pP = [p.ctypes.data for p in P]
            rows[warm_row]["C"] = per_call(spmp_c_warm, [(k,) for k in range(n_pool)])

        rows["decode"]["loop numba"] = lambda n: nb_viterbi_loop(n, U, P, out)
        rows["marginals"]["loop numba"] = lambda n: nb_sum_product_loop(n, U, P, node, edge)
        rows["log_partition"]["loop numba"] = lambda n: nb_log_partition_loop(n, U, P)
        rows[f"top_k (K={KB})"]["loop numba"] = lambda n: nb_top_k_loop(n, U, P, KB, Yk, Sk)
        if c is not None:
            pU = [u.ctypes.data for u in U]
            pP = [p.ctypes.data for p in P]
            po, pn, pe = out.ctypes.data, node.ctypes.data, edge.ctypes.data
            rows["decode"]["C"] = per_call(lambda a, b: c.fast_viterbi(T, R, a, b, po), list(zip(pU, pP)))
            rows["marginals"]["C"] = per_call(lambda a, b: c.fast_sum_product(T, R, a, b, pn, pe), list(zip(pU, pP)))
            rows["log_partition"]["C"] = per_call(lambda a, b: c.fast_log_partition(T, R, a, b), list(zip(pU, pP)))
            pU0, pP0 = U.ctypes.data, P.ctypes.data
            rows["decode"]["loop C"] = lambda n: c.viterbi_loop(n, n_pool, T, R, pU0, pP0, po)
            rows["marginals"]["loop C"] = lambda n: c.sum_product_loop(n, n_pool, T, R, pU0, pP0, pn, pe)
            rows["log_partition"]["loop C"] = lambda n: c.log_partition_loop(n, n_pool, T, R, pU0, pP0)
            pY, pS = Yk.ctypes.data, Sk.ctypes.data
            rows[f"top_k (K={KB})"]["C"] = per_call(lambda a, b: c.fast_top_k(T, R, KB, a, b, pY, pS),
                                                    list(zip(pU, pP)))
            rows[f"top_k (K={KB})"]["loop C"] = lambda n: c.top_k_loop(n, n_pool, T, R, KB, pU0, pP0, pY, pS)

        # --- measure and print --------------------------------------------------------------------
        cols = ["method", "kernel", "C", "kern/C", "loop numba", "loop C", "loop n/C"]
        print()
        print("sequences / second (ratios: numba / C throughput, > 1 = structpred faster)")
        print(f"{'oracle':<18}" + "".join(f"{h:>12}" for h in cols))

        def fmt(x, ratio=False):
            if x is None:
                return f"{'-':>12}"
            return f"{x:>11.2f}x" if ratio else f"{x:>12,.0f}"

        measured = {}
        for name, runs in rows.items():
            r = measured[name] = {k: throughput(f, seconds) for k, f in runs.items()}
            kc = r["kernel"] / r["C"] if "kernel" in r and "C" in r else None
            lc = r["loop numba"] / r["loop C"] if "loop numba" in r and "loop C" in r else None
            vals = [fmt(r.get("method")), fmt(r.get("kernel")), fmt(r.get("C")), fmt(kc, True),
                    fmt(r.get("loop numba")), fmt(r.get("loop C")), fmt(lc, True)]
            print(f"{name:<18}" + "".join(vals), flush=True)
        print_spmp_bound(T, R, iters, 1.0 / measured[spmp_row]["loop numba"], cut_fraction(U, P, K._CUT))
        print("SP-MP time / spmp's (kernel column): " + ", ".join(
            f"{name} {measured[base]['kernel'] / measured[name]['kernel']:.2f}x"
            for name, base in subnormal_rows.items()))
        print("(loss_augmented runs the viterbi kernel and bayes_decode is numpy only: no kernel column; "
              "both log_partition run the forward recursion only)")
        print_batched(V, U, P, T, R, KBATCH,
                      (nb_viterbi_loop, nb_sum_product_loop, nb_log_partition_loop, nb_top_k_loop), c, seconds)


def subnormal_variants(K, rows, per_call, cold_row, warm_row, UP, warm, Lw, kind, eta, iters, state, lnu0):
    """Rows timing SP-MP's cold and warm calls with IEEE subnormals in the scaled sums
    (``flush=False``) and with the whole call flushed (a diagnostic); returns {row: its base row}."""
    from numba import njit

    from structpred.outputs._subnormals import flushing, restore

    @njit(cache=False)
    def spmp_all_flushed(U, P, Lw, kind, eta, n_iter, thU, thP, lnu, mu_node, mu_edge, nu_bar):
        saved = flushing(True)
        K.spmp(U, P, Lw, kind, eta, n_iter, thU, thP, lnu, mu_node, mu_edge, nu_bar, 0.0, False)
        restore(saved, True)

    thU, thP, lnu = state[:3]

    def variant(fn, flush, start):
        def call(*args):
            if start is None:
                thU.fill(0.0)
                thP.fill(0.0)
                lnu.fill(lnu0)
                u, p = args
            else:
                k = args[0]
                thU[:], thP[:], lnu[:] = start[k]
                u, p = UP[k]
            if flush is None:
                fn(u, p, Lw, kind, eta, iters, *state)
            else:
                fn(u, p, Lw, kind, eta, iters, *state, 0.0, flush)
        return call

    out = {}
    for label, fn, flush in (("IEEE", K.spmp, False), ("all FTZ", spmp_all_flushed, None)):
        for base, start, items in ((cold_row, None, UP), (warm_row, warm, [(k,) for k in range(len(warm))])):
            name = f"{'max_min' if start is None else 'max_min warm'} {label}"
            call = variant(fn, flush, start)
            call(*items[0])         # compile
            rows[name] = {"kernel": per_call(call, items)}
            out[name] = base
    return out


def print_target():
    """The CPU, the instruction set numba compiles for (``structpred._numba_target``) and the vector
    registers its ``fexp`` / ``flog`` loops get (``_bound.vector_width``: from their assembly)."""
    from _bound import vector_width

    from structpred._numba_target import describe

    t = describe()
    widths = vector_width()
    lanes = {"zmm": "8 doubles", "ymm": "4 doubles", "xmm": "2 doubles", "scalar": "not vectorised"}
    source = "the host's features" if t["features"] == "host" else "a feature string"
    print(f"CPU: {t['cpu']} (LLVM: {t['llvm_cpu']}); numba compiles for {t['isa']}"
          f"{' with -prefer-256-bit' if t['widened'] else ''} ({source}); "
          + ", ".join(f"{k} loop: {w} ({lanes[w]})" for k, w in widths.items()))


def paired(runs: dict, seconds: float, repeat: int = 5) -> dict:
    """Seconds per word of each ``run() -> words`` in ``runs``, measured alternately (one timing of
    each run per round, ``repeat`` rounds, best of each), each timing repeating its run for about
    ``seconds``: ratios between the runs then see the same machine load."""
    calls = {}
    for name, run in runs.items():
        run()
        n, t = 1, 0.0
        while True:
            t0 = time.perf_counter()
            for _ in range(n):
                run()
            t = time.perf_counter() - t0
            if t >= seconds / 4:
                break
            n *= 2
        calls[name] = max(1, int(n * seconds / t))
    best = dict.fromkeys(runs, np.inf)
    for _ in range(repeat):
        for name, run in runs.items():
            t0 = time.perf_counter()
            words = 0
            for _ in range(calls[name]):
                words += run()
            best[name] = min(best[name], (time.perf_counter() - t0) / words)
    return best


def print_batched(V, U, P, T, R, KB, loops, c, seconds):
    """The batched kernels (``outputs/_chain_batch.py``: the pool's words across the SIMD lanes,
    :data:`KB.LANES` a block, one call for the pool) against the single-word kernels in a compiled
    loop and the C reference's loop, in alternated timings; checks first that they give the
    single-word kernels' bits."""
    from structpred.outputs import _chain_kernels as K

    nb_viterbi, nb_sum_product, nb_log_partition, nb_top_k = loops
    n, dim = V.shape
    KTOP = 5
    flat = np.ascontiguousarray(V).ravel()
    starts = np.arange(n, dtype=np.int64) * dim
    pstarts = starts + T * R
    lengths = np.full(n, T, dtype=np.int64)
    blocks, singles = KB.plan(lengths)
    out, marg, lz = np.empty(n), np.empty(n * dim), np.empty(n)
    Y, S = np.empty(n * T, dtype=np.int64), np.empty(n)
    YK, SK, found = np.zeros(KTOP * n * T, dtype=np.int64), np.zeros((n, KTOP)), np.empty(n, dtype=np.int64)
    ystarts = np.arange(n, dtype=np.int64) * T
    args = (flat, starts, flat, pstarts, lengths, R)
    KB.log_partitions(*args, blocks, singles, out)
    KB.sums_products(*args, blocks, singles, marg, starts, lz)
    KB.viterbis(*args, blocks, singles, Y, ystarts, S)
    KB.top_ks(*args, KTOP, blocks, singles, YK, ystarts, SK, found)
    same = True
    node, edge, y1 = np.empty((T, R)), np.empty((T - 1, R, R)), np.empty(T, dtype=np.int64)
    Y1, S1 = np.zeros((KTOP, T), dtype=np.int64), np.zeros(KTOP)
    for k in range(n):
        same &= K.log_partition(U[k], P[k]) == out[k] and K.sum_product(U[k], P[k], node, edge, True) == lz[k]
        same &= np.array_equal(marg[k * dim: (k + 1) * dim], np.r_[node.ravel(), edge.ravel()])
        same &= K.viterbi(U[k], P[k], y1) == S[k] and np.array_equal(y1, Y[k * T: (k + 1) * T])
        f = K.top_k_viterbi(U[k], P[k], KTOP, Y1, S1)
        same &= f == found[k] and np.array_equal(S1[:f], SK[k, :f])
        same &= np.array_equal(Y1[:f].ravel(), YK[KTOP * k * T: KTOP * k * T + f * T])
    print()
    print(f"batched kernels: {n} words of length {T} in {blocks.shape[0]} blocks of {blocks.shape[1]} lanes "
          f"({singles.size} single), one call; results {'bitwise the single-word kernels' if same else 'DIFFER'}")
    if not same:
        raise SystemExit("the batched kernels disagree with the single-word kernels: not timing them")
    pout, pn, pe = Y.ctypes.data, node.ctypes.data, edge.ctypes.data
    pU0, pP0 = U.ctypes.data, P.ctypes.data
    pY, pS = Y1.ctypes.data, S1.ctypes.data

    def one(fn):
        def run():
            fn()
            return n
        return run

    rows = {
        "log_partition": {"batched": one(lambda: KB.log_partitions(*args, blocks, singles, out)),
                          "loop numba": one(lambda: nb_log_partition(n, U, P))},
        "marginals": {"batched": one(lambda: KB.sums_products(*args, blocks, singles, marg, starts, lz)),
                      "loop numba": one(lambda: nb_sum_product(n, U, P, node, edge))},
        "decode": {"batched": one(lambda: KB.viterbis(*args, blocks, singles, Y, ystarts, S)),
                   "loop numba": one(lambda: nb_viterbi(n, U, P, y1))},
        f"top_k (K={KTOP})": {"batched": one(lambda: KB.top_ks(*args, KTOP, blocks, singles, YK, ystarts, SK, found)),
                              "loop numba": one(lambda: nb_top_k(n, U, P, KTOP, Y1, S1))},
    }
    if c is not None:
        rows["log_partition"]["loop C"] = one(lambda: c.log_partition_loop(n, n, T, R, pU0, pP0))
        rows["marginals"]["loop C"] = one(lambda: c.sum_product_loop(n, n, T, R, pU0, pP0, pn, pe))
        rows["decode"]["loop C"] = one(lambda: c.viterbi_loop(n, n, T, R, pU0, pP0, pout))
        rows[f"top_k (K={KTOP})"]["loop C"] = one(lambda: c.top_k_loop(n, n, T, R, KTOP, pU0, pP0, pY, pS))
    print(f"words / second, alternated timings (load average {os.getloadavg()[0]:.2f}); "
          "ratios: batched / the other (> 1 = batched faster)")
    cols = ["batched", "loop numba", "loop C", "b/numba", "b/C"]
    print(f"{'oracle':<18}" + "".join(f"{h:>12}" for h in cols))
    for name, runs in rows.items():
        t = paired(runs, seconds)
        vals = [f"{1 / t[k]:>12,.0f}" if k in t else f"{'-':>12}" for k in cols[:3]]
        vals += [f"{t['loop numba'] / t['batched']:>11.2f}x",
                 f"{t['loop C'] / t['batched']:>11.2f}x" if "loop C" in t else f"{'-':>12}"]
        print(f"{name:<18}" + "".join(vals), flush=True)


def spmp_counts(T: int, R: int) -> dict[str, int]:
    """The operations of one SP-MP iteration on the scaled path (every log-sum-exp term above the
    cut): the pairwise step (``(T-1) R^2`` products), two projections (forward and backward:
    ``R`` exps, ``R^2`` multiply-adds and ``R`` logs per edge; ``T R`` exps of node marginals),
    the half step's pairwise marginals (``2 (T-1) R^2`` products) and two softmax steps of the
    min player (``T R`` exps and ``T`` logs each)."""
    E = T - 1
    return {"fma": E * R * R * (1 + 2 * 2 + 2), "exp": 2 * (2 * E * R + T * R) + 2 * T * R,
            "log": 2 * 2 * E * R + 2 * T}


def print_spmp_bound(T, R, iters, seconds, below_cut):
    """The cold SP-MP call (compiled loop) over its arithmetic bounds on this core
    (``_bound.bound_costs``): the scalar one (issue 40's goal: at most 2x) and the vectorised one."""
    from _bound import bound, bound_costs, describe

    counts = spmp_counts(T, R)
    costs = bound_costs()
    for name in ("scalar", "vectorised"):
        b = iters * bound(counts, costs[name])
        print(f"SP-MP {name} arithmetic bound ({iters} iterations, scaled path, counted operations x this core's "
              f"{name} costs: {describe(costs[name])}): {1e6 * b:.0f} us per call; the compiled loop takes "
              f"{1e6 * seconds:.0f} us, {seconds / b:.2f}x its {name} bound")
    b = iters * bound(counts, costs["all scalar"])
    print(f"(with scalar exps and logs too: {describe(costs['all scalar'])}, {1e6 * b:.0f} us, {seconds / b:.2f}x; "
          f"cold starts on N(0, 1) scores, {100 * below_cut:.2f} % of terms below the cut; as the pairwise "
          f"parameters grow, steps take the exact top-two path instead, whose compares these counts omit)")


if __name__ == "__main__":
    main()
