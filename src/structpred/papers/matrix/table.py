"""Beyond the papers: every method on every task, one table (issue 59).

Rows: the seven methods of :mod:`structpred.papers.matrix.methods`; columns: tasks, each with its
paper table's data, splits, features and task loss (its ``source``).  A cell whose method the
source table already runs on that dataset is read from the source's runs (the same job: the same
data, split, lambda grid and budget; ``methods_as`` names a method the source calls otherwise).
Every other cell is fitted here by its source's protocol:

* a source that fits the lambda grid on each split's features (M4N Table 1): on those features
  over its lambda grid, with the method family's budget from the config, lambda chosen on the
  split's validation part (ties: the first of the grid);
* any other source (AGM Table 1: lambda on a hold-out of the first split in a model-selection
  stage, then every split's final fit, a row per loss; AGM Table 2: one job fits the lambda grid
  on the SRL subsample and picks on the devel section) through the source's own ``select`` and
  ``run`` with the method added to its estimators; the task's ``metrics`` of its rows become one
  dataset each (``ck:weighted_absolute``, ``conll2005:tree_loss``), metric ``test_loss``.

A cell that cannot exist
(the CRF on permutations: marginals need the permanent) is printed with its reason.  Per
(task, dataset): the best method by mean test loss, and bold every method not significantly
worse by a paired Wilcoxon test over the splits (AGM's rule); every pair's test is in the test
table.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from structpred.errors import ConfigError
from structpred.outputs import Chain, make_space
from structpred.papers.m4n.tables import fit_lambda_grid, records_to_rows
from structpred.papers.matrix.methods import METHODS, estimator, why_impossible
from structpred.papers.registry import Experiment, get, register
from structpred.tables.cells import bold_of, cell
from structpred.tables.figures import MAX_WIDTH_IN, legend_outside, save_figure, subplots
from structpred.tables.fit_cache import FitCache
from structpred.tables.job import JobSettings
from structpred.tables.results import read_results
from structpred.tables.seeding import int_seed, rng_for
from structpred.tables.significance import ALPHA, best_tests
from structpred.tables.splits import load_split, split_part, subsample_train


log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MatrixJob(JobSettings):
    """One fitted cell's settings: its task, method, the task loss (and output space options), the
    source table's lambda grid, the method family's ``budget`` (its estimator's keyword arguments),
    the split's number of labels and the fits' seed; ``train_fraction``: the share of each split's
    training examples the cell is fitted on (a documented subsample where the full cell would blow
    the matrix's budget; ``None``: all)."""

    task: str
    method: str
    loss: str
    lambdas: tuple
    budget: dict
    n_labels: int
    random_state: int
    space: dict | None = None
    train_fraction: float | None = None

    def estimator(self, lam: float):
        space = make_space(self.loss, self.n_labels, **(self.space or {}))
        return estimator(self.method, space, lam, self.budget, self.random_state)


def _training_split(path, settings: dict, seed: int, dataset: str, split: int) -> tuple[dict, dict]:
    """A split's feature file, its training part cut to the cell's ``train_fraction`` (if any; the
    draw seeded by the dataset and split, so every lambda and every method with that fraction sees
    the same examples)."""
    arrays, meta = load_split(path)
    fraction = settings.get("train_fraction")
    if fraction is not None:
        full = arrays
        arrays = subsample_train(arrays, fraction, rng_for(seed, dataset, "train_subsample", split))
        count = "offsets_train" if "offsets_train" in full else "y_train"
        log.info("%s split %d: fitted on %d of %d training examples (train_subsample %g)", dataset, split,
                 len(arrays[count]) - (count == "offsets_train"), len(full[count]) - (count == "offsets_train"), fraction)
    return arrays, meta


def fit_cell(parts, job: MatrixJob, lam: float, checkpoint=None) -> tuple[dict, pd.DataFrame]:
    """Fit ``job``'s method at ``lam`` on ``parts = ((X_tr, y_tr), (X_va, y_va), (X_te, y_te))``:
    its record (``lam``, ``val_loss``, ``test_loss``, ``seconds``) and history (QS: none).
    ``checkpoint``: the fit's per-pass checkpoint, for the methods that train by passes."""
    (X_tr, y_tr), (X_va, y_va), (X_te, y_te) = parts
    est = job.estimator(float(lam))
    start = time.perf_counter()
    if job.method == "QS":
        est.fit(X_tr, y_tr)
        seconds, history = time.perf_counter() - start, pd.DataFrame()
    else:
        est.fit(X_tr, y_tr, checkpoint=checkpoint)
        seconds, history = time.perf_counter() - start + est.resumed_seconds_, est.history_
    record = {"lam": float(lam), "val_loss": est.task_loss(X_va, y_va), "test_loss": est.task_loss(X_te, y_te),
              "seconds": seconds}
    return record, history.assign(lam=float(lam))


def per_metric_rows(rows: pd.DataFrame, task: str, method: str, metrics) -> pd.DataFrame:
    """A delegated source's rows as the matrix's: each of the task's ``metrics`` (AGM Table 1's
    losses, Table 2's ``tree_loss``) as dataset ``<dataset>:<metric>``, metric ``test_loss``; the
    seconds rows as they are; the source's other rows dropped."""
    test = rows[rows["metric"].isin(list(metrics)) & rows["selected"].astype(bool)]
    test = test.assign(dataset=test["dataset"] + ":" + test["metric"], metric="test_loss")
    return pd.concat([test, rows[rows["metric"] == "seconds"]], ignore_index=True).assign(
        experiment="matrix", task=task, method=method)


@register
class Matrix(Experiment):
    """Every method on every task: M4N Table 1's tasks first (multi-class, ordinal, label ranking,
    OCR), their cells of M3N, CRF and M4N read from ``m4n_table1``'s runs."""

    name = "matrix"
    title = "Beyond the papers: every method on every task (average test loss over splits)"
    needs = ("features", "runs")
    percent_tasks = frozenset({"mc", "seq", "rnk"})
    resumable = True
    partial_by_dataset = True   # a column is shown once its jobs are all archived
    figure_reads_tests = True   # the figure marks the methods not significantly worse than the best

    def _task(self, config, dataset) -> tuple[str, dict]:
        """The task of a dataset, or of a table row's ``<dataset>:<metric>`` (:func:`per_metric_rows`)."""
        name = dataset.split(":")[0]
        for task, spec in self.block(config)["tasks"].items():
            if name in spec["datasets"]:
                return task, spec
        raise ConfigError(f"matrix: {dataset} is in no task")

    def _source(self, config, dataset) -> Experiment:
        return get(self._task(config, dataset)[1]["source"])

    def _source_settings(self, config, dataset) -> dict:
        """The source table's settings of a dataset's job (its loss, lambda grid, space options)."""
        return self._source(config, dataset).settings(config, dataset, "M3N")

    def delegates(self, config, dataset) -> bool:
        """Whether the dataset's cells are fitted by the source's own protocol (AGM Tables 1 and 2)
        rather than on its split features (M4N Table 1)."""
        return "features" not in self._source(config, dataset).needs

    def source_method(self, config, dataset, method) -> str:
        """The source's name of ``method`` (AGM Table 1 calls BCFW on the structured hinge SSVM)."""
        return self._task(config, dataset)[1].get("methods_as", {}).get(method, method)

    def borrowed(self, config, dataset, method) -> bool:
        """Whether the source table runs ``method`` on ``dataset`` (its cell is read from there)."""
        name = self.source_method(config, dataset, method)
        return any(d == dataset and m == name for d, m, _ in self._source(config, dataset).jobs(config))

    def _family(self, config, dataset):
        """A space of the dataset's loss family: enough to say which methods it supports."""
        if self.delegates(config, dataset):
            return self._source(config, dataset).space(config, dataset)
        s = self._source_settings(config, dataset)
        return make_space(s["loss"], 3, **(s.get("space") or {}))

    def impossible(self, config) -> dict[tuple[str, str], str]:
        """``(task, method) -> reason`` of the cells that cannot exist."""
        out = {}
        for task, spec in self.block(config)["tasks"].items():
            family = self._family(config, spec["datasets"][0])
            for method in self.block(config)["methods"]:
                reason = spec.get("impossible", {}).get(method) or why_impossible(method, family)
                if reason is not None:
                    out[(task, method)] = reason
        return out

    def jobs(self, config):
        s = self.block(config)
        unknown = sorted(set(s["methods"]) - set(METHODS))
        if unknown:
            raise ConfigError(f"matrix: unknown methods {unknown}; known: {', '.join(METHODS)}")
        impossible = self.impossible(config)
        return [(d, m, k) for task, spec in s["tasks"].items() for d in spec["datasets"] for m in s["methods"]
                if (task, m) not in impossible for k in self.splits(config, d)]

    def splits(self, config, dataset) -> list[int]:
        """The splits of a dataset's cells: a delegated source's own (AGM Table 1's 20, Table 2's
        one), else the matrix's first ``n_splits`` of the source's; a task's ``n_splits`` overrides."""
        spec, n = self._task(config, dataset)[1], self.block(config)["n_splits"]
        if "n_splits" in spec:
            return list(range(spec["n_splits"]))
        if self.delegates(config, dataset):
            return sorted({k for d, _, k in self._source(config, dataset).jobs(config) if d == dataset})
        return list(range(n))

    def job_needs(self, config, dataset, method):
        if self.borrowed(config, dataset, method):
            return ("runs",)
        return self._source(config, dataset).needs if self.delegates(config, dataset) else ("features",)

    def view(self, config, dataset):
        return self._source(config, dataset).view(config, dataset)

    def runs_source(self, config, dataset, method):
        return self._task(config, dataset)[1]["source"]

    def run_inputs(self, config, dataset, method):
        borrowed = self.borrowed(config, dataset, method)
        return [(dataset, self.source_method(config, dataset, method), None)] if borrowed else []

    def feature_settings(self, config, dataset):
        return self._source(config, dataset).feature_settings(config, dataset)

    def threads(self, config, dataset, method):
        """A borrowed cell's job reads its source's rows, and a delegated task's follows its source's
        protocol (one lambda at a time): 1; a cell fitted here on split features, the block's threads."""
        if self.delegates(config, dataset) or self.borrowed(config, dataset, method):
            return 1
        return self.block(config).get("threads", 1)

    def selects_once(self, config, dataset):
        """A delegated task's source selects lambda once for all its splits (AGM's protocols)."""
        return self.delegates(config, dataset.split(":")[0])

    def grids(self, config, dataset, method):
        """A delegated task's rows keep only the chosen lambda: its grid is the source's (of the
        source's job for a borrowed cell); M4N Table 1's tasks write a row per lambda."""
        dataset = dataset.split(":")[0]       # a table row's <dataset>:<metric>
        if not self.delegates(config, dataset):
            return {}
        source = self._source(config, dataset)
        if self.borrowed(config, dataset, method):
            name = self.source_method(config, dataset, method)
            return source.settings_grids(source.settings(config, dataset, name), name)
        return source.settings_grids(self.settings(config, dataset, method), method)

    def settings(self, config, dataset, method):
        task, spec = self._task(config, dataset)
        source = self._source(config, dataset)
        if self.delegates(config, dataset) and not spec.get("metrics"):
            raise ConfigError(f"matrix: task {task} (source {spec['source']}) needs metrics: which of the source's "
                              "rows are its test losses")
        metrics = {"metrics": list(spec["metrics"])} if self.delegates(config, dataset) else {}
        if method in spec.get("train_subsample", {}) and (self.borrowed(config, dataset, method)
                                                          or self.delegates(config, dataset)):
            raise ConfigError(f"matrix: task {task}'s train_subsample of {method}: only a cell fitted here on "
                              "split features takes a training subsample")
        if self.borrowed(config, dataset, method):
            return {"task": task, "method": method, "source": spec["source"],
                    "source_method": self.source_method(config, dataset, method), **metrics}
        if self.delegates(config, dataset):       # the source's protocol, with this method
            grid = spec.get("method_lambdas", {}).get(method, spec.get("lambdas"))
            return {**source.settings(config, dataset, method), **({"lambdas": grid} if grid is not None else {}),
                    "task": task, "method": method, "protocol": spec["source"], **metrics,
                    "budget": dict(self.block(config)["budgets"].get(method, {}))}
        src = self._source_settings(config, dataset)
        grid = spec.get("method_lambdas", {}).get(method, src["lambdas"])
        out = {"task": task, "method": method, "loss": src["loss"], "lambdas": list(grid),
               "budget": dict(self.block(config)["budgets"].get(method, {}))}
        if src.get("space"):
            out["space"] = dict(src["space"])
        if method in spec.get("train_subsample", {}):
            out["train_fraction"] = float(spec["train_subsample"][method])
        return out

    def numeric_paths(self, config, dataset, method):
        source = self._source(config, dataset)
        if self.borrowed(config, dataset, method):
            return source.numeric_paths(config, dataset, self.source_method(config, dataset, method))
        if self.delegates(config, dataset):
            return source.numeric_paths(config, dataset, method)
        # on chains (OCR) the method's chain path too: the matrix.* paths fit tables and rankings
        chain = (f"chain_game.{method}",) if isinstance(self._family(config, dataset), Chain) else ()
        return (f"matrix.{method}", "features.nystrom", *chain)

    def select(self, inputs, settings, *, seed, dataset, method):
        return get(settings["protocol"]).select(inputs, settings, seed=seed, dataset=dataset, method=method)

    def run(self, inputs, settings, *, seed, dataset, method, split, threads=1, checkpoint=None):
        if "source" in settings:        # the source table's job: its rows, as this table's
            rows = read_results(inputs["runs"]).assign(experiment=self.name, method=method)
            if "metrics" in settings:
                rows = per_metric_rows(rows, settings["task"], method, settings["metrics"])
            return rows.dropna(axis=1, how="all").to_dict("records"), None
        if "protocol" in settings:      # fitted by the source's protocol (its own fit cache, if it keeps one)
            source = get(settings["protocol"])
            resume = {"checkpoint": checkpoint} if source.resumable and checkpoint is not None else {}
            rows, _ = source.run(inputs, settings, seed=seed, dataset=dataset, method=method, split=split, **resume)
            rows = per_metric_rows(pd.DataFrame(rows), settings["task"], method, settings["metrics"])
            return rows.to_dict("records"), None
        arrays, meta = _training_split(inputs["features"], settings, seed, dataset, split)
        job = MatrixJob.from_settings(settings, n_labels=int(meta["n_labels"]),
                                      random_state=int_seed(seed, dataset, "order", split))
        cache = None
        if checkpoint is not None:
            cache = FitCache(checkpoint, self.fit_key(settings, seed=seed, dataset=dataset, method=method,
                                                      split=split), [inputs["features"]])
        records, history = fit_lambda_grid(arrays, job, n_jobs=threads, cache=cache, fit=fit_cell)
        return records_to_rows(records, experiment=self.name, task=job.task, dataset=dataset, method=method,
                               split=split), history

    def fit_key(self, settings, *, seed, dataset, method, split) -> dict:
        """What a cell's fit at one lambda depends on (its :class:`FitCache` key): not the rest of the
        grid (each fit starts from the same seed), so a widened grid fits only its new lambdas."""
        return {"experiment": self.name, "dataset": dataset, "method": method, "split": split, "seed": seed,
                "settings": {k: v for k, v in settings.items() if k != "lambdas"}}

    def time_job(self, inputs, settings, *, seed, dataset, method, passes=2):
        """CPU seconds of one job on M4N Table 1's split features (``structpred runs estimate``):
        ``|grid| x n_passes / passes`` times the process CPU of a ``passes``-pass fit at the
        grid's middle lambda, after a one-pass fit that compiles the kernels (QS: ``|grid|``
        times one fit's).  The fits' scoring of the validation and test parts is timed with them."""
        if "source" in settings or "protocol" in settings:
            raise ConfigError(f"matrix: the {method} cell on {dataset} is not fitted on split features")
        full = settings["budget"].get("n_passes")
        if full is None and method != "QS":
            raise ConfigError(f"matrix: {method}'s budget needs n_passes to be timed")
        arrays, meta = _training_split(inputs["features"], settings, seed, dataset, 0)
        parts = tuple(split_part(arrays, p) for p in ("train", "val", "test"))
        lambdas = list(settings["lambdas"])

        def cpu(n):
            budget = settings["budget"] if method == "QS" else {**settings["budget"], "n_passes": n}
            job = MatrixJob.from_settings({**settings, "budget": budget}, n_labels=int(meta["n_labels"]),
                                          random_state=int_seed(seed, dataset, "order", 0))
            start = time.process_time()
            fit_cell(parts, job, lambdas[len(lambdas) // 2])
            return time.process_time() - start

        cpu(1)
        return len(lambdas) * (cpu(passes) if method == "QS" else cpu(passes) * full / passes)

    def tests(self, selected, config):
        return best_tests(selected[selected["metric"] == "test_loss"])

    def pending(self, config, table) -> dict[str, list[str]]:
        """``task -> datasets`` configured but not in ``table`` (their jobs are not all archived)."""
        shown = {d.split(":")[0] for d in table["dataset"]}
        return {task: [d for d in spec["datasets"] if d not in shown]
                for task, spec in self.block(config)["tasks"].items() if set(spec["datasets"]) - shown}

    def render(self, table, tests, config):
        unit = lambda d: "splits" if len(self.splits(config, d.split(":")[0])) > 1 else "test examples"  # noqa: E731
        notes = summary_sentences(table, tests, self.percent_tasks, unit) + pair_sentences(table, tests)
        pending = self.pending(config, table)
        if pending:
            notes.append("Not in the matrix yet (their jobs are not all in the run archive; <code>structpred runs "
                         "status</code>): " + "; ".join(f"{task}: {', '.join(ds)}" for task, ds in pending.items()) + ".")
        return render_matrix(table, tests, self.block(config)["methods"], self.impossible(config),
                             self.percent_tasks, notes)

    def costs(self, jobs_of, config):
        """Each cell's training CPU, summed over its splits, from the run archive: a borrowed cell's
        is its source's jobs' (the matrix's job only reads their rows)."""
        own, sources = jobs_of(self.name), {}
        cells = []
        for (dataset, method), jobs in own.groupby(["dataset", "method"], sort=False):
            if self.borrowed(config, dataset, method):
                source = self._task(config, dataset)[1]["source"]
                if source not in sources:
                    sources[source] = jobs_of(source)
                theirs = sources[source]
                jobs = theirs[(theirs["dataset"] == dataset) & (theirs["split"].isin(jobs["split"]))
                              & (theirs["method"] == self.source_method(config, dataset, method))].assign(method=method)
            cells.append(jobs)
        return render_costs(pd.concat(cells, ignore_index=True) if cells else own, self.block(config)["methods"],
                            {d: task for task, spec in self.block(config)["tasks"].items() for d in spec["datasets"]})

    def figure(self, table, path, config, tests=None):
        matrix_figure(table, tests, path, self.block(config)["methods"])


def render_matrix(table: pd.DataFrame, tests: pd.DataFrame, methods, impossible: dict, percent_tasks,
                  notes=()) -> str:
    """A row per (task, dataset), a column per method; bold = best or not significantly worse;
    below the table the paragraphs ``notes``, then each cell that cannot exist (``×``) with its reason."""
    data = table[table["metric"] == "test_loss"]
    bold = bold_of(tests)
    head = "".join(f"<th>{m}</th>" for m in methods)
    out = [f"<table><tr><th class=l>task</th><th class=l>dataset</th>{head}</tr>"]
    for (task, dataset), part in data.groupby(["task", "dataset"], sort=False):
        by = part.set_index("method")
        cells = []
        for m in methods:
            if (task, m) in impossible:
                cells.append("<td title='cannot exist'>×</td>")
            elif m in by.index:
                cells.append(cell(by.loc[m], task in percent_tasks,
                                  bold=bold.get((task, dataset, "test_loss", m), False)))
            else:
                cells.append("<td>–</td>")
        out.append(f"<tr><td class=l>{task}</td><td class=l>{dataset}</td>{''.join(cells)}</tr>")
    out.append("</table>")
    out += [f"<p>{note}</p>" for note in notes]
    out += [f"<p>× {m} on {t}: {reason}</p>" for (t, m), reason in impossible.items()]
    return "\n".join(out)


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else (f"{seconds / 60:.0f} min" if seconds >= 60
                                                              else f"{seconds:.1f} s")


def render_costs(jobs: pd.DataFrame, methods, task_of: dict) -> str:
    """A row per (task, dataset), a column per method: the cell's recorded CPU (or wall, marked ``w``)
    seconds over its splits, as the run archive holds them (``structpred runs cost --by dataset``)."""
    if jobs.empty or jobs["seconds"].isna().all():
        return ""
    sums = jobs.groupby(["dataset", "method"], sort=False).agg(seconds=("seconds", "sum"),
                                                                wall=("measure", lambda m: bool((m == "wall").any())))
    head = "".join(f"<th>{m}</th>" for m in methods)
    rows = []
    for dataset in dict.fromkeys(jobs["dataset"]):
        cells = "".join(
            f"<td>{_duration(sums.loc[(dataset, m), 'seconds'])}{' w' if sums.loc[(dataset, m), 'wall'] else ''}</td>"
            if (dataset, m) in sums.index else "<td>–</td>" for m in methods)
        rows.append(f"<tr><td class=l>{task_of.get(dataset, '')}</td><td class=l>{dataset}</td>{cells}</tr>")
    return ("<details><summary>Training CPU per cell (the run archive's recorded seconds, summed over the cell's "
            "splits; a cell read from its source table: that table's job; w: wall seconds, a busy machine's)</summary>"
            f"<table><tr><th class=l>task</th><th class=l>dataset</th>{head}</tr>{''.join(rows)}</table></details>")


def summary_sentences(table: pd.DataFrame, tests: pd.DataFrame, percent_tasks, unit) -> list[str]:
    """A sentence per (task, dataset), read from the table and its tests: the method of lowest
    mean test loss, those not significantly worse (bold) and those that are; ``unit(dataset)``
    names what the Wilcoxon tests pair (splits, or test examples where a task has one split).
    Last, the tasks whose pairs are too few for the test to reach ALPHA at all: over n pairs the
    exact two-sided test's smallest p is 2 / 2^n (0.0625 at n = 5)."""
    data = table[table["metric"] == "test_loss"]
    bold = bold_of(tests)
    out = []
    powerless: dict[int, list[str]] = {}
    for (task, dataset), part in data.groupby(["task", "dataset"], sort=False):
        n = int(part["n_splits"].max())
        if 2.0 ** (1 - n) >= ALPHA and task not in powerless.get(n, []):
            powerless.setdefault(n, []).append(task)
        part = part.sort_values("mean", kind="stable")
        fmt = (lambda v: f"{100 * v:.2f} %") if task in percent_tasks else (lambda v: f"{v:.4f}")
        best = part.iloc[0]
        level = [m for m in part["method"][1:] if bold.get((task, dataset, "test_loss", m), False)]
        worse = [f"{r.method} ({fmt(r.mean)})" for r in part.iloc[1:].itertuples() if r.method not in level]
        out.append(f"<b>{task}, {dataset}</b>: {best.method} has the lowest mean test loss, {fmt(best['mean'])} over "
                   f"{int(best['n_splits'])} {unit(dataset)}; "
                   + (f"{_and(level)} {'is' if len(level) == 1 else 'are'} not significantly worse "
                      f"(paired Wilcoxon, p &ge; {ALPHA})" if level else "every other method is significantly worse")
                   + (f"; significantly worse: {_and(worse)}" if level and worse else "") + ".")
    for n, tasks in powerless.items():
        out.append(f"On {_and(tasks)} each cell has {n} splits, and over {n} pairs the exact paired Wilcoxon test's "
                   f"smallest two-sided p is 2/2^{n} = {2.0 ** (1 - n):.4g}, not below {ALPHA}: there no method can be "
                   "significantly worse than the best, and the bold marks no difference.")
    return out


#: the questions the matrix answers across tasks: (method, rival) pairs compared on every dataset
PAIRS = (("M4N", "M3N"), ("AGM", "CRF"), ("AGM", "M3N"), ("Casimir-SVRG", "SGD"))


def pair_sentences(table: pd.DataFrame, tests: pd.DataFrame) -> list[str]:
    """Per :data:`PAIRS` both methods have cells for: on how many datasets the first has the lower
    mean test loss, and on how many of those (and of the others) the paired Wilcoxon test is
    significant (p < ALPHA); then on how many datasets QS is best or not significantly worse."""
    data = table[table["metric"] == "test_loss"].set_index(["task", "dataset", "method"])["mean"]
    pvalue = {}
    for r in tests.itertuples():
        pvalue[(r.task, r.dataset, r.method_a, r.method_b)] = pvalue[(r.task, r.dataset, r.method_b, r.method_a)] = r.p_value
    groups = list(dict.fromkeys((t, d) for t, d, _ in data.index))
    out = []
    for a, b in PAIRS:
        both = [(t, d) for t, d in groups if (t, d, a) in data.index and (t, d, b) in data.index]
        if not both:
            continue
        wins = [g for g in both if data[(*g, a)] < data[(*g, b)]]
        sig = lambda gs: sum(pvalue.get((*g, a, b), 1.0) < ALPHA for g in gs)  # noqa: E731
        losses = [g for g in both if g not in wins]
        out.append(f"{a} has a lower mean test loss than {b} on {len(wins)} of {len(both)} datasets "
                   f"({sig(wins)} significantly); {b} lower on {len(losses)} ({sig(losses)} significantly).")
    bold = bold_of(tests)
    qs = [g for g in groups if (*g, "QS") in data.index]
    if qs:
        level = [f"{t} {d}" for t, d in qs if bold.get((t, d, "test_loss", "QS"), False)]
        out.append(f"QS is the best or not significantly worse on {len(level)} of {len(qs)} datasets"
                   + (f" ({_and(level)})." if level else "."))
    return out


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def relative_losses(table: pd.DataFrame) -> pd.DataFrame:
    """Per (task, method): the mean over the task's datasets of the method's test loss divided by
    the dataset's best method's."""
    data = table[table["metric"] == "test_loss"].copy()
    best = data.groupby(["task", "dataset"])["mean"].transform("min")
    data["relative"] = data["mean"] / best.where(best > 0, np.nan)
    return data.groupby(["task", "method"], sort=False)["relative"].mean().reset_index()


#: the figure's axis stops here (percent above the best); a bar past it is cut and labelled
EXCESS_CAP = 50.0


def matrix_figure(table: pd.DataFrame, tests: pd.DataFrame, path, methods) -> None:
    """Each task a group of bars, a colour per method (tab10 in the matrix's order): how much
    higher the method's test loss is than the best method's, in percent, averaged over the
    task's datasets; a dot over a bar: the best or not significantly worse on every dataset of
    the task (the table's bold); a bar past :data:`EXCESS_CAP` is cut there and labelled with
    its value, so that a few-percent difference stays visible beside a far worse method."""
    rel = relative_losses(table)
    bold = bold_of(tests)
    data = table[table["metric"] == "test_loss"]
    level = {(t, m): all(bold.get((t, d, "test_loss", m), False) for d in part["dataset"])
             for (t, m), part in data.groupby(["task", "method"], sort=False)}
    tasks = list(dict.fromkeys(rel["task"]))
    top = min(EXCESS_CAP, max(1.0, float(np.nanmax(100 * (rel["relative"] - 1))) if len(rel) else 1.0))
    fig, ax = subplots(figsize=(MAX_WIDTH_IN, 3.2), layout="constrained")
    width = 0.8 / max(len(methods), 1)
    for i, m in enumerate(methods):
        part = rel[rel["method"] == m].set_index("task").reindex(tasks)
        x = np.arange(len(tasks)) + (i - (len(methods) - 1) / 2) * width
        excess = 100 * (part["relative"].to_numpy() - 1)
        ax.bar(x, np.minimum(excess, top), width, label=m, color=f"C{i}")
        for xj, e in zip(x, excess):
            if e > top:
                ax.text(xj, top, f"+{e:.0f}%", ha="center", va="bottom", fontsize="x-small", rotation=90)
        marks = [j for j, t in enumerate(tasks) if level.get((t, m), False)]
        ax.plot(x[marks], excess[marks], "o", color="0.15", ms=3.5, zorder=3)
    ax.set_ylim(0, top * 1.4)
    ax.set_ylabel("test loss above the best method's (%)")
    ax.set_xticks(np.arange(len(tasks)), tasks)
    ax.set_title(f"• best, or not significantly worse on every dataset of the task (paired Wilcoxon); "
                 f"bars past {top:g}% cut and labelled", fontsize="small", loc="left")
    legend_outside(fig, [ax], ncol=(len(methods) + 1) // 2)   # two balanced rows
    save_figure(fig, path)
