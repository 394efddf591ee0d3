"""Casimir (Pillutla et al., NeurIPS 2018) §7.3: the NER Figures 2 and 5a-d with every method tuned
by the paper's rule, beside ``casimir_ner`` (the reference scripts' settings).

Tuning (§7.3): for each ``c`` of the figures and each method with a ``tuning.grids`` entry, one run
per grid point (seed 0, the figure's budget, evaluated at the end); the chosen point is

    argmin { F(w_T; point) : F1_val(point) >= (1 - within) max_points F1_val },

the lowest train objective among the points whose validation F1 (``tuning.f1``, on testa) is within
``within`` (1%) of the grid's best.  Each grid point is a job of its own (dataset ``tune_c<c>``,
method ``<method>_<param>=<value>_...``), so the grid runs in parallel and resumes per point.  A
figure job reads its method's grid at its ``c`` (input kind ``runs``) and trains with the chosen
values, except those its figure sets or sweeps (Fig. 5a sweeps mu: its runs take the tuned L or
learning rate); it writes each tuned value as a row (metric = the parameter), so the report prints
them and the grid-edge check sees them.
"""

from __future__ import annotations

import html
import itertools
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from structpred.errors import ConfigError
from structpred.papers.casimir.names import c_label
from structpred.papers.casimir.ner import NerFigures, job_settings
from structpred.papers.registry import register

TUNE = "tune"


def tune_dataset(c) -> str:
    return f"{TUNE}_c{c_label(c)}"


def grid_points(grid: dict) -> list[dict]:
    """Every combination of a method's grid ``{param: [values]}``, the first parameter slowest."""
    names = list(grid)
    return [dict(zip(names, values)) for values in itertools.product(*(grid[n] for n in names))]


def point_label(point: dict) -> str:
    """``eta0=0.02_t0=150000``: a grid point as a job's variant."""
    return "_".join(f"{k}={float(v):g}" for k, v in point.items())


def param_rows(template: dict, values: dict) -> list[dict]:
    """One row per hyper-parameter value (metric = its name), like ``template``."""
    return [{**template, "metric": p, "value": float(v)} for p, v in values.items()]


def choose(points: pd.DataFrame, f1: str, within: float) -> pd.Series:
    """The §7.3 rule over a grid's runs (one row per point, columns ``train_objective`` and ``f1``):
    the lowest train objective among the points whose ``f1`` is at least ``(1 - within)`` times the
    best; ties go to the first point in grid order."""
    if points.empty:
        raise ConfigError("casimir_ner_tuned: the tuning grid has no finished run")
    bad = points[[f1, "train_objective"]].isna().any(axis=1)
    if bad.any():
        raise ConfigError(f"casimir_ner_tuned: tuning run {points.index[bad][0]} has no {f1} or train objective")
    near = points[points[f1] >= (1.0 - within) * points[f1].max()]
    return near.loc[near["train_objective"].idxmin()]


