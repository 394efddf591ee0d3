"""The chain kernels over a block of words at once: words across the SIMD lanes, labels in the outer loops.

The single-word kernels of :mod:`structpred.outputs._chain_kernels` cannot vectorise their
log-sum-exps, maxima and Viterbi steps: each reduces the ``R`` terms of one entry in a chain of
dependent operations, which LLVM does not reorder for floating point.  Here a *block* holds ``L``
words of one length ``T`` in lane-major arrays, unary scores ``Ub (T, R, L)`` and pairwise
scores ``Pb (T-1, R, R, L)`` (``Pb[t, a, b, w]`` is word ``w``'s ``P[t, a, b]``), and every loop
over labels carries an innermost loop over the lanes whose iterations are independent: its exps
(:func:`~structpred.outputs._fastmath.fexp`), adds, compares and selects vectorise.

The number of lanes is the arrays' last axis, a run-time value, on purpose: LLVM fully unrolls a
loop of a known small trip count before its loop vectoriser runs, and numba leaves the SLP
vectoriser, which would take the unrolled statements, off (``NUMBA_SLP_VECTORIZE=0``), so a loop
over a constant 16 lanes stays scalar.  A run-time count keeps it a loop; the vectoriser runs
``VF x IC`` lanes at a time (8 doubles in a ``zmm`` register, up to 4 interleaved) and the rest
in a scalar remainder, so the ragged drivers use blocks of :data:`LANES` = 32 words.

**Bitwise the single-word results.**  Each lane does its word's floating-point operations of the
single-word kernel in the same order: a log-sum-exp is the running ``max`` over the terms, then
their sum in order with the term at the max counted as 1 and those ``_CUT`` nats below it as 0
(adding ``+0.0`` to a non-negative sum changes no bit), then the C library's ``log`` of the sum
(``np.log``, one call per entry and word, in a scalar loop of its own); Viterbi and the top-K
merge compare and select as the single-word loops branch, ties to the smaller label.  So the
batched and the single-word paths give the same bits (``tests/test_chain_batch.py``), and a
caller may pick either per word.

**Ragged batches.**  :func:`plan` groups the words of a batch by length into blocks of
:data:`LANES` words; the last words of a length take one more block, padded by repeating its last
word (its lanes are ignored), if there are at least :data:`MIN_WORDS` of them, else the
single-word kernels (a block costs about as much as a third of its lanes in single words).  The
drivers (:func:`log_partitions`, :func:`sums_products`, :func:`viterbis`, :func:`top_ks`) read
word ``i``'s unary scores at ``fu[ustarts[i]:]`` and its pairwise scores at ``fp[pstarts[i]:]``
(one flat array of the batch's score vectors for both, or loss-augmented unaries apart from the
pairwise scores), pack each block's unaries, let its kernel pack each step's pairwise scores just
before it uses them (:func:`_step`: a block packed whole, 1.2 MB at ``R = 26``, ``T = 8``, was
read back from memory, 18 % of the log-partition's time), and write every word's answer where the
single-word kernel would have.

Where the library uses it: the chain space's ``marginals``, ``log_partition`` and ``top_k`` of a
ragged batch (so the CRF's Bayes decoding in ``predict`` / ``task_loss``, the primal values and
gradients of ``LogLoss`` and ``EntropySmoothedHinge`` over all samples in the generic loops, and
``predict_proba``).  Viterbi's block (:func:`viterbi_block`, :func:`viterbis`) gives the same
bits too, but does not pay: its compares cost so little that packing (every pairwise score
copied into the lane-major layout, about 2 us a word at ``R = 26``) eats what the lanes save
(``bench/bench_chain.py``: 0.8x the single-word loop), so ``decode``, ``loss_augmented`` and the
hashed window map's evaluation (two Viterbis a sentence, behind the hashed scores) stay word by
word.  Nor the sample-by-sample passes (SDCA,
BCFW, GBCFW, SGD, SVRG): each step there needs the weights the previous step left.  The max-min
SP-MP has no block kernel: its one batch caller is M4N's primal evaluation
(``MaxMinMargin.bounds``, every ``eval_every`` passes: 5 of every 55 SP-MP calls on a word in an
m4n_table1 OCR fit, the other 50 being GBCFW's sequential steps), started from per-word warm
states whose rescued entries and ranked steps (``_chain_kernels._scaled_project``) differ from
word to word, so lanes would diverge where those states spend their time.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from structpred.outputs._chain_kernels import _CUT, log_partition, sum_product, top_k_viterbi, viterbi
from structpred.outputs._fastmath import fexp

#: words per block of the ragged drivers (the kernels take any number: the arrays' last axis)
LANES = 32
#: the last words of a length, fewer than :data:`LANES`, take a padded block if there are at least
#: this many, else the single-word kernels
MIN_WORDS = 16


# --- lane kernels ------------------------------------------------------------------------------

@njit(cache=True, inline="always")
def _lse_finish(m, s, out, add):
    """:func:`_lse_end` plus ``add[w]``: the forward step's ``_lse(...) + U[t, b]``."""
    L = m.shape[0]
    for w in range(L):          # the C library's log: one opaque call per lane, as _lse takes it
        mw = m[w]
        sw = s[w]
        if mw == -np.inf:
            v = mw
        elif sw == 1.0:
            v = mw + 0.0
        else:
            v = mw + np.log(sw)
        out[w] = v + add[w]


