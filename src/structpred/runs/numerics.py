"""Numerics fingerprints: which compiled code paths still compute what the run archive computed.

A *path* is one output space with one method family (``chain.M4N``: GBCFW with the chain's SP-MP
max-min oracle; ``qs.cauchy``: kernel-ridge weights and the Cauchy loss's decoding).  Its
fingerprint is the sha256 of the exact bits that a tiny deterministic fit on fixed seeded inputs
produces (weights, predictions, gaps): a change of one floating-point operation anywhere the fit
runs (kernel, oracle, solver pass, feature map) changes it, a refactor that keeps the bits does not.

Every job of the workflow records, beside its result file, the commit it ran at, the machine class
it ran on and the fingerprints of the paths its experiment declares for it
(:meth:`structpred.papers.registry.Experiment.numeric_paths`), so that
``structpred runs status`` can say which archived experiments today's code no longer reproduces
(:mod:`structpred.runs.staleness`), one path at a time: a change to the permutation kernels
does not mark the chain experiments stale.

Bits depend on the machine too (numba compiles for the host CPU, numpy and OpenBLAS pick their
kernels by CPU): fingerprints are compared only within one :func:`machine_class`.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections.abc import Callable
from functools import lru_cache
from importlib.metadata import distributions
from pathlib import Path

import numpy as np
from llvmlite import binding
from numba.core import config as numba_config
from numpy._core._multiarray_umath import __cpu_features__ as features
from threadpoolctl import threadpool_info, threadpool_limits

from structpred.errors import ConfigError
from structpred.estimators import CRF, M3N, M4N, QS
from structpred.estimators.methods import make_estimator
from structpred.features import NystromGaussian, Sequences
from structpred.features.hashed import WindowTokens
from structpred.features.sequences import difference_edges
from structpred.features.tree_hashed import TreeFeatures
from structpred.io import atomic_open
from structpred.report.archive_costs import record_path
from structpred.outputs import Chain, Multiclass, PairwiseRanking, Permutation, Tree
from structpred.outputs.histogram import GaussianHistogram, Hellinger
from structpred.features.tree_array import TreeArray
from structpred.papers.agm.emotion import loss_space, method_estimator
from structpred.papers.agm.srl import estimator
from structpred.papers.casimir.ner import make_rule
from structpred.papers.matrix.methods import estimator as matrix_estimator
from structpred.papers.qs.pairwise_rankers import Preferences, fit_path
from structpred.papers.qs.robust import _fit_predict
from structpred.solvers import check_problem, run
from structpred.solvers.kernel_ridge import RidgeWeights

#: path name -> function returning the arrays whose bits are its fingerprint
PATHS: dict[str, Callable[[], list]] = {}


def path(name: str):
    """Decorator: register a fingerprint path."""
    def add(fn):
        PATHS[name] = fn
        return fn
    return add


def _bits(values) -> bytes:
    """The exact bits of ``values`` (arrays, lists of arrays, numbers), shapes included."""
    out = []
    for v in values:
        if isinstance(v, (list, tuple)):
            out.append(b"[" + _bits(v) + b"]")
            continue
        a = np.ascontiguousarray(np.asarray(v))
        if a.dtype == object:
            raise TypeError("a fingerprint path returned an object array")
        a = a.astype(np.float64) if a.dtype.kind in "fb" else a.astype(np.int64)
        out.append(repr(a.shape).encode() + a.dtype.str.encode() + a.tobytes())
    return b"|".join(out)


@lru_cache(maxsize=None)
def fingerprint(name: str) -> str:
    """The fingerprint of path ``name``: first 16 hex digits of the sha256 of its outputs' bits,
    computed on one BLAS thread, as a job of one thread runs: OpenBLAS splits a long dot product
    (the 65,535 hashed NER weights) across threads, which changes its last bits, so a status taken
    beside the jobs with more threads would otherwise call them stale."""
    if name not in PATHS:
        raise ConfigError(f"unknown numerics path {name!r}; known: {', '.join(sorted(PATHS))}")
    with threadpool_limits(limits=1, user_api="blas"):
        return hashlib.sha256(_bits(PATHS[name]())).hexdigest()[:16]


#: environment variables that change which kernels run, and so the bits
_KERNEL_ENV = ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_ENABLE_AVX", "NUMBA_OPT", "NUMBA_FASTMATH",
               "NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES", "OPENBLAS_CORETYPE", "STRUCTPRED_VECTOR_WIDTH")


@lru_cache(maxsize=1)
def code_key() -> str:
    """What a fingerprint is a function of besides its inputs: the sha256 of structpred's source
    files, the installed packages' versions, the kernel-choosing environment variables and the
    :func:`machine_class`.  Equal keys give equal fingerprints, so they are cached under it."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    versions = sorted(f"{d.metadata['Name']}=={d.version}" for d in distributions() if d.metadata["Name"])
    digest.update("\n".join(versions).encode())
    digest.update(repr([(k, os.environ.get(k)) for k in _KERNEL_ENV]).encode())
    digest.update(machine_class().encode())
    return digest.hexdigest()[:24]


