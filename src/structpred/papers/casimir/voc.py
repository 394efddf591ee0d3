"""Casimir (Pillutla et al., NeurIPS 2018) §7.2: PASCAL VOC 2007 localisation, Figure 3 (convex).

For one class, example ``i`` is an image holding exactly one instance of it; its candidates are
up to 1000 selective-search boxes, each described by AlexNet's conv4 map (2304 numbers,
:mod:`structpred.vision.voc_localization`).  The structural SVM of the reference code,
``F(w) = (1/n) sum_i (max_j [l_ij + <w, x_ij>] - [l_i* + <w, x_i*>]) + lam/2 ||w||^2`` with
``l_ij = 1 - IoU(box j, truth)``, ``i*`` the candidate of highest IoU and ``lam = c / n``, is
trained by the NER figures' methods (:func:`structpred.papers.casimir.ner.make_rule`: SGD, BCFW,
SVRG, Casimir-SVRG on the top-K smoothed hinge) on the :class:`~structpred.outputs.Candidates`
space, with the reference's per-class hyper-parameters (a method's setting may map classes to
values, ``default`` for the others).

One job = one (class, method, seed): the class is the job's ``dataset``, the seed (sample
order) its ``split``.  Every epoch records the oracle calls / n, the train objective, and on the
held-out images (the last quarter of the class's shuffled trainval images) the objective, the
CorLoc and mean IoU of the top box and the box-level AP (:mod:`structpred.vision.localization_metrics`).
The candidate files are built once per class by the workflow's ``box_features`` rule.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from structpred.errors import ConfigError
from structpred.outputs import Candidates
from structpred.papers.casimir import voc_report as casimir_voc_report
from structpred.papers.casimir.names import METHODS
from structpred.papers.casimir.ner import CurveFigures, casimir_lam, make_rule, train_curve
from structpred.papers.registry import register
from structpred.solvers.problem import check_problem
from structpred.surrogates import Hinge
from structpred.tables.seeding import rng_for
from structpred.vision.localization_metrics import box_average_precision, corloc
from structpred.vision.voc_localization import load_candidate_file

#: the metrics of the table: the values at the end of the budget
TABLE_METRICS = ("train_objective", "oracle_calls_per_n", "held_objective", "held_corloc", "held_ap",
                 "held_mean_iou", "train_corloc", "initial_train_objective")


class Localisation:
    """The per-epoch evaluation of a localisation model: on each part (``problems``: ``train``,
    ``held``; ``ious``: their candidates' IoUs) the mean IoU and CorLoc of each image's
    top-scoring candidate, and on the held-out images also the objective (hinge + the train
    regulariser) and the box-level AP."""

    def __init__(self, problems: dict, ious: dict):
        self.problems = problems
        self.ious = ious
        self.hinge = Hinge(problems["train"].space)

    def __call__(self, W) -> dict:
        out = {}
        for part, pb in self.problems.items():
            scores = pb.fmap.scores(W)
            top = np.asarray([iou[int(np.argmax(v))] for v, iou in zip(scores, self.ious[part])])
            if part == "held":
                val, _ = self.hinge.value_grad(scores, pb.y)
                out["held_objective"] = float(np.mean(val)) + pb.regulariser(W)
                out["held_ap"] = box_average_precision(scores, self.ious[part])
                out["held_mean_iou"] = float(np.mean(top))
            out[f"{part}_corloc"] = corloc(top)
        return out


def load_problem(path, c: float):
    """``(training problem, per-epoch evaluation, meta)`` of a class's candidate file: the linear
    score on the conv4 features, ``lam = c / n``."""
    parts, meta = load_candidate_file(path)
    space = Candidates()
    tr = parts["train"]
    problem = check_problem(space, tr["X"], tr["y"], casimir_lam(c, tr["X"].n))
    held = check_problem(space, parts["held"]["X"], parts["held"]["y"], problem.lam, like=problem.fmap)
    return problem, Localisation({"train": problem, "held": held}, {p: parts[p]["iou"] for p in parts}), meta


def per_class(hyper: dict, voc_class: str) -> dict:
    """A method's settings for ``voc_class``: a setting given as a mapping ``{class: value,
    default: value}`` takes the class's value (the reference tunes L, mu, lr, t0 per class)."""
    out = {}
    for key, value in hyper.items():
        if isinstance(value, dict):
            if voc_class not in value and "default" not in value:
                raise ConfigError(f"casimir_voc setting {key}: no value for {voc_class!r} and no default")
            value = value.get(voc_class, value.get("default"))
        out[key] = value
    return out