@njit(cache=True, inline="always")
def _lse_end(m, s, out):
    """``out[w] = _lse(...)`` from the lanes' max ``m`` and sum ``s`` (nothing added)."""
    L = m.shape[0]
    for w in range(L):
        mw = m[w]
        sw = s[w]
        if mw == -np.inf:
            out[w] = mw
        elif sw == 1.0:
            out[w] = mw + 0.0
        else:
            out[w] = mw + np.log(sw)


@njit(cache=True, inline="always")
def _add_term(s, w, xj, mw):
    """``s[w] +=`` the term of ``xj`` in :func:`_chain_kernels._lse` with max ``mw`` (1 at the
    max, 0 below the cut, as a select: adding ``+0.0`` to a non-negative sum changes no bit)."""
    e = fexp(xj - mw)
    s[w] += (1.0 if xj == mw else e) if xj > mw - _CUT else 0.0


@njit(cache=True, inline="always")
def _pack_rows(src, o, k0, n, dst):
    """``dst[k L + w] = src[o[w] + k0 + k]`` for ``k < n`` and every lane ``w < L = len(o)``: the
    lanes' runs of ``n`` numbers from ``k0`` on, transposed into lane-major rows, four rows at a
    time (each lane's four numbers read together)."""
    L = o.shape[0]
    k = 0
    while k + 4 <= n:
        for w in range(L):
            i = o[w] + k0 + k
            a0, a1, a2, a3 = src[i], src[i + 1], src[i + 2], src[i + 3]
            dst[k * L + w] = a0
            dst[(k + 1) * L + w] = a1
            dst[(k + 2) * L + w] = a2
            dst[(k + 3) * L + w] = a3
        k += 4
    while k < n:
        for w in range(L):
            dst[k * L + w] = src[o[w] + k0 + k]
        k += 1


@njit(cache=True, inline="always")
def _step(Pb, t, fp, o):
    """Step ``t``'s pairwise block ``Pb[t] (R, R, L)``; with lane offsets ``o`` (a driver's
    words: lane ``w``'s pairwise scores at ``fp[o[w]:]``), first packed from the words' scores,
    just before its use, so that it is read while in cache (a block packed whole is read back
    from memory: its rows lie ``R L`` numbers apart)."""
    Pt = Pb[t]
    if o.shape[0] > 0:
        R, L = Pb.shape[1], Pb.shape[3]
        _pack_rows(fp, o, t * R * R, R * R, Pt.reshape(R * R * L))
    return Pt


