"""Benchmark: Casimir-SVRG-adapt on CoNLL-2003 NER against python-crfsuite, and the top-K oracle against C.

Usage: python bench/bench_ner.py [--quick] [--c 0.1] [--epochs 50] [--crf-iterations 100] [--cache DIR]

Data: CoNLL-2003 (eng.train / testa / testb) through the data layer (cache -> STRUCTPRED_MIRROR
-> download, sha256-checked), the reference code's hashed window features
(:mod:`structpred.features.hashed`, 2^16 - 1 weights), 8 IOB1 tags, ``lam = c / n``.

1. **Time to F1.**  Casimir-SVRG-adapt with the reference's settings (lr 0.02, mu0 = 2 with the
   ``expo`` decay, kappa = lam, extrapolation warm start, K = 5) for ``--epochs`` epochs; after
   each epoch the testb token F1 (the reference's metric: every tag but O, weighted); the
   training time (evaluation excluded) until the F1 first comes within 0.5 point of its final
   value.  Against it, in the same process: python-crfsuite (CRFsuite, C++, L-BFGS on the
   CRF likelihood, its default ``c2 = 1``, ``--crf-iterations`` iterations) trained on the
   same window attributes: the word at offsets 0, +-1, +-2 (our vocabulary ids, unknown
   words one id), the POS and chunk tags at t, t+-1, each paired with the current tag, plus
   tag transitions.  Our templates that pair the *previous* tag with the window have no
   CRFsuite counterpart (a first-order CRFsuite model pairs attributes with the current
   label only): CRFsuite sees 11 of our 23 label-dependent templates.  Printed: both training
   times, both final F1s, and the ratio time(CRFsuite) / time(ours to within 0.5 point).
2. **Top-K oracle.**  Loss-augmented top-K (K = 5) Viterbi over the testb sentences (their
   own lengths, 8 tags) at the trained weights: sentences / second of the public
   ``Chain.top_k`` (one Python call per sentence), of our numba kernel looped in compiled
   code, and of a plain C list Viterbi compiled in the benchmark (``bench_chain.py``'s, with
   the same merge and tie-breaking) looped in C; ratio numba / C (> 1: we are faster).

``--quick`` uses the first 2000 training sentences, 5 epochs and 20 CRFsuite iterations.

Per-epoch cost on the full training data (2 shared cores, medians of 3, 2026-11-23): the compiled
passes (``solvers/_compiled_passes.py`` on ``outputs/_chain_oracles.py``) against the per-sample
Python steps they replace (bitwise the same results): SVRG 6.4 -> 1.7 s, Casimir-SVRG-adapt
6.3 -> 1.5 s, SGD 2.7 -> 0.8 s, BCFW (OpenBLAS on 1 thread) 4.2 -> 2.0 s; evaluation (train
objective, testa / testb objectives and F1) 2.6 -> 0.65 s CPU.
"""

from __future__ import annotations

import argparse
import ctypes
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_chain  # noqa: E402  (the C list Viterbi and the timing helper)

from structpred.data.acquire import fetch  # noqa: E402
from structpred.data.parsers import parse_view  # noqa: E402

log = logging.getLogger("bench_ner")

C_RAGGED = r"""
/* top_k over n sentences of their own lengths: U rows offs[i]..offs[i+1], P blocks offs[i]-i.. */
double top_k_ragged(long n, const long *offs, int R, int K, const double *U, const double *P,
                    int64_t *Y, double *S)
{
    double acc = 0.0;
    for (long i = 0; i < n; i++) {
        int T = (int)(offs[i + 1] - offs[i]);
        acc += top_k(T, R, K, U + offs[i] * R, P + (offs[i] - i) * R * R, Y, S);
    }
    return acc;
}
"""


def load_parts(cache: str, quick: bool):
    from structpred.papers.casimir.ner import window_parts

    arrays = parse_view("conll2003", fetch("conll2003", Path(cache) / "conll2003"))
    return window_parts(arrays, threshold=2, subsample={"train": 2000} if quick else None)