def cache_dir() -> Path:
    """Where fingerprints are cached (``$STRUCTPRED_CACHE``, else ``$XDG_CACHE_HOME/structpred``,
    else ``~/.cache/structpred``), one file per :func:`code_key` and path."""
    base = os.environ.get("STRUCTPRED_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "structpred"
    return Path(base) / "fingerprints"


def fingerprints(names=None) -> dict[str, str]:
    """``{path: fingerprint}`` of ``names`` (default: every path), in name order; each read from the
    cache (:func:`cache_dir`) when this code on this machine class computed it before (a
    ``runs status`` then takes seconds, not minutes), else computed and cached."""
    out = {}
    folder = cache_dir() / code_key()
    for name in sorted(PATHS if names is None else set(names)):
        cached = folder / name
        try:
            text = cached.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            text = ""
        if len(text) == 16 and all(c in "0123456789abcdef" for c in text):
            out[name] = text
            continue
        out[name] = fingerprint(name)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with atomic_open(cached, "w") as fh:
                fh.write(out[name] + "\n")
        except OSError:
            pass   # a read-only home: uncached, still right
    return out


@lru_cache(maxsize=1)
def machine_class() -> str:
    """What decides the bits besides the code: the CPU's vendor and the target numba (LLVM)
    compiles for, the SIMD level numpy dispatches to, and the BLAS kernel set, e.g.
    ``x86_64 AuthenticAMD znver4 | numpy AVX512_SKX | openblas Zen``."""
    vendor = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("vendor_id"):
                    vendor = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        levels = ("AVX512_SKX", "AVX2", "SSE42", "ASIMD")
        simd = next((lvl for lvl in levels if features.get(lvl)), "baseline")
    except ImportError:  # pragma: no cover (numpy < 2)
        simd = "unknown"
    try:
        # numpy's own BLAS: other packages bundle theirs (scs ships an OpenBLAS 0.3.15 that calls
        # this CPU "Zen" where numpy's 0.3.31 says "SkylakeX"), and which one loads first depends
        # on what was imported before
        found = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        ours = [i for i in found if Path(i.get("filepath", "")).parent.name.startswith("numpy")]
        blas = next((f"{i['internal_api']} {i.get('architecture')}" for i in ours or found), "blas unknown")
    except ImportError:  # pragma: no cover
        blas = "blas unknown"
    cpu = binding.get_host_cpu_name()
    if numba_config.CPU_NAME and numba_config.CPU_NAME != "host":   # a target the user chose (NUMBA_CPU_NAME)
        cpu = f"{cpu} (numba {numba_config.CPU_NAME})"
    return f"{platform.machine()} {vendor} {cpu} | numpy {simd} | {blas}"


def record(paths, commit: str) -> dict:
    """What a job writes beside its result file: commit, machine class, its paths' fingerprints."""
    return {"commit": commit, "machine": machine_class(), "fingerprints": fingerprints(paths)}


def settings_digest(settings: dict) -> str:
    """A job's settings (:meth:`structpred.papers.registry.Experiment.settings`) as 16 hex digits of
    the sha256 of their canonical JSON: its record keeps them, so that ``structpred runs status``
    sees a job whose config block changed since it ran (a widened grid moves no fingerprint)."""
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def write_record(rows_path, paths, commit: str, cpu_seconds: float | None = None, cpu_partial: bool = False,
                 inputs: dict | None = None, settings: dict | None = None, fit_threads: int = 1) -> None:
    """Write :func:`record` to ``<rows_path without .csv>.numerics.json``, atomically, with the job's
    CPU seconds (:mod:`structpred.runs.job_cpu`) when given; ``cpu_partial``: they miss the CPU of
    an earlier, stopped run that this job resumed.  ``inputs``: the other jobs' result files it read,
    ``{path relative to the archive: its digest}`` (:func:`structpred.runs.archive.result_digest`), so
    that ``structpred runs status`` sees when one of them is re-archived with other numbers.
    ``settings``: the job's settings, kept as their :func:`settings_digest`.  ``fit_threads``: the
    numba threads each of its fits ran on (above 1, its rows' wall seconds are those of a fit on that many
    cores and its CPU seconds their sum: :mod:`structpred.runs.makespan`); kept only above 1."""
    rec = record(paths, commit)
    if fit_threads > 1:
        rec["fit_threads"] = int(fit_threads)
    if settings is not None:
        rec["settings"] = settings_digest(settings)
    if cpu_seconds is not None:
        rec.update(cpu_seconds=round(float(cpu_seconds), 3), cpu_partial=bool(cpu_partial))
    if inputs:
        rec["inputs"] = dict(sorted(inputs.items()))
    with atomic_open(record_path(rows_path), "w") as fh:
        fh.write(json.dumps(rec, indent=1, sort_keys=True) + "\n")


# --- the paths ------------------------------------------------------------------------------------
# Each fit is tiny (a few passes on a handful of examples) so that all paths together cost seconds
# once compiled; inputs come from fixed seeds.

def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little"))


def _table(name: str, n: int = 24, d: int = 5, k: int = 4):
    rng = _rng(name)
    X = rng.normal(size=(n, d))
    y = np.argmax(X[:, :k] + 0.5 * rng.normal(size=(n, k)), axis=1)
    return X, y


def _fit(est, X, y) -> list:
    """A fit's weights, history (timings excluded) and training predictions (QS: its loss-trick
    weights ``alpha(x)`` on the training inputs instead of weights and history)."""
    est.fit(X, y)
    if not hasattr(est, "coef_"):
        return [est.weights(X)] + _fit_predictions(est.predict(X))
    out = [est.coef_, est.history_.drop(columns=["seconds"], errors="ignore").to_numpy(dtype=float)]
    return out + _fit_predictions(est.predict(X))


def _fit_predictions(pred) -> list:
    return [np.concatenate([np.asarray(p).ravel() for p in pred]) if isinstance(pred, list) else pred]


def _table_fits(method: str, variants: list[dict], losses=("zero_one", "ordinal")) -> list:
    X, y = _table(f"table.{method}")
    return [_fit(make_estimator(method, loss=loss, n_labels=4, lam=0.1, n_passes=4, random_state=0,
                                eval_every=2, **v), X, y) for loss in losses for v in variants]


@path("multiclass.M3N")
def _multiclass_m3n():
    return _table_fits("M3N", [{}, {"steps": "pairwise", "sampling": "gap", "block_steps": 5},
                               {"averaging": True, "step": "fixed"}])


@path("multiclass.CRF")
def _multiclass_crf():
    return _table_fits("CRF", [{}])


@path("multiclass.M4N")
def _multiclass_m4n():
    return _table_fits("M4N", [{"n_iter_oracle": 5}, {"n_iter_oracle": 5, "warm_start_oracle": False},
                               {"game": "exact", "step": "line_search", "sampling": "gap"}])


def _rankings(name: str, n: int = 16, d: int = 4, M: int = 4):
    rng = _rng(name)
    X = rng.normal(size=(n, d))
    y = np.argsort(np.argsort(-(X[:, :M] + 0.3 * rng.normal(size=(n, M))), axis=1), axis=1)
    return X, y


@path("permutation.M3N")
def _permutation_m3n():
    X, y = _rankings("permutation.M3N")
    return _fit(M3N(loss="permutation_hamming", lam=0.1, n_passes=3, random_state=0), X, y)


@path("permutation.M4N")
def _permutation_m4n():
    X, y = _rankings("permutation.M4N")
    return _fit(M4N(loss="permutation_hamming", lam=0.1, n_passes=3, n_iter_oracle=5, random_state=0), X, y)


def _matrix_path(method: str) -> Callable[[], list]:
    """The path of the matrix's ``method`` (:mod:`structpred.papers.matrix.methods`) on multi-class,
    ordinal and ranking tables (the matrix's other cells run the paper tables' methods and paths)."""
    def outputs() -> list:
        out = []
        name = f"matrix.{method}"
        for space, (X, y) in ((Multiclass.zero_one(4), _table(name)), (Multiclass.ordinal(4), _table(name + ".ord")),
                              (Permutation(4), _rankings(name))):
            budget = {"kernel": "linear"} if method == "QS" else {"n_passes": 3}
            est = matrix_estimator(method, space, 0.1, budget, 0).fit(X, y)
            out += [est.predict(X), getattr(est, "coef_", np.zeros(0)), est.task_loss(X, y)]
        return out
    return outputs


for _method in ("AGM", "QS", "SGD", "Casimir-SVRG"):
    path(f"matrix.{_method}")(_matrix_path(_method))


def _dense_chains(name: str, n: int = 10, d: int = 4, k: int = 3):
    rng = _rng(name)
    lengths = rng.integers(1, 6, n)
    X = [rng.normal(size=(T, d)) for T in lengths]
    y = [np.argmax(x[:, :k] + 0.5 * rng.normal(size=(len(x), k)), axis=1) for x in X]
    return X, y


@path("chain.M3N")
def _chain_m3n():
    return _fit(M3N(loss="sequence_hamming", n_labels=3, lam=0.1, n_passes=3, random_state=0),
                *_dense_chains("chain.M3N"))


@path("chain.CRF")
def _chain_crf():
    return _fit(CRF(loss="sequence_hamming", n_labels=3, lam=0.1, n_passes=3, random_state=0),
                *_dense_chains("chain.CRF"))


@path("chain.M4N")
def _chain_m4n():
    X, y = _dense_chains("chain.M4N")
    return [_fit(M4N(loss="sequence_hamming", n_labels=3, lam=0.1, n_passes=3, n_iter_oracle=4,
                     warm_start_oracle=warm, random_state=0), X, y) for warm in (True, False)]


def _emotion_chains(name: str, n: int = 8):
    """Sequences with emotion groups and edge features, as AGM Table 1's."""
    rng = _rng(name)
    lengths = rng.integers(2, 6, n)
    offsets = np.r_[0, np.cumsum(lengths)]
    frames = np.hstack([rng.normal(size=(offsets[-1], 3)), np.ones((offsets[-1], 1))])
    X = Sequences(frames, offsets, rng.integers(0, 2, n), 2, difference_edges(frames[:, :3], offsets))
    y = [np.clip(np.round(1 + frames[a:b, 0]), 0, 2).astype(np.int64) for a, b in zip(offsets[:-1], offsets[1:])]
    return X, y


def _emotion_fits(method: str, settings: dict, losses=("absolute", "weighted_squared")):
    X, y = _emotion_chains(f"chain_game.{method}")
    base = {"adagrad_step": 0.1, "oracle_iterations": 4, "game": "exact", "coef_init": 0.0}
    return [_fit(method_estimator(method, loss_space(loss), 0.01, {**base, **settings}, 3, 0), X, y)
            for loss in losses]


@path("chain_game.AGM")
def _chain_game_agm():
    return _emotion_fits("AGM", {})


@path("chain_game.AGM-SPMP")
def _chain_game_agm_spmp():
    return _emotion_fits("AGM", {"game": "spmp"})


@path("chain_game.SSVM")
def _chain_game_ssvm():
    return _emotion_fits("SSVM", {})


@path("chain_game.CRF")
def _chain_game_crf():
    return _emotion_fits("CRF", {})


@path("chain_game.M4N")
def _chain_game_m4n():
    return _emotion_fits("M4N", {})


def _chain_game_matrix(method: str) -> Callable[[], list]:
    """The matrix's ``method`` on AGM Table 1's chains (``matrix``'s emotion column)."""
    return lambda: _emotion_fits(method, {"budget": {"kernel": "linear"}} if method == "QS" else {})


for _method in ("QS", "SGD", "Casimir-SVRG"):
    path(f"chain_game.{_method}")(_chain_game_matrix(_method))


@path("chain_game.qp")
def _chain_game_qp():
    converged = {"rtol": 1e-3, "eval_every": 1, "options": {"solver": "qp"}}
    return _emotion_fits("AGM", converged, ("absolute",)) + _emotion_fits("SSVM", converged, ("absolute",))


def _trees(name: str, n: int = 10, R: int = 3):
    """Random trees with hashed node and edge features whose first node feature names the label."""
    rng = _rng(name)
    sizes = rng.integers(2, 6, n)
    parents = np.concatenate([np.r_[-1, [rng.integers(0, t) for t in range(1, T)]] for T in sizes])
    offsets = np.r_[0, np.cumsum(sizes)]
    nlen = rng.integers(1, 4, offsets[-1])
    elen = rng.integers(0, 3, offsets[-1])
    elen[offsets[:-1]] = 0
    labels = rng.integers(0, R, offsets[-1])
    node_ptr = np.r_[0, np.cumsum(nlen)]
    node_ids = rng.integers(0, 2**32, nlen.sum())
    node_ids[node_ptr[:-1]] = 1000 + labels
    X = TreeFeatures(offsets, parents, node_ptr, node_ids, np.r_[0, np.cumsum(elen)],
                     rng.integers(0, 2**32, elen.sum()), 8)
    y = [TreeArray(labels[a:b], X.trees[i]) for i, (a, b) in enumerate(zip(offsets[:-1], offsets[1:]))]
    return X, y


def _tree_fit(method: str) -> list:
    X, y = _trees(f"tree.{method}")
    settings = {"n_passes": 3, "adagrad_step": 0.1, "game": "exact", "oracle_iterations": 4,
                "budget": {"kernel": "linear"} if method == "QS" else {}}
    return _fit(estimator(method, Tree(3, "absolute", joint_map="tree_hashed"), 0.01, settings, 0), X, y)


for _method in ("AGM", "CRF", "SSVM", "M4N", "SGD", "Casimir-SVRG", "QS"):   # the last three: the matrix's SRL cells
    path(f"tree.{_method}")(lambda m=_method: _tree_fit(m))


def _tagging(n: int = 16):
    """Toy sentences for the hashed window chain (CoNLL-2003's map)."""
    rng = _rng("ner")
    lengths = rng.integers(1, 7, n)
    words = rng.integers(1, 30, lengths.sum())
    X = WindowTokens(np.c_[words, rng.integers(0, 5, words.size), rng.integers(0, 3, words.size)],
                     np.r_[0, np.cumsum(lengths)])
    tags = np.where(rng.random(words.size) < 0.8, words % 4, rng.integers(0, 4, words.size))
    return X, np.split(tags, np.cumsum(lengths)[:-1])


#: casimir_ner's methods and tiny versions of their settings (the compiled passes each runs)
_NER = {"SGD": [{"eta0": 0.04, "t0": 50}], "BCFW": [{}],
        "SVRG": [{"lr": 0.02, "mu": 1, "K": 5}, {"lr": 0.02, "mu": 1, "K": 5, "smoothing": "nonsmooth"}],
        "Casimir-SVRG-const": [{"L": 32, "mu": 1, "K": 5, "mu_schedule": "const", "warm_start": w}
                               for w in ("prev-iterate", "prox-centre", "extrapolation")],
        "Casimir-SVRG-adapt": [{"lr": 0.02, "mu": 2, "K": 5, "mu_schedule": "expo", "warm_start": "extrapolation"}]}


def _ner_fit(method: str) -> list:
    X, y = _tagging()
    space = Chain(4, "hamming", normalize=False, joint_map="hashed_window")
    out = []
    for hp in _NER[method]:
        problem = check_problem(space, X, y, 0.1 / X.n)
        res = run(make_rule(method, {"n_passes": 2, **hp}, space), problem, n_passes=2,
                  random_state=np.random.default_rng(3))
        out += [res.W, [[v for k, v in sorted(h.items()) if k != "seconds"] for h in res.history]]
    return out


for _method in _NER:
    path(f"ner.{_method}")(lambda m=_method: _ner_fit(m))


def _ner_heldout_fit(method: str) -> list:
    """``casimir_ner_heldout``'s ``method`` (the matrix's estimator) on the toy sentences."""
    X, y = _tagging()
    budget = {"kernel": "linear"} if method == "QS" else {"n_passes": 2, **({"n_iter_oracle": 3} if method == "M4N" else {})}
    return _fit(matrix_estimator(method, Chain(4, "hamming", normalize=False, joint_map="hashed_window"), 0.1 / X.n,
                                 budget, 0), X, y)


for _method in ("M3N", "CRF", "M4N", "AGM", "QS", "SGD", "Casimir-SVRG"):
    path(f"ner_heldout.{_method}")(lambda m=_method: _ner_heldout_fit(m))


@path("features.nystrom")
def _nystrom():
    X = _rng("nystrom").normal(size=(40, 6))
    return [NystromGaussian(n_components=12, random_state=0).fit(X[:30]).transform(X[30:])]


@path("qs.histogram")
def _qs_histogram():
    rng = _rng("qs.histogram")
    X, Y = rng.random((20, 6)), rng.random((20, 4)) + 0.01
    Y /= Y.sum(axis=1, keepdims=True)
    return [QS(loss=space, kernel="gaussian", sigma=1.0, lam=1e-2).fit(X[:15], Y[:15]).predict(X[15:])
            for space in (Hellinger(4), GaussianHistogram(4, 1.0))]


@path("qs.cauchy")
def _qs_cauchy():
    rng = _rng("qs.cauchy")
    X, y = rng.random((30, 1)), rng.standard_cauchy(30)
    return [_fit_predict(m, X[:24], y[:24], X[24:], 0.2, 1e-3, 1.0) for m in ("QS", "RNW", "KRR")]


@path("qs.ranking")
def _qs_ranking():
    rng = _rng("qs.ranking")
    X = rng.normal(size=(12, 3))
    R = rng.integers(0, 6, (12, 5)).astype(float)
    alpha = RidgeWeights(X[:9] @ X[:9].T + 1.0, 0.1)(X[:9] @ X[9:].T + 1.0)
    return [alpha] + [PairwiseRanking(5).weighted_decode(a, R[:9]) for a in alpha]


@path("qs.pairwise_baselines")
def _qs_pairwise_baselines():
    rng = _rng("qs.pairwise_baselines")
    X = rng.normal(size=(10, 3))
    R = rng.integers(0, 6, (10, 6)).astype(float)
    prefs = Preferences.from_ratings(X, R)
    settings = {"ssvm_passes": 3, "lbfgs_max_iter": 20, "lbfgs_tol": 1e-8}
    return [fit_path(m, prefs, [1.0, 0.1], settings, np.random.default_rng(0))
            for m in ("Linear", "Hinge", "Logistic", "SVM-Struct")]