def ending(records: list, metrics, seconds: float) -> dict:
    """The table's values of a run: ``metrics`` at the end of the budget, the train objective at
    the start, the training seconds."""
    values = {m: records[-1][m] for m in metrics if m in records[-1]}
    values["initial_train_objective"] = records[0]["train_objective"]
    values["seconds"] = seconds
    return values


@register
class VocFigure3(CurveFigures):
    """Casimir Figure 3: one job per (class, method, seed) on the convex model."""

    name = "casimir_voc"
    title = "Casimir (NeurIPS 2018) Figure 3: PASCAL VOC 2007 localisation (convex), values at the end of each budget"
    needs = ("candidates",)
    count = "n_seeds"

    def report(self):
        return casimir_voc_report

    def jobs(self, config):
        s = config[self.name]
        unknown = [m for m in s["run"] if m not in s["methods"]]
        if unknown:
            raise ConfigError(f"casimir_voc runs unknown methods {unknown}; configured: {', '.join(s['methods'])}")
        return [(cls, m, k) for cls in s["classes"] for m in s["run"] for k in range(s["n_seeds"])]

    def view(self, config, dataset):
        return None

    def sources(self, config):
        """The VOC 2007 tarballs and the AlexNet weights, unless the config takes the synthetic
        folder or random weights."""
        voc = config["data"]["voc"]
        return {name for name, used in (("voc2007", voc["devkit"] == "voc2007"), ("alexnet", voc["weights"] == "alexnet"))
                if used}

    def voc_class(self, config, dataset) -> str:
        """The VOC class whose candidate file a job on ``dataset`` reads."""
        return dataset

    def settings(self, config, dataset, method):
        s = config[self.name]
        if method not in METHODS:
            raise ConfigError(f"unknown casimir_voc method {method!r}; known: {', '.join(METHODS)}")
        return {"class": dataset, "method": method, "c": s["c"], "hyper": per_class(s["methods"][method], dataset),
                "eval_every": s["eval_every"], "devkit": config["data"]["voc"]["devkit"]}

    def load(self, path, settings):
        """``(training problem, per-epoch evaluation)`` of a job (the linear score)."""
        problem, evaluate, _ = load_problem(path, settings["c"])
        return problem, evaluate

    def rule(self, settings, problem, split: int):
        """The step rule of a job, its ``start`` set (zero: the convex model starts at w = 0)."""
        return make_rule(settings["method"], settings["hyper"], problem.space)

    def run(self, inputs, settings, *, seed, dataset, method, split, threads=1):
        s = settings
        problem, evaluate = self.load(inputs["candidates"], s)
        start = time.perf_counter()
        records = train_curve(problem, evaluate, self.rule(s, problem, split), n_passes=s["hyper"]["n_passes"],
                              seed_rng=rng_for(seed, self.name, dataset, split), eval_every=s["eval_every"])
        seconds = time.perf_counter() - start
        ident = {"dataset": dataset, "method": method}
        history = pd.DataFrame.from_records([{"data": s["devkit"], **ident, "seed": split, **rec} for rec in records])
        values = ending(records, TABLE_METRICS, seconds)
        task = "localisation" if s["devkit"] == "voc2007" else "localisation (synthetic)"
        rows = [{"experiment": self.name, "task": task, **ident, "split": split, "lam": problem.lam,
                 "selected": True, "metric": m, "value": v} for m, v in values.items()]
        return rows, history

    def curve_panels(self, config):
        return list(config[self.name]["classes"])
