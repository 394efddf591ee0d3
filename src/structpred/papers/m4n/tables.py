"""M4N (ICML 2020) Tables 1 and 2: M3N (BCFW), CRF (SDCA), M4N (GBCFW + SP-MP) over a lambda grid.

One job = one (dataset, method, split): fit one model per lambda on the training part,
pick lambda by the validation loss (M4N §6), report the test loss of the picked model.
An ordinal dataset's labels are its regression target cut by the experiment's ``binning``
(per dataset, :data:`~structpred.data.discretize.BINNINGS`; default: the view's
equal-frequency labels).  ``m4n_binning`` reruns Table 1's ordinal rows of some datasets under
another binning, every other setting taken from ``m4n_table1`` (the sensitivity table).
``m4n_table1_converged`` reruns some of Table 1's tasks with every fit stopped at a certified
relative duality gap (or a cap of passes), beside the paper-budget table.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from structpred.errors import ConfigError
from structpred.estimators.methods import make_estimator
from structpred.outputs import make_space
from structpred.papers.m4n.report import (losses_figure, m4n_pairs, render_converged, render_losses,
                                          render_warm_start, warm_cold_pairs, warm_start_figure)
from structpred.papers.registry import Experiment, register
from structpred.solvers.driver import relative_gap
from structpred.tables.fit_cache import FitCache, fit_grid
from structpred.tables.job import JobSettings
from structpred.tables.results import select_first_min
from structpred.tables.seeding import int_seed
from structpred.tables.significance import paired_tests
from structpred.tables.splits import load_split, split_part

log = logging.getLogger(__name__)

#: the methods of the M4N tables
METHODS = ("M3N", "CRF", "M4N")


@dataclass(frozen=True)
class M4NJob(JobSettings):
    """One M4N table job's settings (its experiment's settings dict, checked) with its number of
    labels and the fits' seed: handed whole to :func:`fit_lambda_grid`, :func:`fit_one_lambda` and
    the estimator factory :func:`table_estimator`.

    ``method``: M3N, CRF or M4N; ``loss``: the task loss's name (or a loss matrix) and ``space``
    the constructor arguments of its output space (:func:`structpred.outputs.make_space`; ``None``:
    the loss's defaults); ``lambdas``: the grid, fitted in order; ``oracle_iterations`` and
    ``warm_start``: M4N's SP-MP oracle (``None`` for the other methods); ``eval_every``: the passes
    between recorded objectives (``None``: every pass); ``rtol``: stop each fit at a certified
    relative duality gap; ``options``: more of the estimator's keyword arguments (e.g. M3N's
    ``steps``, M4N's ``warm_start_mix``); ``task``: the table's row group."""

    task: str
    method: str
    loss: object
    lambdas: tuple
    n_passes: int
    n_labels: int
    random_state: int
    oracle_iterations: int | None = None
    warm_start: bool | None = None
    eval_every: int | None = None
    rtol: float | None = None
    options: dict | None = None
    space: dict | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.method not in METHODS:
            raise ConfigError(f"unknown method {self.method!r}; known: {', '.join(METHODS)}")
        if self.method == "M4N" and (self.oracle_iterations is None or self.warm_start is None):
            raise ConfigError("M4N needs oracle_iterations and warm_start in its settings")

    @classmethod
    def for_split(cls, settings: dict, *, n_labels: int, seed: int, dataset: str, split: int) -> M4NJob:
        """The job of ``settings`` on ``split`` of ``dataset`` (``n_labels`` labels): its fits'
        seed drawn from the config's ``seed``, the dataset and the split."""
        return cls.from_settings(settings, n_labels=int(n_labels), random_state=int_seed(seed, dataset, "order", split))


def table_estimator(job: M4NJob, lam: float):
    """The scikit-learn style estimator of the job's method at ``lam``: the output space of its
    loss and space options, its passes, seed, recording, stopping rule and options (M4N: its
    oracle's iterations and warm start)."""
    loss = make_space(job.loss, job.n_labels, **job.space) if job.space else job.loss
    params = {"loss": loss, "n_labels": job.n_labels, "lam": lam, "n_passes": job.n_passes,
              "random_state": job.random_state, "eval_every": job.eval_every or 1}
    if job.rtol is not None:
        params["rtol"] = job.rtol
    params.update(job.options or {})
    if job.method == "M4N":
        params = {"n_iter_oracle": job.oracle_iterations, "warm_start_oracle": job.warm_start, **params}
    return make_estimator(job.method, **params)


def fit_one_lambda(parts, job: M4NJob, lam: float, checkpoint=None) -> tuple[dict, pd.DataFrame]:
    """Fit the job's model at ``lam`` on ``parts = ((X_tr, y_tr), (X_va, y_va), (X_te, y_te))``;
    returns its record (``lam``, ``val_loss``, ``test_loss``, ``seconds``, the last pass's ``gap``
    and ``oracle_gap`` for M4N; with ``rtol``, the passes run and the relative gap ``rel_gap``)
    and its history.  ``checkpoint``: the fit's per-pass checkpoint (resumed when present);
    ``seconds`` then adds the training time its earlier pieces recorded."""
    (X_tr, y_tr), (X_va, y_va), (X_te, y_te) = parts
    est = table_estimator(job, float(lam))
    start = time.perf_counter()
    est.fit(X_tr, y_tr, X_val=X_va, y_val=y_va, checkpoint=checkpoint)
    seconds = time.perf_counter() - start + est.resumed_seconds_
    last = est.history_.iloc[-1]
    record = {"lam": float(lam), "val_loss": est.task_loss(X_va, y_va),
              "test_loss": est.task_loss(X_te, y_te), "seconds": seconds, "gap": float(last["gap"])}
    if "oracle_gap" in est.history_:
        record["oracle_gap"] = float(last["oracle_gap"])
    if job.rtol is not None:
        record["passes"] = int(last["pass"])
        record["rel_gap"] = relative_gap(last)
    return record, est.history_.assign(lam=float(lam))


def fit_lambda_grid(split: dict[str, np.ndarray], job, *, n_jobs: int = 1, cache=None,
                    fit=None) -> tuple[list[dict], pd.DataFrame]:
    """Fit one model per lambda of the job's grid (``fit``, ``n_jobs`` lambdas at a
    time in separate processes: :func:`~structpred.tables.fit_cache.fit_grid`); return per-lambda
    records and the history of the chosen one.  The lambda
    with the lowest validation loss is ``selected`` (ties: the first in grid order).
    ``cache``: a :class:`~structpred.tables.fit_cache.FitCache` that keeps each finished
    fit and gives it back when the job runs again (a stopped job resumes).  ``fit``: how one
    lambda is fitted, ``fit(parts, job, lam, checkpoint)`` (default :func:`fit_one_lambda`; the matrix's
    methods have their own).
    """
    parts = tuple(split_part(split, p) for p in ("train", "val", "test"))
    fit = fit or fit_one_lambda     # looked up at the call (a test stands in for it)
    records, histories = [], []
    for record, history in fit_grid(partial(fit, parts, job), job.lambdas, cache=cache, n_jobs=n_jobs):
        log.info("%s lam=%g val=%.4f test=%.4f (%.1fs)", job.method, record["lam"], record["val_loss"],
                 record["test_loss"], record["seconds"])
        records.append(record)
        histories.append(history)
    best = select_first_min([rec["val_loss"] for rec in records])
    for i, rec in enumerate(records):
        rec["selected"] = i == best
    return records, histories[best]


def records_to_rows(records: list[dict], *, experiment: str, task: str, dataset: str,
                    method: str, split: int) -> list[dict]:
    """Tidy rows (one per lambda and metric) for :func:`structpred.tables.results.make_rows`."""
    rows = []
    for rec in records:
        for metric, value in rec.items():
            if metric in ("lam", "selected"):
                continue
            rows.append({"experiment": experiment, "task": task, "dataset": dataset,
                         "method": method, "split": split, "lam": rec["lam"],
                         "selected": rec["selected"], "metric": metric, "value": float(value)})
    return rows


#: a task's loss -> the output space family of its numerics paths (:mod:`structpred.runs.numerics`)
SPACE_OF_LOSS = {"zero_one": "multiclass", "ordinal": "multiclass", "permutation_hamming": "permutation",
                 "sequence_hamming": "chain"}


def task_of(block: dict, dataset: str) -> tuple[str, dict]:
    """The task of a Table 1 config block that lists ``dataset``: ``(name, spec)``."""
    tasks = block["tasks"]
    task = next((t for t, spec in tasks.items() if dataset in spec["datasets"]), None)
    if task is None:
        raise ConfigError(f"{dataset} is not in any task of {', '.join(tasks)}")
    return task, tasks[task]


def run_job(split: dict[str, np.ndarray], job: M4NJob, *, experiment: str, dataset: str, method: str,
            split_index: int, n_jobs: int = 1, cache=None):
    """Run one (experiment, dataset, method, split) job on its split's arrays (``n_jobs``
    lambdas in parallel, finished fits kept in and read from ``cache``); returns (tidy rows,
    history of the chosen lambda)."""
    records, history = fit_lambda_grid(split, job, n_jobs=n_jobs, cache=cache)
    rows = records_to_rows(records, experiment=experiment, task=job.task, dataset=dataset,
                           method=method, split=split_index)
    return rows, history


class _M4NTable(Experiment):
    """Shared by M4N Tables 1 and 2: Nystrom features per split, a lambda grid per job."""

    needs = ("features",)
    percent_tasks = frozenset({"mc", "seq", "rnk"})  # the paper prints these losses in percent

    def block(self, config: dict) -> dict:
        """The experiment's settings (its config block)."""
        return config[self.name]

    def feature_settings(self, config: dict, dataset: str) -> dict:
        s = self.block(config)
        out = {"fractions": s["split_fractions"], "n_components": s["nystrom"]["n_components"],
               "whiten": s["nystrom"]["whiten"], "subsample": s.get("subsample", {}).get(dataset),
               "seed": config["seed"]}
        binning = (s.get("binning") or {}).get(dataset)
        if binning is not None:  # only then: the view's own labels keep their finished feature files
            out["binning"] = binning
        return out

    resumable = True

    def numeric_paths(self, config, dataset, method):
        s = self.settings(config, dataset, method)
        return (f"{SPACE_OF_LOSS[s['loss']]}.{s['method']}", "features.nystrom")

    def run(self, inputs, settings, *, seed, dataset, method, split, threads=1, checkpoint=None):
        arrays, meta = load_split(inputs["features"])
        job = M4NJob.for_split(settings, n_labels=meta["n_labels"], seed=seed, dataset=dataset, split=split)
        cache = None
        if checkpoint is not None:   # keyed on the settings dict, as Snakemake's params
            key = {"experiment": self.name, "dataset": dataset, "method": method, "split": split, "seed": seed,
                   "settings": settings}
            cache = FitCache(checkpoint, key, [inputs["features"]])
        return run_job(arrays, job, experiment=self.name, dataset=dataset, method=method, split_index=split,
                       n_jobs=threads, cache=cache)


@register
class Table1(_M4NTable):
    """M4N Table 1: M3N, CRF, M4N per task (multi-class, ordinal, ranking, sequences)."""

    name = "m4n_table1"
    title = "M4N (ICML 2020) Table 1: average test loss over splits"

    def jobs(self, config):
        s = self.block(config)
        return [(d, m, k) for t in s["tasks"].values() for d in t["datasets"]
                for m in t.get("methods", s["methods"]) for k in range(t.get("n_splits", s["n_splits"]))]

    def settings(self, config, dataset, method):
        s = self.block(config)
        task, spec = task_of(s, dataset)
        out = {"task": task, "method": method, "loss": spec["loss"],
               "lambdas": spec.get("lambdas", s["lambdas"]), "n_passes": spec.get("n_passes", s["n_passes"]),
               "oracle_iterations": spec.get("oracle_iterations", s["oracle_iterations"]) if method == "M4N" else None,
               "warm_start": s["warm_start"] if method == "M4N" else None,
               # a task's eval_every applies to every method; the experiment's to M4N only
               "eval_every": spec.get("eval_every", s["eval_every"] if method == "M4N" else None)}
        if spec.get("space"):  # the output space's constructor arguments (absent: the loss's defaults)
            out["space"] = dict(spec["space"])
        return out

    def threads(self, config, dataset, method):
        return task_of(self.block(config), dataset)[1].get("threads", 1)

    def render(self, table, tests, config):
        return render_losses(table, tests, self.percent_tasks)

    def figure(self, table, path, config):
        losses_figure(table, path)

    def tests(self, selected, config):
        return paired_tests(selected, m4n_pairs)


@register
class Table2(_M4NTable):
    """M4N Table 2: M4N with K SP-MP iterations per oracle call, warm or cold started."""

    name = "m4n_table2"
    title = "M4N (ICML 2020) Table 2: warm start of the max-min oracle (test loss / oracle gap)"

    def configurations(self, config) -> dict[str, tuple[int, bool]]:
        """Method label -> (SP-MP iterations, warm start) of each configured run: a job's settings are
        looked up here, from the config, never parsed back from its label."""
        s = self.block(config)
        return {f"M4N-K{k}-{'warm' if w else 'cold'}": (k, w) for k in s["oracle_iterations"] for w in s["warm_start"]}

    def jobs(self, config):
        s = self.block(config)
        return [(d, label, split) for d in s["datasets"] for label in self.configurations(config)
                for split in range(s["n_splits"])]

    def settings(self, config, dataset, method):
        s = self.block(config)
        configured = self.configurations(config)
        if method not in configured:
            raise ConfigError(f"{method!r} is not a configuration of {self.name} here; configured: "
                              f"{', '.join(configured)}")
        n_iter, warm = configured[method]
        return {"task": s["task"], "method": "M4N", "loss": s["loss"], "lambdas": s["lambdas"],
                "n_passes": s["n_passes"], "oracle_iterations": n_iter, "warm_start": warm,
                "eval_every": s["eval_every"]}

    def render(self, table, tests, config):
        return render_warm_start(table, tests, self.configurations(config))

    def figure(self, table, path, config):
        warm_start_figure(table, path, self.configurations(config))

    def tests(self, selected, config):
        # the paper's claim is on both columns: warm start lowers the test loss and the oracle error
        pairs = warm_cold_pairs(self.configurations(config))
        return pd.concat([paired_tests(selected, pairs, metric) for metric in ("test_loss", "oracle_gap")],
                         ignore_index=True)


@register
class CodeTable1(Table1):
    """M4N Table 1 as the authors' code ran it (their launch scripts and learners): the lambda grid
    0.3535 ... 0.00008 (``2^(-1.5 j)``, j = 1..9, as the scripts round it), 101 passes, BCFW's fixed
    step ``2n / (t + 2n)`` and M3N's and M4N's averaged iterates; the OCR row on 2000 words, 21 passes
    and 20 SP-MP iterations per oracle call (not per letter); every other setting from
    ``m4n_table1``.  The config block lists the tasks, the grid and passes, per-task overrides
    (``task_settings``), ``subsample`` additions and each method's estimator ``options``; the claims
    ledger reads this table as a protocol of Table 1's claims."""

    name = "m4n_table1_code"
    title = "M4N (ICML 2020) Table 1 under the authors' code protocol (lambda grid, 101 passes, fixed steps, averaging)"
    references_of = "m4n_table1"
    optimistic_metric = "test_loss"   # the authors' table rule, beside our validation selection

    def block(self, config: dict) -> dict:
        """``m4n_table1``'s settings with this block's tasks, grid, passes, task overrides and subsamples."""
        base, own = config["m4n_table1"], config[self.name]
        tasks = {t: {**base["tasks"][t], **own.get("task_settings", {}).get(t, {})} for t in own["tasks"]}
        return {**base, "tasks": tasks, "lambdas": own["lambdas"], "n_passes": own["n_passes"],
                "subsample": {**base.get("subsample", {}), **own.get("subsample", {})}}

    def settings(self, config, dataset, method):
        out = super().settings(config, dataset, method)
        options = config[self.name].get("options", {}).get(method)
        if options:
            out["options"] = dict(options)
        return out

    def render(self, table, tests, config):
        optimistic = table[table["metric"] == "test_loss_optimistic"].assign(metric="test_loss")
        return ("<p>Lambda selected on each split's validation set (ours):</p>"
                + render_losses(table, tests, self.percent_tasks)
                + "<p>Lambda selected as the authors' table rule selects it: per row the lambda of lowest mean "
                  "test loss over the splits (selection on test data, optimistic; no tests):</p>"
                + render_losses(optimistic, None, self.percent_tasks))


@register
class CodeTable2(Table2):
    """M4N Table 2 as the authors' code ran it (``launch_m4n_oracle.sh``): one lambda per dataset,
    201 passes, GBCFW's averaged iterate; every other setting from ``m4n_table2``."""

    name = "m4n_table2_code"
    title = "M4N (ICML 2020) Table 2 under the authors' code protocol (fixed lambda, 201 passes, averaging)"
    references_of = "m4n_table2"

    def block(self, config: dict) -> dict:
        base, own = config["m4n_table2"], config[self.name]
        return {**base, "datasets": own.get("datasets", base["datasets"]), "n_passes": own["n_passes"]}

    def settings(self, config, dataset, method):
        own = config[self.name]
        if dataset not in own["lambda"]:
            raise ConfigError(f"{self.name}: no lambda for {dataset} (give one in lambda)")
        out = {**super().settings(config, dataset, method), "lambdas": [float(own["lambda"][dataset])]}
        if own.get("options"):
            out["options"] = dict(own["options"])
        return out


@register
class BinningSensitivity(Table1):
    """Table 1's ordinal rows of ``datasets`` under another ``binning``: the sensitivity table."""

    name = "m4n_binning"
    title = "M4N (ICML 2020) Table 1, ordinal rows under another binning of the target (sensitivity)"
    references_of = "m4n_table1"

    def block(self, config: dict) -> dict:
        """``m4n_table1``'s settings with the ordinal task reduced to this block's datasets and
        methods and this block's binning."""
        base, own = config["m4n_table1"], config[self.name]
        ordinal = {**base["tasks"]["ord"], "datasets": list(own["datasets"])}
        return {**base, "tasks": {"ord": ordinal}, "methods": own.get("methods", base["methods"]),
                "binning": own["binning"]}


@register
class ConvergedTable1(Table1):
    """Table 1's ``tasks`` with every fit run until its certified duality gap is ``<= rtol *
    primal`` (or ``max_passes[method]`` passes; both recorded per fit as ``passes`` and
    ``rel_gap``), then the same model selection: does M4N's advantage depend on the budget?"""

    name = "m4n_table1_converged"
    title = "M4N (ICML 2020) Table 1 at certified convergence, beside the 50-pass budget"
    references_of = "m4n_table1"
    beside = "m4n_table1"

    def block(self, config: dict) -> dict:
        """``m4n_table1``'s settings reduced to this block's tasks."""
        base, own = config["m4n_table1"], config[self.name]
        return {**base, "tasks": {t: base["tasks"][t] for t in own["tasks"]}}

    def settings(self, config, dataset, method):
        own = config[self.name]
        out = {**super().settings(config, dataset, method), "n_passes": own["max_passes"][method],
               "rtol": own["rtol"], "eval_every": own["eval_every"]}
        if own.get("options", {}).get(method):
            out["options"] = dict(own["options"][method])
        return out

    def page(self, table, tests, others, config):
        return render_converged(table, tests, *others.get(self.beside, (None, None)), self.percent_tasks)
