"""CoNLL-2003 NER by held-out model selection: every method of the library on Casimir's task.

Not a table of the paper: Casimir §7.1 plots training curves at fixed ``c``; this table is the
NER column of the matrix (issue 59).  Casimir's data and features (the reference code's hashed
windows, the file's IOB1 tags, :func:`structpred.papers.casimir.ner.load_parts`) and its
training loss, the unnormalised Hamming loss ``Delta_H(y, y') = sum_t [y_t != y'_t]`` on the
chain; each method (:func:`structpred.papers.matrix.methods.estimator`: M3N by BCFW, the CRF by
SDCA, M4N by GBCFW with the max-min oracle, AGM's game by AdaGrad, SGD and Casimir-SVRG on the
hinge, QS's kernel ridge weights on the hashed window ids with the loss trick) is fit on
``eng.train`` with its ``budget`` (``n_passes`` for every method, plus the block's
``budgets`` of a method: M4N's oracle iterations, QS's kernel; QS has no passes) at each lambda of the grid
(``lambdas``, or the method's own in ``method_lambdas``), lambda chosen by the
lowest mean token error on ``testa`` (ties: the first), and scored on ``testb``.

Rows: one ``token_error`` row per ``testb`` sentence (its fraction of wrongly tagged tokens),
with the sentence as ``split``, so the table's mean is the mean over sentences and the paired
tests pair methods over sentences (as ``agm_srl`` pairs propositions); one ``entity_f1`` row
(CoNLL chunk F1 of ``testb``, pooled: Casimir's measure); ``val_loss`` per lambda; ``seconds``.
A job is one method; each lambda's fit is kept and an unfinished one resumes after its last pass.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from structpred.errors import ConfigError
from structpred.metrics import entity_f1
from structpred.outputs import Chain
from structpred.papers.casimir.ner import load_parts
from structpred.papers.matrix.methods import estimator
from structpred.papers.qs.report import metric_bars, render_grid
from structpred.papers.registry import Experiment, register
from structpred.tables.fit_cache import FitCache, fit_grid
from structpred.tables.job import JobSettings
from structpred.tables.results import select_first_min
from structpred.tables.seeding import int_seed
from structpred.tables.significance import best_tests

log = logging.getLogger(__name__)

TASK = "ner"
DATASET = "conll2003"
#: the matrix's methods: every one has the chain's oracles, QS a kernel on the hashed window ids
METHODS = ("M3N", "CRF", "M4N", "AGM", "QS", "SGD", "Casimir-SVRG")


def ner_space(n_tags: int) -> Chain:
    """Casimir's training loss: the unnormalised Hamming loss on the hashed window chain."""
    return Chain(n_tags, "hamming", normalize=False, joint_map="hashed_window")


def token_errors(y, pred) -> np.ndarray:
    """Each sentence's fraction of wrongly tagged tokens."""
    return np.array([float(np.mean(np.asarray(a) != np.asarray(b))) for a, b in zip(y, pred)])


@dataclass(frozen=True)
class HeldOutJob(JobSettings):
    """One method's job: its lambda grid, its estimator's ``budget`` (keyword arguments: passes,
    oracle iterations), the features' word-count threshold and the parts' ``subsample`` (first
    sentences of each part, for smoke runs)."""

    method: str
    lambdas: tuple
    budget: dict
    word_threshold: int
    subsample: dict | None = None

    def __post_init__(self):
        if self.method not in METHODS:
            raise ConfigError(f"unknown casimir_ner_heldout method {self.method!r}; known: {', '.join(METHODS)}")


def fit_lambda(parts, tags, job: HeldOutJob, lam: float, seed: int, checkpoint=None):
    """Fit ``job.method`` at ``lam`` on ``eng.train``: its record (``lam``, ``val_loss`` = mean testa
    token error, testb's per-sentence token errors and entity F1, ``seconds``) and history."""
    est = estimator(job.method, ner_space(len(tags)), lam, job.budget, seed)
    start = time.perf_counter()
    if job.method == "QS":   # one solve per sentence length, nothing to resume
        est.fit(*parts["train"])
        seconds, history = time.perf_counter() - start, pd.DataFrame()
    else:
        est.fit(*parts["train"], checkpoint=checkpoint)
        seconds, history = time.perf_counter() - start + est.resumed_seconds_, est.history_
    (Xa, ya), (Xb, yb) = parts["testa"], parts["testb"]
    pred = est.predict(Xb)
    record = {"lam": float(lam), "val_loss": float(np.mean(token_errors(ya, est.predict(Xa)))),
              "token_error": [float(v) for v in token_errors(yb, pred)],
              "entity_f1": entity_f1(yb, pred, tags), "seconds": seconds}
    return record, history.assign(lam=float(lam))   # QS's empty one too: the fit cache writes its header