@register
class TunedNerFigures(NerFigures):
    """Casimir Figures 2 and 5a-d with the §7.3 tuning stage: the grid's jobs, then the figures'."""

    name = "casimir_ner_tuned"
    title = "Casimir (NeurIPS 2018) Figures 2 and 5 tuned by the paper's rule (§7.3): CoNLL-2003 NER"
    needs = ("view", "runs")
    references_of = "casimir_ner"

    def block(self, config: dict) -> dict:
        """``casimir_ner``'s settings with this block's methods, figures, run list and tuning."""
        base, own = config["casimir_ner"], config[self.name]
        return {**base, **{k: own[k] for k in ("methods", "figures", "run", "tuning") if k in own}}

    def tuning_cs(self, config: dict) -> list[float]:
        s = self.block(config)
        return list(dict.fromkeys(float(c) for f in s["run"] for c in s["figures"][f]["c"]))

    def tuning_runs(self, config: dict) -> dict[tuple[str, str], dict]:
        """``(tune_c<c>, <method>_<point>)`` -> the tuning run it stands for."""
        grids = self.block(config)["tuning"]["grids"]
        return {(tune_dataset(c), f"{m}_{point_label(p)}"): {"figure": TUNE, "c": c, "method": m,
                                                             "variant": point_label(p), "swept": p}
                for c in self.tuning_cs(config) for m, grid in grids.items() for p in grid_points(grid)}

    def jobs(self, config):
        tuning = [(d, m, 0) for d, m in self.tuning_runs(config)]
        return tuning + super().jobs(config)

    def runs(self, config):
        return self._plan(config)[0]

    def _plan(self, config) -> tuple[dict, dict]:
        """``(runs, copies)``: every job's run, and each Fig. 5 job's Fig. 2 source
        (:meth:`copy_source`, filled in on first use). Both depend on the block alone, and snakemake
        asks for them once per job while it builds the DAG (thousands of jobs, each once a scan of
        every run): made once per block, the last one kept."""
        key = json.dumps(self.block(config), sort_keys=True, default=str)
        if getattr(self, "_plan_key", None) != key:
            self._plan_key, self._plan_value = key, ({**self.tuning_runs(config), **super().runs(config)}, {})
        return self._plan_value

    def tuned_params(self, config: dict, run: dict) -> list[str]:
        """The parameters a figure run takes from the tuning: its method's grid less those its
        figure sets or sweeps."""
        s = self.block(config)
        if run["figure"] == TUNE:
            return []
        fixed = set(s["figures"][run["figure"]].get("settings", {}).get(run["method"], {})) | set(run["swept"])
        return [p for p in s["tuning"]["grids"].get(run["method"], {}) if p not in fixed]

    def _figure_settings(self, config, dataset, method):
        out = super().settings(config, dataset, method)
        tuning = self.block(config)["tuning"]
        run = self.runs(config)[(dataset, method)]
        return {**out, "tune": {"params": self.tuned_params(config, run), "f1": tuning["f1"],
                                "within": tuning["within"]}}

    def copy_source(self, config, dataset, method) -> tuple[str, str] | None:
        """The Fig. 2 job a Fig. 5 run repeats, if any: the same c, method and settings (the value
        its panel sweeps to is Fig. 2's, e.g. Fig. 5c's prox-centre warm start, Fig. 5d's K = 5),
        hence the same tuned values and, seed k drawing the same sample order in every figure, the
        same run; such a job copies that job's rows instead of training again."""
        runs, copies = self._plan(config)
        run = runs.get((dataset, method))
        if run is None or run["figure"] in (TUNE, "fig2"):
            return None
        if (dataset, method) in copies:
            return copies[(dataset, method)]

        def comparable(d, m):
            s = self._figure_settings(config, d, m)
            hyper = {k: v for k, v in s["hyper"].items() if not (k == "smoothing" and v == "smooth")}  # the default
            return {**{k: v for k, v in s.items() if k not in ("figure", "variant")}, "hyper": hyper}

        mine = comparable(dataset, method)
        copies[(dataset, method)] = next(((d, m) for (d, m), r in runs.items() if r["figure"] == "fig2"
                                          and r["c"] == run["c"] and r["method"] == run["method"]
                                          and comparable(d, m) == mine), None)
        return copies[(dataset, method)]

    def settings(self, config, dataset, method):
        run = self.runs(config).get((dataset, method))
        if run is None or run["figure"] != TUNE:
            out = self._figure_settings(config, dataset, method)
            source = self.copy_source(config, dataset, method)
            return out if source is None else {**out, "copy_of": list(source)}
        s = self.block(config)   # a tuning point: the method's settings and the point, evaluated at the end
        hyper = {**s["methods"][run["method"]], **run["swept"]}
        return {**job_settings(s, run, hyper), "eval_every": hyper["n_passes"], "point": list(run["swept"])}

    def run_inputs(self, config, dataset, method):
        run = self.runs(config).get((dataset, method))
        source = self.copy_source(config, dataset, method)
        if source is not None:
            return [(*source, None)]   # the Fig. 2 job of the same seed
        if run is None or not self.tuned_params(config, run):
            return []
        return [(d, m, 0) for (d, m), r in self.tuning_runs(config).items()
                if r["c"] == run["c"] and r["method"] == run["method"]]

    def grids(self, config, dataset, method):
        run = self.runs(config).get((dataset, method))
        if run is None:
            return {}
        grids = self.block(config)["tuning"]["grids"].get(run["method"], {})
        return {p: list(grids[p]) for p in self.tuned_params(config, run)}

    def run(self, inputs, settings, *, seed, dataset, method, split, threads=1):
        s = dict(settings)
        if s["figure"] == TUNE:
            point = s.pop("point")   # the rest is a NerJob's
            rows, history = super().run(inputs, s, seed=seed, dataset=dataset, method=method, split=split)
            return rows + param_rows(rows[0], {p: s["hyper"][p] for p in point}), history
        if s.get("copy_of"):
            return copied_run(inputs["runs"][0], s, self.name, dataset)
        tune = s.pop("tune")
        chosen = {}
        if tune["params"]:
            grid = pd.concat([pd.read_csv(p, keep_default_na=False) for p in inputs["runs"]], ignore_index=True)
            points = grid.pivot_table(index="variant", columns="metric", values="value", aggfunc="first", sort=False)
            best = choose(points, tune["f1"], tune["within"])
            chosen = {p: float(best[p]) for p in tune["params"]}
        s["hyper"] = {**s["hyper"], **chosen}
        rows, history = super().run(inputs, s, seed=seed, dataset=dataset, method=method, split=split)
        return rows + param_rows(rows[0], chosen), history

    def render(self, table, tests, config):
        grid = table[table["figure"] == TUNE]
        rest = table[table["figure"] != TUNE]
        return render_tuned(rest, self.block(config)["tuning"]) + super().render(rest, tests, config) + \
            render_grid(grid, self.block(config)["tuning"])

    def figure(self, table, path, config):
        super().figure(table[table["figure"] != TUNE], path, config)