@njit(cache=True)
def _forward_lanes(Ub, Pb, al, lz, fp, o):
    """:func:`_chain_kernels._forward` lane by lane: messages ``al (T, R, L)``, ``lz``: log Z
    (``fp``, ``o``: :func:`_step`).  Entry ``(t, b)``'s terms ``al[t-1, a] + Pb[t-1, a, b]`` are
    formed twice, for the max and for the sum (the same bits each time), rather than stored."""
    T, R, L = Ub.shape
    m = np.empty(L)
    s = np.empty(L)
    for j in range(R):
        for w in range(L):
            al[0, j, w] = Ub[0, j, w]
    for t in range(1, T):
        Pt = _step(Pb, t - 1, fp, o)
        for b in range(R):
            for w in range(L):
                m[w] = al[t - 1, 0, w] + Pt[0, b, w]
            for a in range(1, R):
                for w in range(L):
                    m[w] = max(m[w], al[t - 1, a, w] + Pt[a, b, w])
            for w in range(L):
                s[w] = 0.0
            for a in range(R):
                for w in range(L):
                    _add_term(s, w, al[t - 1, a, w] + Pt[a, b, w], m[w])
            _lse_finish(m, s, al[t, b], Ub[t, b])
    for w in range(L):
        m[w] = al[T - 1, 0, w]
    for j in range(1, R):
        for w in range(L):
            m[w] = max(m[w], al[T - 1, j, w])
    for w in range(L):
        s[w] = 0.0
    for j in range(R):
        for w in range(L):
            _add_term(s, w, al[T - 1, j, w], m[w])
    _lse_end(m, s, lz)


@njit(cache=True)
def log_partition_block(Ub, Pb, lz):
    """``lz[w]``: :func:`_chain_kernels.log_partition` of block word ``w``, bitwise."""
    _log_partition_lanes(Ub, Pb, lz, Ub.reshape(Ub.size), np.empty(0, dtype=np.int64))


@njit(cache=True)
def _log_partition_lanes(Ub, Pb, lz, fp, o):
    T, R, L = Ub.shape
    _forward_lanes(Ub, Pb, np.empty((T, R, L)), lz, fp, o)


@njit(cache=True)
def sum_product_block(Ub, Pb, node, edge, with_edges, lz):
    """:func:`_chain_kernels.sum_product` of every block word, bitwise: unary marginals ``node
    (T, R, L)``, pairwise ``edge (T-1, R, R, L)`` if ``with_edges``, ``lz``: log Z."""
    _sum_product_lanes(Ub, Pb, node, edge, with_edges, lz, Ub.reshape(Ub.size), np.empty(0, dtype=np.int64))


@njit(cache=True)
def _sum_product_lanes(Ub, Pb, node, edge, with_edges, lz, fp, o):
    """:func:`sum_product_block` (``fp``, ``o``: :func:`_step`; the forward pass packs the whole
    pairwise block, step by step, for the backward pass and the edges)."""
    T, R, L = Ub.shape
    al = np.empty((T, R, L))
    be = np.empty((T, R, L))
    m = np.empty(L)
    s = np.empty(L)
    _forward_lanes(Ub, Pb, al, lz, fp, o)
    for j in range(R):
        for w in range(L):
            be[T - 1, j, w] = 0.0
    for t in range(T - 2, -1, -1):
        for a in range(R):          # terms P[t, a, b] + U[t+1, b] + beta[t+1, b], in that order
            for w in range(L):
                m[w] = Pb[t, a, 0, w] + Ub[t + 1, 0, w] + be[t + 1, 0, w]
            for b in range(1, R):
                for w in range(L):
                    m[w] = max(m[w], Pb[t, a, b, w] + Ub[t + 1, b, w] + be[t + 1, b, w])
            for w in range(L):
                s[w] = 0.0
            for b in range(R):
                for w in range(L):
                    _add_term(s, w, Pb[t, a, b, w] + Ub[t + 1, b, w] + be[t + 1, b, w], m[w])
            _lse_end(m, s, be[t, a])
    for t in range(T):
        for a in range(R):
            for w in range(L):
                z = al[t, a, w] + be[t, a, w] - lz[w]
                e = fexp(z)
                node[t, a, w] = e if z > -_CUT else 0.0
    if with_edges:
        for t in range(T - 1):
            for a in range(R):
                for w in range(L):
                    m[w] = al[t, a, w] - lz[w]          # the row's base
                for b in range(R):
                    for w in range(L):
                        z = m[w] + Pb[t, a, b, w] + Ub[t + 1, b, w] + be[t + 1, b, w]
                        e = fexp(z)
                        edge[t, a, b, w] = e if z > -_CUT else 0.0


