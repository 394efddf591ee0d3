"""Casimir (Pillutla et al., NeurIPS 2018) §7.1: CoNLL-2003 NER, Figures 2 and 5a-d.

The convex structural SVM ``F(w) = (1/n) sum_i max_y [Delta_H(y, y_i) + <w, Phi(x_i, y) -
Phi(x_i, y_i)>] + lam/2 ||w||^2`` with ``lam = c / n`` on the reference code's hashed window
features (:mod:`structpred.features.hashed`), the unnormalised Hamming loss and the file's IOB1
tags, trained by SGD, BCFW, SVRG, Casimir-SVRG-const and Casimir-SVRG-adapt with the reference
code's hyper-parameters (``docs/papers/casimir_reference_settings.md``).

One job = one (figure, c, method, variant, seed): the figure and ``c`` are the job's
``dataset`` (``fig2_c0.1``), the method and the swept setting its ``method``
(``Casimir-SVRG-const_mu=8``), the seed (the sample order) its ``split``.  Every epoch records
the oracle calls / n (an SVRG-type step makes two calls, full gradients are not counted), the
train objective (non-smooth), the held-out objectives (with the train regulariser, as the
reference) and F1 scores on testa and testb; the first record is ``w = 0``, where the train
objective is the mean training sentence length.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from structpred.data.store import load
from structpred.errors import ConfigError
from structpred.features.hashed import WindowTokens, window_splits
from structpred.metrics import entity_f1, token_f1
from structpred.outputs import Chain
from structpred.papers.casimir import report as casimir_report
from structpred.papers.casimir.names import METHODS, c_label
from structpred.papers.registry import Experiment, register
from structpred.solvers import BCFW, SGD, SVRG, CasimirSVRG
from structpred.solvers.driver import run
from structpred.solvers.problem import check_problem
from structpred.surrogates import Hinge, TopKSmoothedHinge
from structpred.tables.job import JobSettings
from structpred.tables.seeding import rng_for
from structpred.tables.significance import BEST_COLUMNS, best_tests

log = logging.getLogger(__name__)

#: the settings a figure may sweep (keys of a method's block)
SWEEPS = ("mu", "K", "warm_start", "smoothing")
HELD_OUT = ("testa", "testb")
#: the metrics of the table: the values at the end of the budget
TABLE_METRICS = ("train_objective", "oracle_calls_per_n", "testa_token_f1", "testb_token_f1",
                 "testb_entity_f1", "initial_train_objective")


def dataset_name(figure: str, c) -> str:
    return f"{figure}_c{c_label(c)}"


def method_name(method: str, variant: str) -> str:
    return f"{method}_{variant}" if variant else method


def figure_runs(spec: dict, methods, sweeps) -> list[tuple[str, str, dict]]:
    """``(method, variant, swept)`` of a figure: its ``methods`` (no variant) or, for a sweep, each
    method with each swept value (variant ``"<setting>=<value>"``, ``swept = {setting: value}`` as
    configured); ``methods`` and ``sweeps`` are the experiment's known names."""
    if "sweep" not in spec:
        runs = [(m, "", {}) for m in spec["methods"]]
    else:
        if spec["sweep"] not in sweeps:
            raise ConfigError(f"unknown sweep {spec['sweep']!r}; known: {', '.join(sweeps)}")
        runs = [(m, f"{spec['sweep']}={v}", {spec["sweep"]: v}) for m, values in spec["runs"].items() for v in values]
    unknown = sorted({m for m, _, _ in runs} - set(methods))
    if unknown:
        raise ConfigError(f"unknown method {unknown[0]!r}; known: {', '.join(methods)}")
    return runs


def not_a_run(experiment: str, dataset: str, method: str, figures) -> ConfigError:
    return ConfigError(f"{dataset} / {method} is not a run of {experiment} in this configuration "
                       f"(figures: {', '.join(figures)})")


