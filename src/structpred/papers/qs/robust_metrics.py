"""QS (NeurIPS 2016) §6 robust regression under every candidate definition of "test error": the
sensitivity table ``qs_robust_metrics``.

The paper does not say what its test error measures.  A job is one of ``qs_robust``'s jobs (n,
method, block of repetitions): it reads that job's archived rows (the hyper-parameters each
repetition chose by cross-validation: ``sigma``, ``lam``, ``cauchy_scale``), draws the same
training and test sets (``qs_robust``'s seeds), refits each repetition at its chosen point and
scores the one prediction under every :data:`DEFINITIONS`: the mean squared and mean absolute
error and their square roots, against ``f(x) = sin(6 pi x)`` and against the noisy test targets
``y``.  ``mse_f`` is ``qs_robust``'s own test error: the job checks it against the archived value
(``archived_diff`` rows, in the job's file only).  Every definition is a row beside the paper's
number; none is picked.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from structpred.errors import ConfigError, StructpredError
from structpred.papers.qs.robust import METHODS, TASK, _fit_predict, draw
from structpred.papers.registry import Experiment, get, register
from structpred.tables.seeding import rng_for
from structpred.tables.sensitivity import figure_by, render_by, tests_by

log = logging.getLogger(__name__)

#: definition -> (target, statistic): the candidates for the paper's "test error"
DEFINITIONS = {
    "mse_f": ("f", "mse"), "rmse_f": ("f", "rmse"), "mae_f": ("f", "mae"), "root_mae_f": ("f", "root_mae"),
    "mse_y": ("y", "mse"), "rmse_y": ("y", "rmse"), "mae_y": ("y", "mae"), "root_mae_y": ("y", "root_mae"),
}


def errors(pred: np.ndarray, f: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Every :data:`DEFINITIONS` of the test error of ``pred`` against ``f`` and the noisy ``y``."""
    out = {}
    for name, (target, stat) in DEFINITIONS.items():
        r = pred - (f if target == "f" else y)
        mse, mae = float(np.mean(r * r)), float(np.mean(np.abs(r)))
        out[name] = {"mse": mse, "rmse": float(np.sqrt(mse)), "mae": mae, "root_mae": float(np.sqrt(mae))}[stat]
    return out


def chosen(rows: pd.DataFrame, method: str) -> dict[int, tuple[float, float, float, float]]:
    """repetition -> ``(sigma, lam, c, archived test error)`` from a ``qs_robust`` job's rows (``nan``
    where the method has no such parameter)."""
    out = {}
    for rep, part in rows.groupby("split", sort=True):
        values = dict(zip(part["metric"], part["value"]))
        if "test_error" not in values or "sigma" not in values:
            raise StructpredError(f"qs_robust rows of {method} repetition {rep} lack test_error or sigma")
        err = part[part["metric"] == "test_error"].iloc[0]
        lam = float(err["lam"]) if pd.notna(err["lam"]) and str(err["lam"]) != "" else float("nan")
        out[int(rep)] = (float(values["sigma"]), lam, float(values.get("cauchy_scale", float("nan"))),
                         float(values["test_error"]))
    return out


def nearness(table: pd.DataFrame, column: str, tolerance: dict | None = None) -> pd.DataFrame:
    """Per value of ``column``: how near its cells are to the paper's (those with a paper number):
    cells, cells within the ledger's tolerance ``max(abs, rel |paper|)``, the median ratio ours /
    paper, and the mean |log(ours / paper)| (0: all equal)."""
    tol = {"abs": 0.01, "rel": 0.10, **(tolerance or {})}
    data = table[table["reference"].notna()]
    out = []
    for value, part in data.groupby(column, sort=False):
        ratio = part["mean"].to_numpy(float) / part["reference"].to_numpy(float)
        within = np.abs(part["mean"] - part["reference"]) <= np.maximum(tol["abs"], tol["rel"] * part["reference"].abs())
        out.append({column: value, "cells": len(part), "within_tolerance": int(within.sum()),
                    "median_ratio": float(np.median(ratio)), "mean_abs_log_ratio": float(np.mean(np.abs(np.log(ratio))))})
    return pd.DataFrame(out)


