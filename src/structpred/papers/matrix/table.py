"""Beyond the papers: every method on every task, one table (issue 59).

Rows: the seven methods of :mod:`structpred.papers.matrix.methods`; columns: tasks, each with its
paper table's data, splits, features and task loss (its ``source``).  A cell whose method the
source table already runs on that dataset is read from the source's runs (the same job: the same
data, split, lambda grid and budget); every other cell is fitted here on the source's split
features over the source's lambda grid, with its method family's budget from the config,
lambda chosen on the validation part (ties: the first of the grid).  A cell that cannot exist
(the CRF on permutations: marginals need the permanent) is printed with its reason.  Per
(task, dataset): the best method by mean test loss, and bold every method not significantly
worse by a paired Wilcoxon test over the splits (AGM's rule); every pair's test is in the test
table.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from structpred.errors import ConfigError
from structpred.outputs import make_space
from structpred.papers.m4n.tables import fit_lambda_grid, records_to_rows
from structpred.papers.matrix.methods import METHODS, estimator, why_impossible
from structpred.papers.registry import Experiment, get, register
from structpred.tables.cells import bold_of, cell
from structpred.tables.figures import MAX_WIDTH_IN, legend_outside, method_colour, save_figure
from structpred.tables.fit_cache import FitCache
from structpred.tables.job import JobSettings
from structpred.tables.results import read_results
from structpred.tables.seeding import int_seed
from structpred.tables.significance import best_tests
from structpred.tables.splits import load_split, split_part


@dataclass(frozen=True)
class MatrixJob(JobSettings):
    """One fitted cell's settings: its task, method, the task loss (and output space options), the
    source table's lambda grid, the method family's ``budget`` (its estimator's keyword arguments),
    the split's number of labels and the fits' seed."""

    task: str
    method: str
    loss: str
    lambdas: tuple
    budget: dict
    n_labels: int
    random_state: int
    space: dict | None = None

    def estimator(self, lam: float):
        space = make_space(self.loss, self.n_labels, **(self.space or {}))
        return estimator(self.method, space, lam, self.budget, self.random_state)


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


def task_spec(block: dict, task: str) -> dict:
    if task not in block["tasks"]:
        raise ConfigError(f"matrix: unknown task {task!r}; known: {', '.join(block['tasks'])}")
    return block["tasks"][task]


def _family(loss: str, space: dict | None):
    """A small space of the loss's family: enough to say which methods it supports."""
    return make_space(loss, 3, **(space or {}))


@register
class Matrix(Experiment):
    """Every method on every task: M4N Table 1's tasks first (multi-class, ordinal, label ranking,
    OCR), their cells of M3N, CRF and M4N read from ``m4n_table1``'s runs."""

    name = "matrix"
    title = "Beyond the papers: every method on every task (average test loss over splits)"
    needs = ("features", "runs")
    percent_tasks = frozenset({"mc", "seq", "rnk"})
    resumable = True

    def _task(self, config, dataset) -> tuple[str, dict]:
        for task, spec in self.block(config)["tasks"].items():
            if dataset in spec["datasets"]:
                return task, spec
        raise ConfigError(f"matrix: {dataset} is in no task")

    def _source_settings(self, config, dataset) -> dict:
        """The source table's settings of a dataset's job (its loss, lambda grid, space options)."""
        return get(self._task(config, dataset)[1]["source"]).settings(config, dataset, "M3N")

    def borrowed(self, config, dataset, method) -> bool:
        """Whether the source table runs ``method`` on ``dataset`` (its cell is read from there)."""
        source = self._task(config, dataset)[1]["source"]
        return any(d == dataset and m == method for d, m, _ in get(source).jobs(config))

    def impossible(self, config) -> dict[tuple[str, str], str]:
        """``(task, method) -> reason`` of the cells that cannot exist."""
        out = {}
        for task, spec in self.block(config)["tasks"].items():
            s = self._source_settings(config, spec["datasets"][0])
            for method in self.block(config)["methods"]:
                reason = why_impossible(method, _family(s["loss"], s.get("space")))
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
                if (task, m) not in impossible for k in range(s["n_splits"])]

    def job_needs(self, config, dataset, method):
        return ("runs",) if self.borrowed(config, dataset, method) else ("features",)

    def runs_source(self, config, dataset, method):
        return self._task(config, dataset)[1]["source"]

    def run_inputs(self, config, dataset, method):
        return [(dataset, method, None)] if self.borrowed(config, dataset, method) else []

    def feature_settings(self, config, dataset):
        return get(self._task(config, dataset)[1]["source"]).feature_settings(config, dataset)

    def threads(self, config, dataset):
        return self.block(config).get("threads", 1)

    def settings(self, config, dataset, method):
        task, spec = self._task(config, dataset)
        if self.borrowed(config, dataset, method):
            return {"task": task, "method": method, "source": spec["source"]}
        src = self._source_settings(config, dataset)
        out = {"task": task, "method": method, "loss": src["loss"], "lambdas": list(src["lambdas"]),
               "budget": dict(self.block(config)["budgets"].get(method, {}))}
        if src.get("space"):
            out["space"] = dict(src["space"])
        return out

    def numeric_paths(self, config, dataset, method):
        if self.borrowed(config, dataset, method):
            return get(self.runs_source(config, dataset, method)).numeric_paths(config, dataset, method)
        return (f"matrix.{method}", "features.nystrom")

    def run(self, inputs, settings, *, seed, dataset, method, split, threads=1, checkpoint=None):
        if "source" in settings:        # the source table's job: its rows, as this table's
            rows = read_results(inputs["runs"]).assign(experiment=self.name)
            return rows.dropna(axis=1, how="all").to_dict("records"), None
        arrays, meta = load_split(inputs["features"])
        job = MatrixJob.from_settings(settings, n_labels=int(meta["n_labels"]),
                                      random_state=int_seed(seed, dataset, "order", split))
        cache = None
        if checkpoint is not None:
            key = {"experiment": self.name, "dataset": dataset, "method": method, "split": split, "seed": seed,
                   "settings": settings}
            cache = FitCache(checkpoint, key, [inputs["features"]])
        records, history = fit_lambda_grid(arrays, job, n_jobs=threads, cache=cache, fit=fit_cell)
        return records_to_rows(records, experiment=self.name, task=job.task, dataset=dataset, method=method,
                               split=split), history

    def tests(self, selected, config):
        return best_tests(selected[selected["metric"] == "test_loss"])

    def render(self, table, tests, config):
        return render_matrix(table, tests, self.block(config)["methods"], self.impossible(config),
                             self.percent_tasks)

    def figure(self, table, path, config):
        matrix_figure(table, path, self.block(config)["methods"])