def run_settings(section: dict, figure: str, c: float, method: str, swept: dict) -> dict:
    """The hyper-parameters of one run: the method's, the figure's overrides for it, then the
    swept value; the SGD step ``eta0`` may depend on ``c`` (a mapping ``c -> eta0``)."""
    spec = section["figures"][figure]
    hp = dict(section["methods"][method])
    hp.update(spec.get("settings", {}).get(method, {}))
    hp.update(swept)
    if isinstance(hp.get("eta0"), dict):
        by_c = {c_label(k): v for k, v in hp["eta0"].items()}
        if c_label(c) not in by_c:
            raise ConfigError(f"casimir_ner {method}: no eta0 for c = {c_label(c)}")
        hp["eta0"] = by_c[c_label(c)]
    return hp


def job_settings(section: dict, run: dict, hyper: dict) -> dict:
    """Everything one job depends on (the settings dict of a :class:`NerJob`): its run's names,
    hyper-parameters ``hyper`` and the block's data and evaluation settings."""
    return {"figure": run["figure"], "c": run["c"], "method": run["method"], "variant": run["variant"],
            "hyper": hyper, "word_threshold": section["word_threshold"], "eval_every": section["eval_every"],
            "subsample": section.get("subsample")}


def casimir_lam(c: float, n: int) -> float:
    """The regularisation of Casimir's ``c`` on ``n`` training examples, ``lam = c / n``: the one
    place the NER and VOC experiments convert it."""
    return c / n


@dataclass(frozen=True)
class NerJob(JobSettings):
    """One NER run's settings (:func:`job_settings`'s dict, checked), handed whole to
    :func:`train_run`: the figure, ``c``, the method and its variant, its hyper-parameters
    ``hyper`` (:func:`make_rule`'s, with ``n_passes``), the word-count threshold of the features,
    the passes between evaluations and the parts' ``subsample``."""

    figure: str
    c: float
    method: str
    variant: str
    hyper: dict
    word_threshold: int
    eval_every: int
    subsample: dict | None = None


def make_rule(method: str, hp: dict, space):
    """The step rule and surrogate of ``method`` with hyper-parameters ``hp``: SGD and BCFW on
    the hinge; SVRG and Casimir-SVRG on the top-K l2-smoothed hinge (``smoothing: nonsmooth``:
    on the hinge itself, Fig. 5b)."""
    if method == "SGD":
        return SGD(Hinge(space), eta0=hp["eta0"], t0=hp["t0"])
    if method == "BCFW":
        return BCFW(Hinge(space), averaging=True)
    smooth = hp.get("smoothing", "smooth") != "nonsmooth"
    surrogate = TopKSmoothedHinge(space, mu=hp["mu"], K=hp["K"]) if smooth else Hinge(space)
    mu = hp["mu"] if smooth else None
    if method == "SVRG":
        return SVRG(surrogate, lr=hp["lr"], mu=mu)
    return CasimirSVRG(surrogate, mu0=mu, L=hp.get("L"), lr=hp.get("lr", 0.02),
                       mu_schedule=hp["mu_schedule"] if smooth else "const", warm_start=hp["warm_start"])


class HeldOut:
    """The per-epoch evaluation: held-out objectives (hinge + the train regulariser) and the
    token and entity F1 of Viterbi decoding on testa and testb."""

    def __init__(self, problem, parts: dict, tag_names):
        self.hinge = Hinge(problem.space)
        self.problems = {p: check_problem(problem.space, X, y, problem.lam, like=problem.fmap)
                         for p, (X, y) in parts.items()}
        self.tag_names = list(tag_names)
        self.labels = [i for i, t in enumerate(self.tag_names) if t != "O"]

    def __call__(self, W) -> dict:
        out = {}
        for part, pb in self.problems.items():
            val, pred = pb.evaluate(self.hinge, W)
            out[f"{part}_objective"] = float(np.mean(val)) + pb.regulariser(W)
            out[f"{part}_token_f1"] = token_f1(pb.y, pred, self.labels)
            out[f"{part}_entity_f1"] = entity_f1(pb.y, pred, self.tag_names)
        return out