@register
class NerHeldOut(Experiment):
    """CoNLL-2003 NER, each method's lambda chosen on testa and scored on testb (the matrix's NER
    column)."""

    name = "casimir_ner_heldout"
    title = "Beyond Casimir (NeurIPS 2018) §7.1: CoNLL-2003 NER, every method at its held-out lambda (testb)"
    needs = ("view",)
    single_selection = True   # one lambda per method for every test sentence
    resumable = True

    def view(self, config, dataset):
        return config["casimir_ner"]["view"]   # casimir_ner's view and word threshold: the same features

    def space(self, config, dataset):
        """The space's family (which methods a hashed window chain supports; the tags come with the data)."""
        return ner_space(2)

    def jobs(self, config):
        return [(DATASET, m, 0) for m in self.block(config)["methods"]]

    def threads(self, config, dataset, method):
        """The block's ``threads``: the lambdas a job fits side by side (each fit on one core)."""
        return self.block(config).get("threads", 1)

    def settings(self, config, dataset, method):
        s = self.block(config)
        return {"method": method, "lambdas": list((s.get("method_lambdas") or {}).get(method, s["lambdas"])),
                "budget": {**({} if method == "QS" else {"n_passes": s["n_passes"]}),
                           **(s.get("budgets") or {}).get(method, {})},
                "word_threshold": config["casimir_ner"]["word_threshold"], "subsample": s.get("subsample")}

    @staticmethod
    def settings_grids(settings: dict, method: str) -> dict[str, list]:
        return {"lam": list(settings["lambdas"])}

    def numeric_paths(self, config, dataset, method):
        return (f"ner_heldout.{method}",)

    def run(self, inputs, settings, *, seed, dataset, method, split, threads=1, checkpoint=None):
        job = HeldOutJob.from_settings(settings)
        parts, tags = load_parts(inputs["view"], job.word_threshold, job.subsample)
        fit_seed = int_seed(seed, self.name, method)
        # a fit at one lambda does not depend on the rest of the grid (each starts from the same seed):
        # keyed without it, a widened grid fits only its new lambdas
        fit_settings = {k: v for k, v in settings.items() if k != "lambdas"}
        cache = None if checkpoint is None else FitCache(
            checkpoint, {"experiment": self.name, "seed": seed, "settings": fit_settings}, [inputs["view"]])
        records, histories = [], []
        for record, history in fit_grid(partial(fit_lambda, parts, tags, job, seed=fit_seed), job.lambdas,
                                        cache=cache, n_jobs=threads):
            log.info("%s lam=%g: testa token error %.4f (%.1fs)", method, record["lam"], record["val_loss"],
                     record["seconds"])
            records.append(record)
            histories.append(history)
        best = select_first_min([r["val_loss"] for r in records])
        final = records[best]
        common = {"experiment": self.name, "task": TASK, "dataset": dataset, "method": method}
        rows = [{**common, "lam": final["lam"], "split": i, "selected": True, "metric": "token_error", "value": v}
                for i, v in enumerate(final["token_error"])]
        rows.append({**common, "lam": final["lam"], "split": 0, "selected": True, "metric": "entity_f1",
                     "value": final["entity_f1"]})
        # each lambda's fit time (lambdas fitted side by side are separate parts of the job: structpred.runs.makespan)
        rows += [{**common, "lam": r["lam"], "split": 0, "selected": i == best, "metric": "seconds",
                  "value": r["seconds"]} for i, r in enumerate(records)]
        rows += [{**common, "lam": r["lam"], "split": 0, "selected": False, "metric": "val_loss", "value": r["val_loss"]}
                 for r in records]
        return rows, histories[best]

    def tests(self, selected, config):
        return best_tests(selected[selected["metric"] == "token_error"])

    def render(self, table, tests, config):
        return render_grid(table, tests, rows="metric", note=(
            "token_error: mean over testb's sentences of each sentence's fraction of wrongly tagged tokens (n = "
            "sentences; the paired tests pair methods over sentences); entity_f1: CoNLL chunk F1 of all testb "
            "(one value, higher is better). Each method's lambda chosen on testa's token error."))

    def figure(self, table, path, config):
        metric_bars(table, path, spread="sem",
                    title="CoNLL-2003 NER (testb), each method at its testa lambda (± standard error over sentences)")