@register
class RobustRegressionMetrics(Experiment):
    """QS §6 robust regression, ``qs_robust``'s fits scored under every candidate test error."""

    name = "qs_robust_metrics"
    title = ("QS (NeurIPS 2016) §6 robust estimation: qs_robust's fits scored under every candidate definition "
             "of the test error (sensitivity)")
    needs = ("runs",)
    runs_of = references_of = "qs_robust"
    key = ("task", "dataset", "method", "definition", "metric")
    reference_key = ("task", "dataset", "method", "metric")

    def jobs(self, config):
        return get(self.runs_of).jobs(config)

    def view(self, config, dataset):
        return None

    def run_inputs(self, config, dataset, method):
        return [(dataset, method, None)]   # qs_robust's job of the same (n, method, block)

    def numeric_paths(self, config, dataset, method):
        return ("qs.cauchy",)

    def settings(self, config, dataset, method):
        return {**get(self.runs_of).settings(config, dataset, method), "definitions": list(DEFINITIONS)}

    def run(self, inputs, settings, *, seed, dataset, method, split, threads=1):
        if method not in METHODS:
            raise ConfigError(f"unknown {self.name} method {method!r}; known: {', '.join(METHODS)}")
        archived = pd.concat([pd.read_csv(p) for p in inputs["runs"]], ignore_index=True)
        picks = chosen(archived[archived["metric"].isin(["test_error", "sigma", "cauchy_scale"])], method)
        n = int(dataset.removeprefix("n"))
        per = settings["repetitions_per_job"]
        reps = range(split * per, min((split + 1) * per, settings["n_repetitions"]))
        missing = [r for r in reps if r not in picks]
        if missing:
            raise StructpredError(f"{inputs['runs'][0]} has no chosen hyper-parameters for repetitions {missing}")
        rows = []
        for rep in reps:
            rng = rng_for(seed, self.runs_of, n, rep)   # qs_robust's draws: the same data
            X, y, _ = draw(settings["model"], n, rng)
            Xt, yt, ft = draw(settings["model"], settings["n_test"], rng)
            sigma, lam, c, before = picks[rep]
            start = time.perf_counter()
            pred = _fit_predict(method, X, y, Xt, sigma, lam, c)
            seconds = time.perf_counter() - start
            scores = errors(pred, ft, yt)
            log.info("%s n=%d rep=%d: %s (archived mse_f %.6g)", method, n, rep,
                     ", ".join(f"{k} {v:.4g}" for k, v in scores.items()), before)
            common = {"experiment": self.name, "task": TASK, "dataset": dataset, "method": method, "split": rep,
                      "lam": None if np.isnan(lam) else lam}
            rows += [{**common, "selected": True, "metric": "test_error", "definition": d, "value": v}
                     for d, v in scores.items()]
            rows += [{**common, "selected": True, "metric": "seconds", "value": seconds},
                     {**common, "selected": False, "metric": "archived_diff", "definition": "mse_f",
                      "value": scores["mse_f"] - before}]
        return rows, None

    def render(self, table, tests, config):
        near = nearness(table, "definition", _tolerance(config))
        lines = "; ".join(f"{r.definition}: {r.within_tolerance} of {r.cells} cells within the ledger's tolerance, "
                          f"median ours/paper {r.median_ratio:.2f}" for r in near.itertuples())
        return render_by(table, rows=["definition", "dataset"], metric="test_error", note=(
            "qs_robust's fits (the hyper-parameters each repetition chose) scored under every candidate definition "
            "of the test error: mean squared / absolute error and their roots, against f = sin(6 pi x) and against "
            "the noisy test targets y; mean ± std over the 100 repetitions, the paper's cell beneath each. "
            "mse_f is qs_robust's own. " + lines))

    def figure(self, table, path, config):
        figure_by(table, path, panel="definition", column="dataset", metric="test_error", ylabel="test error",
                  title="QS robust regression: the test error under each definition, per n", log=True)

    def tests(self, selected, config):
        return tests_by(selected[selected["metric"] == "test_error"], "definition")


def _tolerance(config: dict) -> dict | None:
    """The claims ledger's cell tolerance (``config/claims.yaml``), if the config names it."""
    path = (config.get("report") or {}).get("claims")
    if not path or not Path(path).is_file():
        return None
    return (yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}).get("tolerance")