def window_parts(arrays, threshold: int, subsample: dict | None = None):
    """``(parts: name -> (X, y), tag names)`` of a tagging view's arrays, each part cut to its
    first ``subsample[name]`` sentences when asked (smoke runs, quick benchmarks)."""
    parts, tags = window_splits(arrays, threshold=threshold)
    for name, m in (subsample or {}).items():
        if name not in parts:
            raise ConfigError(f"casimir_ner subsample names an unknown part {name!r}; parts: {', '.join(parts)}")
        X, y = parts[name]
        m = min(int(m), X.n)
        off = X.offsets[: m + 1]
        parts[name] = (WindowTokens(X.tokens[: off[-1]], off), y[:m])
    return parts, tags


def load_parts(view_path, threshold: int, subsample: dict | None):
    """:func:`window_parts` of a prepared NER view file."""
    arrays, _ = load(view_path)
    return window_parts(arrays, threshold, subsample)


def train_curve(problem, evaluate, rule, *, n_passes: int, seed_rng, eval_every: int = 1):
    """One run of the step rule ``rule`` on ``problem`` from its ``start`` (zero by default): its
    history records, the first at the start; each holds the oracle calls / n, the train
    objective (non-smooth hinge) and ``evaluate(W)``'s measures."""
    W0 = np.zeros(problem.fmap.weight_shape) if rule.start is None else rule.start
    first = {"pass": 0, "primal": problem.primal(Hinge(problem.space), W0), "oracle_calls": 0, "seconds": 0.0,
             **evaluate(W0)}
    start = time.perf_counter()
    res = run(rule, problem, n_passes=n_passes, random_state=seed_rng, eval_every=eval_every, evaluate=evaluate)
    log.info("%s: %.1f s", rule.name, time.perf_counter() - start)
    records = [first] + res.history
    for rec in records:
        rec["train_objective"] = rec.pop("primal")
        rec["oracle_calls_per_n"] = rec.pop("oracle_calls") / problem.n
    return records


def train_run(parts, tags, job: NerJob, seed_rng):
    """One NER run (:func:`train_curve` of the job's method on the chain of ``tags`` with ``lam =
    c / n``, :func:`casimir_lam`)."""
    X, y = parts["train"]
    space = Chain(len(tags), "hamming", normalize=False, joint_map="hashed_window")
    problem = check_problem(space, X, y, casimir_lam(job.c, X.n))
    held_out = HeldOut(problem, {p: parts[p] for p in HELD_OUT}, tags)
    return train_curve(problem, held_out, make_rule(job.method, job.hyper, space), n_passes=job.hyper["n_passes"],
                       seed_rng=seed_rng, eval_every=job.eval_every)


class CurveFigures(Experiment):
    """An experiment of Casimir's figures: its report module (:meth:`report`) gives the table
    (``render_table``), the summary ``summary_figure``, and the per-epoch ``curve_table`` and
    ``curve_figure``; there are no paired tests (NER's figures have them: :class:`NerFigures`)."""

    def report(self):
        """The module of the report hooks (its page, table and figures)."""
        raise NotImplementedError

    def render(self, table, tests, config):
        return self.report().render_table(table)

    def figure(self, table, path, config):
        self.report().summary_figure(table, path)

    def tests(self, selected, config):
        return pd.DataFrame()

    def curve_table(self, histories):
        return self.report().curve_table(histories)

    def curve_figure(self, panel, curves, path):
        self.report().curve_figure(panel, curves, path)