def train_ours(parts, tags, c: float, epochs: int):
    """Casimir-SVRG-adapt: ``(per-epoch (training seconds, testb token F1), W, seconds / epoch)``."""
    from structpred.metrics import token_f1
    from structpred.outputs import Chain
    from structpred.solvers import CasimirSVRG
    from structpred.solvers.driver import run
    from structpred.solvers.problem import check_problem
    from structpred.surrogates import Hinge, TopKSmoothedHinge

    X, y = parts["train"]
    space = Chain(len(tags), "hamming", normalize=False, joint_map="hashed_window")
    problem = check_problem(space, X, y, c / X.n)
    test = check_problem(space, *parts["testb"], c / X.n, like=problem.fmap)
    labels = [i for i, t in enumerate(tags) if t != "O"]
    hinge = Hinge(space)

    def evaluate(W):
        return {"f1": token_f1(test.y, hinge.predict(test.fmap.scores(W)), labels)}

    rule = CasimirSVRG(TopKSmoothedHinge(space, mu=2.0, K=5), mu0=2.0, lr=0.02, mu_schedule="expo",
                       warm_start="extrapolation")
    res = run(rule, problem, n_passes=epochs, random_state=0, evaluate=evaluate)
    return [(h["seconds"], h["f1"]) for h in res.history], res.W, space, test


def crf_attributes(X, names):
    """CRFsuite attribute lists of every sentence: our window items paired with the current tag."""
    tok = X.tokens
    out = []
    for i in range(X.n):
        a, b = X.offsets[i], X.offsets[i + 1]
        T = b - a
        seq = []
        for t in range(T):
            def at(k, col, pad):
                j = t + k
                return str(tok[a + j, col]) if 0 <= j < T else pad
            seq.append([f"w0={at(0, 0, '')}", f"w-1={at(-1, 0, 'START')}", f"w+1={at(1, 0, 'STOP')}",
                        f"w-2={at(-2, 0, 'START')}", f"w+2={at(2, 0, 'STOP')}",
                        f"p0={at(0, 1, '')}", f"p-1={at(-1, 1, 'START')}", f"p+1={at(1, 1, 'STOP')}",
                        f"c0={at(0, 2, '')}", f"c-1={at(-1, 2, 'START')}", f"c+1={at(1, 2, 'STOP')}"])
        out.append(seq)
    return out


def train_crfsuite(parts, tags, iterations: int, workdir: Path):
    """python-crfsuite L-BFGS on the same window attributes: ``(seconds, testb token F1)``."""
    import pycrfsuite

    from structpred.metrics import token_f1

    X, y = parts["train"]
    trainer = pycrfsuite.Trainer(verbose=False)
    for xseq, yseq in zip(crf_attributes(X, tags), y):
        trainer.append(xseq, [tags[k] for k in yseq])
    trainer.set_params({"c1": 0.0, "c2": 1.0, "max_iterations": iterations,
                        "feature.possible_transitions": True})
    model = str(workdir / "ner.crfsuite")
    start = time.perf_counter()
    trainer.train(model)
    seconds = time.perf_counter() - start
    tagger = pycrfsuite.Tagger()
    tagger.open(model)
    index = {t: i for i, t in enumerate(tags)}
    Xt, yt = parts["testb"]
    pred = [np.array([index[t] for t in tagger.tag(xseq)]) for xseq in crf_attributes(Xt, tags)]
    return seconds, token_f1(yt, pred, [i for i, t in enumerate(tags) if t != "O"])


def build_c(tmpdir):
    so, line = bench_chain.compile_shared(bench_chain.C_SOURCE + C_RAGGED, tmpdir, "topk")
    if so is None:
        return None, line
    f = so["top_k_ragged"]
    vp = ctypes.c_void_p
    f.argtypes = [ctypes.c_long, vp, ctypes.c_int, ctypes.c_int, vp, vp, vp, vp]
    f.restype = ctypes.c_double
    return f, line