def copied_run(rows_path, settings: dict, experiment: str, dataset: str):
    """A Fig. 5 job that repeats a Fig. 2 run (:meth:`TunedNerFigures.copy_source`): that job's
    rows and history under this job's names (dataset, figure, variant); its seconds are the copy's."""
    start = time.perf_counter()
    rows = pd.read_csv(rows_path, keep_default_na=False, na_values=[""])
    history = pd.read_csv(Path(rows_path).with_suffix(".history.csv"), keep_default_na=False, na_values=[""])
    names = {"figure": settings["figure"], "variant": settings["variant"]}
    rows = rows.assign(experiment=experiment, dataset=dataset, **names)
    history = history.assign(**names)
    rows.loc[rows["metric"] == "seconds", "value"] = time.perf_counter() - start
    records = [{k: v for k, v in r.items() if not (isinstance(v, float) and np.isnan(v))}
               for r in rows.to_dict("records")]
    return records, history


def render_tuned(table: pd.DataFrame, tuning: dict) -> str:
    """Per (c, method): the tuned values the figures' runs used (mean over seeds: one value)."""
    params = sorted({p for g in tuning["grids"].values() for p in g})
    rows = table[table["metric"].isin(params) & (table["figure"] == "fig2")]
    out = [f"<p>Tuned by §7.3's rule: per c and method, the lowest train objective among the grid points whose "
           f"{html.escape(tuning['f1'])} is within {tuning['within']:g} (relative) of the grid's best; "
           "grids and runs below.</p><table><tr><th class=l>c</th><th class=l>method</th><th class=l>tuned</th></tr>"]
    for (c, method), part in rows.groupby(["c", "method"], sort=False):
        values = ", ".join(f"{p} = {v:g}" for p, v in zip(part["metric"], part["mean"]))
        out.append(f"<tr><td class=l>{c_label(c)}</td><td class=l>{html.escape(method)}</td>"
                   f"<td class=l>{html.escape(values)}</td></tr>")
    return "\n".join(out + ["</table>"])


def render_grid(grid: pd.DataFrame, tuning: dict) -> str:
    """The tuning runs: per c and method, each point's train objective and validation F1, in a
    collapsed section (hundreds of rows)."""
    if grid.empty:
        return ""
    wide = grid.pivot_table(index=["c", "method", "variant"], columns="metric", values="mean", aggfunc="first",
                            sort=False)
    f1 = tuning["f1"]
    out = [f"<details><summary>The tuning grid: {len(wide)} points (seed 0, values at the end of the budget; "
           "also the rows of figure <code>tune</code> in the tidy table)</summary><table><tr><th class=l>c</th>"
           f"<th class=l>method</th><th class=l>point</th><th>train objective</th><th>{html.escape(f1)}</th></tr>"]
    for (c, method, variant), row in wide.iterrows():
        out.append(f"<tr><td class=l>{c_label(c)}</td><td class=l>{html.escape(method)}</td>"
                   f"<td class=l>{html.escape(variant)}</td><td>{row.get('train_objective', float('nan')):.4f}</td>"
                   f"<td>{row.get(f1, float('nan')):.4f}</td></tr>")
    return "\n".join(out + ["</table></details>"])