@register
class NerFigures(CurveFigures):
    """Casimir Figures 2 and 5a-d: one job per (figure, c, method, variant, seed)."""

    name = "casimir_ner"
    title = "Casimir (NeurIPS 2018) Figures 2 and 5: CoNLL-2003 NER, values at the end of each budget"
    needs = ("view",)
    key = ("figure", "c", "method", "variant", "metric")
    count = "n_seeds"

    def tests(self, selected, config):
        """Every pair of a panel's runs (task = figure, dataset = c, method = method and variant),
        by a two-sided Wilcoxon signed-rank test over the seeds (seed k of both runs draws the
        same sample order) on the train objective at the end of the budget; a panel of one seed
        has no test."""
        final = selected[(selected["metric"] == "train_objective") & (selected["figure"] != "tune")]
        variant = final["variant"].astype(object).where(final["variant"].notna(), "").astype(str)
        frame = final.assign(task=final["figure"], dataset=final["c"].map(c_label),
                             method=(final["method"] + " " + variant).str.strip())
        seeds = frame.groupby(["task", "dataset"])["split"].transform("nunique")
        frame = frame[seeds > 1]
        return best_tests(frame) if not frame.empty else pd.DataFrame(columns=BEST_COLUMNS)

    def report(self):
        return casimir_report

    def block(self, config: dict) -> dict:
        """The experiment's settings (its config block)."""
        return config[self.name]

    def jobs(self, config):
        s = self.block(config)
        unknown = [f for f in s["run"] if f not in s["figures"]]
        if unknown:
            raise ConfigError(f"casimir_ner runs unknown figures {unknown}; configured: {', '.join(s['figures'])}")
        return [(dataset_name(fig, c), method_name(m, v), k)
                for fig in s["run"] for spec in [s["figures"][fig]] for c in spec["c"]
                for m, v, _ in figure_runs(spec, METHODS, SWEEPS) for k in range(spec["n_seeds"])]

    def runs(self, config) -> dict[tuple[str, str], dict]:
        """``(dataset, method)`` job names -> the run they stand for (figure, c, method, variant,
        swept setting), for every configured figure: a job's settings are looked up here, from the
        config, never parsed back from its names."""
        s = self.block(config)
        return {(dataset_name(fig, c), method_name(m, v)): {"figure": fig, "c": float(c), "method": m,
                                                            "variant": v, "swept": swept}
                for fig, spec in s["figures"].items() for c in spec["c"]
                for m, v, swept in figure_runs(spec, METHODS, SWEEPS)}

    def view(self, config, dataset):
        return self.block(config)["view"]

    def numeric_paths(self, config, dataset, method):
        return (f"ner.{method.split('_')[0]}",)   # a swept variant's label: <method>_<setting>=<value>

    def settings(self, config, dataset, method):
        s = self.block(config)
        run = self.runs(config).get((dataset, method))
        if run is None:
            raise not_a_run(self.name, dataset, method, s["figures"])
        return job_settings(s, run, run_settings(s, run["figure"], run["c"], run["method"], run["swept"]))

    def run(self, inputs, settings, *, seed, dataset, method, split, threads=1):
        job = NerJob.from_settings(settings)
        parts, tags = load_parts(inputs["view"], job.word_threshold, job.subsample)
        start = time.perf_counter()
        records = train_run(parts, tags, job, rng_for(seed, self.name, split))
        seconds = time.perf_counter() - start
        ident = {"figure": job.figure, "c": job.c, "method": job.method, "variant": job.variant}
        history = pd.DataFrame.from_records([{**ident, "seed": split, **rec} for rec in records])
        last = records[-1]
        values = {m: last[m] for m in TABLE_METRICS if m in last}
        values["initial_train_objective"] = records[0]["train_objective"]
        values["seconds"] = seconds
        rows = [{"experiment": self.name, "task": "ner", "dataset": dataset, **ident, "split": split,
                 "lam": casimir_lam(job.c, parts["train"][0].n), "selected": True, "metric": m, "value": v}
                for m, v in values.items()]
        return rows, history

    def curve_panels(self, config):
        return list(self.block(config)["run"])