@njit(cache=True)
def viterbi_block(Ub, Pb, Y, S):
    """:func:`_chain_kernels.viterbi` of every block word: its labelling ``Y[:T, w]`` (``Y``: at
    least ``T`` rows of ``L``) and max score ``S[w]``, bitwise (ties to the smaller
    label, as there)."""
    _viterbi_lanes(Ub, Pb, Y, S, Ub.reshape(Ub.size), np.empty(0, dtype=np.int64))


@njit(cache=True)
def _viterbi_lanes(Ub, Pb, Y, S, fp, o):
    T, R, L = Ub.shape
    back = np.empty((T, R, L), dtype=np.int64)
    dl = np.empty((R, L))
    new = np.empty((R, L))
    best = np.empty(L)
    arg = np.empty(L, dtype=np.int64)
    for j in range(R):
        for w in range(L):
            dl[j, w] = Ub[0, j, w]
    for t in range(1, T):
        Pt = _step(Pb, t - 1, fp, o)
        for b in range(R):
            for w in range(L):
                best[w] = dl[0, w] + Pt[0, b, w]
                arg[w] = 0
            for a in range(1, R):
                for w in range(L):
                    x = dl[a, w] + Pt[a, b, w]
                    up = x > best[w]
                    best[w] = x if up else best[w]
                    arg[w] = a if up else arg[w]
            for w in range(L):
                new[b, w] = best[w] + Ub[t, b, w]
                back[t, b, w] = arg[w]
        dl, new = new, dl
    for w in range(L):
        best[w] = dl[0, w]
        arg[w] = 0
    for b in range(1, R):
        for w in range(L):
            up = dl[b, w] > best[w]
            best[w] = dl[b, w] if up else best[w]
            arg[w] = b if up else arg[w]
    for w in range(L):
        S[w] = best[w]
        y = arg[w]
        Y[T - 1, w] = y
        for t in range(T - 1, 0, -1):
            y = back[t, y, w]
            Y[t - 1, w] = y


@njit(cache=True, inline="always")
def _merge_top_lanes(sc, t, Pb, b, K, out_s, out_l, out_r, head, cand, best, val):
    """:func:`_chain_kernels._merge_top` lane by lane: the ``K`` largest of ``sc[t, a, r, w] +
    Pb[t, a, b, w]`` (``b < 0``: no pairwise term) into ``out_s``, ``out_l``, ``out_r`` ``(K,
    L)``; each rank's row is chosen by a vectorised compare-and-select over the rows, the
    chosen row's head advanced by a scalar step per lane."""
    R, L = sc.shape[1], sc.shape[3]
    for a in range(R):
        for w in range(L):
            head[a, w] = 0
            c = sc[t, a, 0, w]
            if b >= 0:
                c += Pb[t, a, b, w]
            cand[a, w] = c
    for k in range(K):
        for w in range(L):
            best[w] = -1
            val[w] = -np.inf
        for a in range(R):
            for w in range(L):
                take = (head[a, w] < K) & ((best[w] < 0) | (cand[a, w] > val[w]))
                best[w] = a if take else best[w]
                val[w] = cand[a, w] if take else val[w]
        for w in range(L):
            bw = best[w]
            out_s[k, w] = val[w]
            out_l[k, w] = bw
            r = head[bw, w]
            out_r[k, w] = r
            r += 1
            head[bw, w] = r
            if r < K:
                c = sc[t, bw, r, w]
                if b >= 0:
                    c += Pb[t, bw, b, w]
                cand[bw, w] = c


