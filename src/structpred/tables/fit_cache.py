"""Per-fit checkpoints of a job's hyper-parameter grid, so that a job stopped midway resumes.

A job that fits one model per lambda (M4N Table 1: ten fits of up to an hour each on OCR)
is only written when its last fit ends; a run cut off by a session's end or a cluster's time
limit would lose every finished fit.  An unfinished fit keeps its solver's state after every pass
in ``lam=<lam>.passes.pkl`` (:meth:`FitCache.in_progress`), so it too resumes where it stopped.  A :class:`FitCache` keeps each finished fit's record
(JSON, floats at full precision) and history (CSV, full precision) in
``<root>/<key digest>/lam=<lam>.json`` and ``.history.csv``; the rerun of the job loads them
instead of fitting again.  The fits of a grid are independent (each starts from the same seed),
so a resumed job writes the same bytes as one that ran through.

The key digest covers everything a fit depends on: the job's settings, seed, dataset, method,
split and the sha256 of its input files; a change of any of them starts a new folder, so a
stale fit is never reused.  The folders are plain files: archive them (``runs/``) to resume a
job on another machine.

A grid may also be fitted a lambda per job (the workflow's rule ``fit_lambda``, for the datasets
an experiment's ``lambda_jobs`` lists: :meth:`~structpred.papers.registry.Experiment.lambda_jobs`):
under :func:`only_lambda`, :func:`fit_grid` fits (or finds) the one lambda it names, keeps it in the
cache and raises :class:`LambdaFitted`; the job that then runs the whole grid finds every fit there.
"""

from __future__ import annotations

import hashlib
import json
import logging
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

import pandas as pd
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

from structpred.data.acquire import sha256_file
from structpred.errors import ConfigError
from structpred.io import atomic_open, write_text

log = logging.getLogger(__name__)

#: the index into its grid of the one lambda :func:`fit_grid` fits (:func:`only_lambda`), or None
_ONLY: ContextVar[int | None] = ContextVar("only_lambda", default=None)


class LambdaFitted(Exception):
    """Raised by :func:`fit_grid` under :func:`only_lambda` once its lambda's fit is in the cache
    (the job's remaining work needs the whole grid): that fit's ``lam`` and ``record``, and ``whole``,
    whether it was fitted from its first pass here (not found finished or resumed)."""

    def __init__(self, lam: float, record: dict, whole: bool):
        super().__init__(f"lam={lam!r} fitted")
        self.lam, self.record, self.whole = lam, record, whole   # whole: fitted here from its first pass


@contextmanager
def only_lambda(index: int):
    """Within it, :func:`fit_grid` fits only its grid's lambda at ``index`` (0-based, grid order)
    into its cache and raises :class:`LambdaFitted`."""
    token = _ONLY.set(int(index))
    try:
        yield
    finally:
        _ONLY.reset(token)


def key_digest(key: dict, inputs=()) -> str:
    """16 hex digits of sha256 over ``key`` (JSON, sorted keys) and the bytes of each input file."""
    h = hashlib.sha256(json.dumps(key, sort_keys=True, default=repr).encode())
    for path in inputs:
        h.update(sha256_file(Path(path)).encode())
    return h.hexdigest()[:16]


class FitCache:
    """Finished fits of one job, keyed by lambda, under ``root / key_digest(key, inputs)``."""

    def __init__(self, root, key: dict, inputs=()):
        self.dir = Path(root) / key_digest(key, inputs)

    def _stem(self, lam: float) -> Path:
        return self.dir / f"lam={float(lam)!r}"

    def load(self, lam: float):
        """``(record, history)`` of the fit at ``lam``, or ``None`` if it has not finished."""
        stem = self._stem(lam)
        record_path, history_path = stem.with_name(stem.name + ".json"), stem.with_name(stem.name + ".history.csv")
        if not (record_path.exists() and history_path.exists()):
            return None
        log.info("lam=%g: finished fit read from %s", lam, record_path)
        return json.loads(record_path.read_text(encoding="utf-8")), pd.read_csv(history_path)

    def started(self, lam: float) -> bool:
        """Whether the fit at ``lam`` has finished or left a per-pass checkpoint (a fit of it now
        does not cost its whole time)."""
        stem = self._stem(lam)
        return stem.with_name(stem.name + ".json").exists() or self.in_progress(lam).exists()

    def in_progress(self, lam: float) -> Path:
        """The per-pass checkpoint of the unfinished fit at ``lam`` (the estimators' ``checkpoint``):
        a fit stopped midway resumes after its last pass; :meth:`save` removes it."""
        stem = self._stem(lam)
        return stem.with_name(stem.name + ".passes.pkl")

    def save(self, lam: float, record: dict, history: pd.DataFrame) -> None:
        """Keep one finished fit (history first: a record is only there with its history) and drop
        its per-pass checkpoint."""
        stem = self._stem(lam)
        with atomic_open(stem.with_name(stem.name + ".history.csv"), "w", newline="") as fh:
            history.to_csv(fh, index=False, lineterminator="\n")   # shortest round-trip float repr
        write_text(stem.with_name(stem.name + ".json"), json.dumps(record) + "\n")   # key order kept: rows follow it
        self.in_progress(lam).unlink(missing_ok=True)


def fit_grid(fit, lambdas, *, cache: FitCache | None = None, n_jobs: int = 1):
    """Each lambda's ``fit(lam, checkpoint=...)`` (its record and history), or its finished result
    from ``cache``, in grid order (a generator), ``n_jobs`` lambdas at a time in separate processes:
    the fits are independent (each starts from the same seed), so the results do not depend on
    ``n_jobs``, and a job's ``threads`` can fit its grid side by side.  ``fit`` must pickle
    (a module-level function, or a :func:`functools.partial` of one).  Under :func:`only_lambda`:
    only that lambda, into ``cache`` (required), then :class:`LambdaFitted`."""
    index = _ONLY.get()
    if index is not None:
        lambdas = list(lambdas)
        if cache is None or not 0 <= index < len(lambdas):
            raise ConfigError(f"a lambda job needs a fit cache and an index below the grid's {len(lambdas)} lambdas"
                              f" (got {index}{'' if cache is not None else ', no cache'})")
        whole = not cache.started(lambdas[index])
        record, _ = _fit_or_resume(fit, lambdas[index], cache)
        raise LambdaFitted(float(lambdas[index]), record, whole)
    if n_jobs == 1:
        return (_fit_or_resume(fit, lam, cache) for lam in lambdas)
    return Parallel(n_jobs=n_jobs, return_as="generator")(delayed(_fit_or_resume)(fit, lam, cache) for lam in lambdas)


def _fit_or_resume(fit, lam: float, cache: FitCache | None) -> tuple[dict, pd.DataFrame]:
    """``fit`` at ``lam`` on one BLAS thread, or its finished result from ``cache``; a new fit is kept
    there as soon as it ends (in the worker process, so a stopped job loses only the fits still running).
    One BLAS thread: a worker inherits the job's ``OPENBLAS_NUM_THREADS`` (Snakemake sets it to the
    job's threads), and two workers' spinning BLAS threads on 2 cores made an NER BCFW pass 10x slower
    (2026-11-30); the last bits of a long dot product depend on them too, and the numerics
    fingerprints are taken on one (:func:`structpred.runs.numerics.fingerprint`)."""
    done = cache.load(lam) if cache is not None else None
    if done is not None:
        return done
    with threadpool_limits(limits=1, user_api="blas"):
        record, history = fit(lam, checkpoint=None if cache is None else cache.in_progress(lam))
    if cache is not None:
        cache.save(lam, record, history)
    return record, history