def top_k_bench(space, test, W, K: int, seconds: float):
    """Sentences / s of the loss-augmented top-K oracle: Python API, numba loop, C loop."""
    from numba import njit

    from structpred.outputs import _chain_kernels as KK

    V = test.fmap.scores(W)
    R = space.n_labels
    Us, Ps = [], []
    for v, lab in zip(V, test.y):
        U, P = space._scores(v)
        U = U + (np.arange(R)[None, :] != lab[:, None])  # + Hamming loss, unnormalised
        Us.append(U)
        Ps.append(P.reshape(-1, R, R))
    U_all = np.ascontiguousarray(np.concatenate(Us))
    P_all = np.ascontiguousarray(np.concatenate(Ps))
    offs = np.concatenate([[0], np.cumsum([u.shape[0] for u in Us])]).astype(np.int64)
    n = len(Us)
    Tmax = int(np.diff(offs).max())

    @njit(cache=False)
    def numba_loop(reps, offs, U, P, K, S):
        acc = 0.0
        for _ in range(reps):
            for i in range(offs.shape[0] - 1):
                a, b = offs[i], offs[i + 1]
                Y = np.empty((K, b - a), dtype=np.int64)
                acc += KK.top_k_viterbi(U[a:b], P[a - i: b - i - 1], K, Y, S)
        return acc

    S = np.empty(K)
    numba_loop(1, offs, U_all, P_all, K, S)  # compile
    rates = {"method": bench_chain.throughput(lambda m: [space.top_k(V[i % n], test.y[i % n], K) for i in range(m)],
                                              seconds) }
    rates["loop numba"] = n * bench_chain.throughput(lambda m: numba_loop(m, offs, U_all, P_all, K, S), seconds)
    with tempfile.TemporaryDirectory() as tmp:
        c_fn, how = build_c(tmp)
        if c_fn is not None:
            Y = np.empty(K * Tmax, dtype=np.int64)
            SC = np.empty(K)
            ptr = [offs.ctypes.data, U_all.ctypes.data, P_all.ctypes.data, Y.ctypes.data, SC.ctypes.data]

            def c_loop(m):
                for _ in range(m):
                    c_fn(n, ptr[0], R, K, ptr[1], ptr[2], ptr[3], ptr[4])

            rates["loop C"] = n * bench_chain.throughput(c_loop, seconds)
            # the same top-K scores on every sentence
            ours = numba_loop(1, offs, U_all, P_all, K, S)
            theirs = c_fn(n, ptr[0], R, K, ptr[1], ptr[2], ptr[3], ptr[4])
            print(f"C reference: {how}; sum of found counts ours {ours:.0f}, C {theirs:.0f}")
        else:
            print(how)
    return rates, n, float(np.mean(np.diff(offs)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--c", type=float, default=0.1, help="lam = c / n")
    ap.add_argument("--epochs", type=int, default=None, help="Casimir-SVRG-adapt epochs (50)")
    ap.add_argument("--crf-iterations", type=int, default=None, help="CRFsuite L-BFGS iterations (100)")
    ap.add_argument("--cache", default=".cache/bench", help="folder for the raw files")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    epochs = args.epochs or (5 if args.quick else 50)
    iterations = args.crf_iterations or (20 if args.quick else 100)
    parts, tags = load_parts(args.cache, args.quick)
    X, _ = parts["train"]
    print(f"CoNLL-2003: {X.n} training sentences, {len(tags)} tags, lam = {args.c:g}/n")

    curve, W, space, test = train_ours(parts, tags, args.c, epochs)
    final = curve[-1][1]
    reach = next(s for s, f in curve if f >= final - 0.005)
    print("\n1. time to F1 (testb token F1, the reference's metric)")
    print(f"  Casimir-SVRG-adapt: {epochs} epochs in {curve[-1][0]:.1f} s ({curve[-1][0] / epochs:.2f} s/epoch), "
          f"final F1 {final:.4f}; within 0.5 point after {reach:.1f} s")
    with tempfile.TemporaryDirectory() as tmp:
        crf_seconds, crf_f1 = train_crfsuite(parts, tags, iterations, Path(tmp))
    print(f"  python-crfsuite (L-BFGS, {iterations} iterations, c2 = 1): {crf_seconds:.1f} s, final F1 {crf_f1:.4f}")
    print(f"  ratio time(crfsuite) / time(ours to within 0.5 point of final F1) = {crf_seconds / reach:.2f}")

    print("\n2. loss-augmented top-K (K = 5) Viterbi on testb at the trained weights")
    rates, n, mean_len = top_k_bench(space, test, W, 5, 0.03 if args.quick else 0.3)
    print(f"  {n} sentences, mean length {mean_len:.1f}, 8 tags")
    for name, rate in rates.items():
        print(f"  {name:11s} {rate:12.0f} sentences/s")
    if "loop C" in rates:
        print(f"  ratio numba / C (loops) = {rates['loop numba'] / rates['loop C']:.2f}")


if __name__ == "__main__":
    main()