@njit(cache=True)
def top_k_block(Ub, Pb, K, Y, S, found):
    """:func:`_chain_kernels.top_k_viterbi` of every block word: its ``K`` best labellings ``Y[:,
    :T, w]`` (``Y (K, >= T, L)``) with scores ``S[:, w]`` in decreasing order and their
    number ``found[w]``, bitwise (the same merge, the same ties)."""
    _top_k_lanes(Ub, Pb, K, Y, S, found, Ub.reshape(Ub.size), np.empty(0, dtype=np.int64))


@njit(cache=True)
def _top_k_lanes(Ub, Pb, K, Y, S, found, fp, o):
    T, R, L = Ub.shape
    NEG = -np.inf
    sc = np.full((T, R, K, L), NEG)
    bl = np.zeros((T, R, K, L), dtype=np.int64)
    br = np.zeros((T, R, K, L), dtype=np.int64)
    for b in range(R):
        for w in range(L):
            sc[0, b, 0, w] = Ub[0, b, w]
    head = np.empty((R, L), dtype=np.int64)
    cand = np.empty((R, L))
    best = np.empty(L, dtype=np.int64)
    val = np.empty(L)
    for t in range(1, T):
        _step(Pb, t - 1, fp, o)
        for b in range(R):
            _merge_top_lanes(sc, t - 1, Pb, b, K, sc[t, b], bl[t, b], br[t, b], head, cand, best, val)
            for r in range(K):
                for w in range(L):
                    sc[t, b, r, w] += Ub[t, b, w]
    top_s = np.empty((K, L))
    top_l = np.empty((K, L), dtype=np.int64)
    top_r = np.empty((K, L), dtype=np.int64)
    _merge_top_lanes(sc, T - 1, Pb, -1, K, top_s, top_l, top_r, head, cand, best, val)
    for w in range(L):
        n = 0
        for r in range(K):
            if top_s[r, w] == NEG:
                break
            S[r, w] = top_s[r, w]
            b = top_l[r, w]
            rk = top_r[r, w]
            for t in range(T - 1, -1, -1):
                Y[r, t, w] = b
                if t > 0:
                    b, rk = bl[t, b, rk, w], br[t, b, rk, w]
            n += 1
        found[w] = n


# --- ragged batches ----------------------------------------------------------------------------

def plan(lengths, lanes: int | None = None, min_words: int | None = None):
    """``(blocks (nb, lanes) int64, singles (ns,) int64)``: the words of each length in blocks of
    ``lanes`` words (in order), the rest of a length (fewer than ``lanes`` words) in one more
    block padded by repeating its last word if it has at least ``min_words`` words, else left to
    the single-word kernels (``singles``, increasing); by default :data:`LANES` and
    :data:`MIN_WORDS` as they are at the call."""
    lanes = LANES if lanes is None else int(lanes)
    min_words = MIN_WORDS if min_words is None else int(min_words)
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(lengths, kind="stable")
    cuts = np.flatnonzero(np.diff(lengths[order])) + 1
    blocks, singles = [], []
    for group in np.split(order, cuts):
        full = group.size - group.size % lanes
        blocks.append(group[:full].reshape(-1, lanes))
        rest = group[full:]
        if rest.size >= min_words:
            blocks.append(np.concatenate([rest, np.full(lanes - rest.size, rest[-1])])[None, :])
        else:
            singles.append(rest)
    blocks = np.concatenate(blocks) if blocks else np.empty((0, lanes), dtype=np.int64)
    singles = np.sort(np.concatenate(singles)) if singles else np.empty(0, dtype=np.int64)
    return np.ascontiguousarray(blocks, dtype=np.int64), singles.astype(np.int64)