def render_matrix(table: pd.DataFrame, tests: pd.DataFrame, methods, impossible: dict, percent_tasks) -> str:
    """A row per (task, dataset), a column per method; bold = best or not significantly worse;
    a cell that cannot exist is ``×`` with its reason below the table."""
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
    out += [f"<p>× {m} on {t}: {reason}</p>" for (t, m), reason in impossible.items()]
    return "\n".join(out)


def relative_losses(table: pd.DataFrame) -> pd.DataFrame:
    """Per (task, method): the mean over the task's datasets of the method's test loss divided by
    the dataset's best method's."""
    data = table[table["metric"] == "test_loss"].copy()
    best = data.groupby(["task", "dataset"])["mean"].transform("min")
    data["relative"] = data["mean"] / best.where(best > 0, np.nan)
    return data.groupby(["task", "method"], sort=False)["relative"].mean().reset_index()


def matrix_figure(table: pd.DataFrame, path, methods) -> None:
    """Each task a group of bars: each method's test loss relative to the best on its datasets."""
    rel = relative_losses(table)
    tasks = list(dict.fromkeys(rel["task"]))
    fig, ax = plt.subplots(figsize=(MAX_WIDTH_IN, 3.2), layout="constrained")
    width = 0.8 / max(len(methods), 1)
    for i, m in enumerate(methods):
        part = rel[rel["method"] == m].set_index("task").reindex(tasks)
        ax.bar(np.arange(len(tasks)) + (i - (len(methods) - 1) / 2) * width, part["relative"], width,
               label=m, color=method_colour(m, i))
    ax.axhline(1.0, color="0.3", lw=0.8)
    ax.set_xticks(np.arange(len(tasks)), tasks)
    ax.set_ylabel("test loss / best method's")
    legend_outside(fig, [ax], ncol=min(len(methods), 4))
    save_figure(fig, path)