@njit(cache=True)
def _block_buffers(lengths, blocks, R):
    """Room for the largest block (``L = blocks.shape[1]`` lanes): unary ``(Tmax R L,)`` and pairwise
    ``((Tmax-1) R^2 L,)``; and ``Tmax``."""
    L = blocks.shape[1]
    Tmax = 1
    for k in range(blocks.shape[0]):
        Tmax = max(Tmax, lengths[blocks[k, 0]])
    return np.empty(Tmax * R * L), np.empty(max(Tmax - 1, 1) * R * R * L), Tmax


@njit(cache=True)
def _pack(fu, ustarts, fp, pstarts, ids, T, R, ub, pb):
    """A block of the words ``ids`` in the buffers ``ub``, ``pb``: ``(Ub (T, R, L), Pb (T-1, R, R,
    L), o)``, ``Ub`` filled with the words' unaries (word ``i``'s at ``fu[ustarts[i]:]``), ``Pb``
    left for the kernels to fill step by step (:func:`_step`) from the lanes' pairwise scores at
    ``fp[o[w]:]``."""
    L = ids.shape[0]
    Ub = ub[: T * R * L].reshape((T, R, L))
    Pb = pb[: (T - 1) * R * R * L].reshape((T - 1, R, R, L))
    o = np.empty(L, dtype=np.int64)
    for w in range(L):
        o[w] = ustarts[ids[w]]
    _pack_rows(fu, o, 0, T * R, ub)
    for w in range(L):
        o[w] = pstarts[ids[w]]
    return Ub, Pb, o


@njit(cache=True)
def _word(fu, ustarts, fp, pstarts, i, T, R):
    """Word ``i``'s ``(U (T, R), P (T-1, R, R))``, contiguous copies (for the single-word kernels)."""
    U = fu[ustarts[i]: ustarts[i] + T * R].copy().reshape((T, R))
    P = fp[pstarts[i]: pstarts[i] + (T - 1) * R * R].copy().reshape((T - 1, R, R))
    return U, P


@njit(cache=True)
def log_partitions(fu, ustarts, fp, pstarts, lengths, R, blocks, singles, out):
    """``out[i]``: :func:`_chain_kernels.log_partition` of word ``i`` (bitwise), its blocks by
    :func:`log_partition_block`, its singles one at a time."""
    L = blocks.shape[1]
    ub, pb, _ = _block_buffers(lengths, blocks, R)
    lz = np.empty(L)
    for k in range(blocks.shape[0]):
        ids = blocks[k]
        Ub, Pb, o = _pack(fu, ustarts, fp, pstarts, ids, lengths[ids[0]], R, ub, pb)
        _log_partition_lanes(Ub, Pb, lz, fp, o)
        for w in range(L):
            out[ids[w]] = lz[w]
    for i in singles:
        U, P = _word(fu, ustarts, fp, pstarts, i, lengths[i], R)
        out[i] = log_partition(U, P)


@njit(cache=True)
def sums_products(fu, ustarts, fp, pstarts, lengths, R, blocks, singles, out, ostarts, logz):
    """Word ``i``'s :func:`_chain_kernels.sum_product` marginals ``[unary (T, R) | pairwise (T-1,
    R, R)]`` at ``out[ostarts[i]:]`` and its log Z at ``logz[i]`` (bitwise)."""
    L = blocks.shape[1]
    ub, pb, Tmax = _block_buffers(lengths, blocks, R)
    nb = np.empty(Tmax * R * L)
    eb = np.empty(max(Tmax - 1, 1) * R * R * L)
    lz = np.empty(L)
    for k in range(blocks.shape[0]):
        ids = blocks[k]
        T = lengths[ids[0]]
        Ub, Pb, o = _pack(fu, ustarts, fp, pstarts, ids, T, R, ub, pb)
        node = nb[: T * R * L].reshape((T, R, L))
        edge = eb[: (T - 1) * R * R * L].reshape((T - 1, R, R, L))
        _sum_product_lanes(Ub, Pb, node, edge, True, lz, fp, o)
        for w in range(L):
            logz[ids[w]] = lz[w]
            o[w] = ostarts[ids[w]]
        for j in range(T * R):                  # the lanes innermost: the block read once, in order
            for w in range(L):
                out[o[w] + j] = nb[j * L + w]
        for w in range(L):
            o[w] += T * R
        for j in range((T - 1) * R * R):
            for w in range(L):
                out[o[w] + j] = eb[j * L + w]
    for i in singles:
        T = lengths[i]
        U, P = _word(fu, ustarts, fp, pstarts, i, T, R)
        a = ostarts[i]
        node = out[a: a + T * R].reshape((T, R))
        edge = out[a + T * R: a + T * R + (T - 1) * R * R].reshape((T - 1, R, R))
        logz[i] = sum_product(U, P, node, edge, True)


@njit(cache=True)
def viterbis(fu, ustarts, fp, pstarts, lengths, R, blocks, singles, Y, ystarts, S):
    """Word ``i``'s :func:`_chain_kernels.viterbi` labelling at ``Y[ystarts[i]:]`` and its
    score at ``S[i]`` (bitwise)."""
    L = blocks.shape[1]
    ub, pb, Tmax = _block_buffers(lengths, blocks, R)
    yb = np.empty((Tmax, L), dtype=np.int64)
    sb = np.empty(L)
    for k in range(blocks.shape[0]):
        ids = blocks[k]
        T = lengths[ids[0]]
        Ub, Pb, o = _pack(fu, ustarts, fp, pstarts, ids, T, R, ub, pb)
        _viterbi_lanes(Ub, Pb, yb, sb, fp, o)   # writes the first T positions
        for w in range(L):
            i = ids[w]
            S[i] = sb[w]
            for t in range(T):
                Y[ystarts[i] + t] = yb[t, w]
    for i in singles:
        T = lengths[i]
        U, P = _word(fu, ustarts, fp, pstarts, i, T, R)
        S[i] = viterbi(U, P, Y[ystarts[i]: ystarts[i] + T])


@njit(cache=True)
def top_ks(fu, ustarts, fp, pstarts, lengths, R, K, blocks, singles, Y, ystarts, S, found):
    """Word ``i``'s :func:`_chain_kernels.top_k_viterbi` answer (bitwise): its labellings ``Y[K
    ystarts[i]:]`` as a ``(K, T)`` array, scores ``S[i]`` and their number ``found[i]``."""
    L = blocks.shape[1]
    ub, pb, Tmax = _block_buffers(lengths, blocks, R)
    yb = np.empty((K, Tmax, L), dtype=np.int64)
    sb = np.empty((K, L))
    fb = np.empty(L, dtype=np.int64)
    for k in range(blocks.shape[0]):
        ids = blocks[k]
        T = lengths[ids[0]]
        Ub, Pb, o = _pack(fu, ustarts, fp, pstarts, ids, T, R, ub, pb)
        _top_k_lanes(Ub, Pb, K, yb, sb, fb, fp, o)      # writes the first T positions
        for w in range(L):
            i = ids[w]
            found[i] = fb[w]
            o = K * ystarts[i]
            for r in range(fb[w]):
                S[i, r] = sb[r, w]
                for t in range(T):
                    Y[o + r * T + t] = yb[r, t, w]
    for i in singles:
        T = lengths[i]
        U, P = _word(fu, ustarts, fp, pstarts, i, T, R)
        o = K * ystarts[i]
        found[i] = top_k_viterbi(U, P, K, Y[o: o + K * T].reshape((K, T)), S[i])
