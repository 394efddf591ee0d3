"""QS (NeurIPS 2016) Table 1 under every candidate normalisation of the rank loss: the sensitivity
table ``qs_movielens_normalisation``.

The paper reports "the normalized" rank loss of Duchi et al. (QS eq. 22) and does not say by what
it is normalised, nor over which movies.  A job is one of ``qs_movielens``'s jobs (method, trial):
it reads that job's archived rows (the ``lam``, and QS's kernel constant ``c``, that its
cross-validation chose), draws the same trial (users, profile and target halves, features:
``qs_movielens``'s seeds), refits the method at that choice on all training users, and scores
each test user's predicted ranking by the weighted disagreement
``L = sum_{r_j > r_k} (r_j - r_k) 1[movie k ranked above movie j]`` normalised by each of
:data:`NORMALISATIONS`:

* ``max``: the user's largest possible ``L``, ``sum_{r_j > r_k} (r_j - r_k)`` (``qs_movielens``'s);
* ``pairs``: the user's number of ordered pairs (``r_j != r_k``);
* ``all_pairs``: all ``m (m - 1) / 2`` pairs of the user's ``m`` movies;
* ``pooled_max``: ``sum_u L_u / sum_u max_u`` over the trial's test users (one ratio, not a mean
  over users);

over two sets of movies (:data:`SCOPES`): the test user's ``target`` half (``qs_movielens``'s
protocol) or ``all`` the movies the user rated (profile and target halves, all ranked together).
A user whose movies share one rating scores 0 under the per-user normalisations.  ``max`` over
``target`` is ``qs_movielens``'s own number: the job checks it against the archived value.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd

from structpred.data.store import load
from structpred.errors import ConfigError, StructpredError
from structpred.outputs import PairwiseRanking
from structpred.papers.qs.movielens import DATASET, METHODS, TASK, held_out_ranker, make_trial
from structpred.papers.qs.robust_metrics import _tolerance, nearness
from structpred.papers.registry import Experiment, get, register
from structpred.tables.seeding import int_seed
from structpred.tables.sensitivity import figure_by, render_by, tests_by

log = logging.getLogger(__name__)

NORMALISATIONS = ("max", "pairs", "all_pairs", "pooled_max")
SCOPES = ("target", "all")
BASE = "qs_movielens"


def pair_terms(r: np.ndarray, positions: np.ndarray) -> tuple[float, float, float, float]:
    """``(L, max L, ordered pairs, all pairs)`` of one user's ratings ``r`` (> 0) and the positions
    of the same movies in the predicted ranking (0 = top): ``L`` sums ``r_j - r_k`` over the pairs
    with ``r_j > r_k`` that the ranking puts the other way round (QS eq. 22, unnormalised)."""
    m = len(r)
    space = PairwiseRanking(m, normalize=False)
    loss = float(space.loss(r, positions))
    diff = r[:, None] - r[None, :]
    return loss, float(diff[diff > 0].sum()), float((diff > 0).sum()), m * (m - 1) / 2.0


def normalised_losses(terms: np.ndarray) -> dict[str, float]:
    """Every :data:`NORMALISATIONS` of a trial from its users' :func:`pair_terms` rows ``(u, 4)``."""
    L, Z, P, A = terms.T

    def per_user(d):
        return float(np.mean(np.where(d > 0, L / np.where(d > 0, d, 1.0), 0.0)))

    return {"max": per_user(Z), "pairs": per_user(P), "all_pairs": per_user(A),
            "pooled_max": float(L.sum() / Z.sum()) if Z.sum() > 0 else 0.0}


def archived_choice(rows: pd.DataFrame) -> tuple[float, float, float]:
    """``(c, lam, rank loss)`` a ``qs_movielens`` job chose and scored (``c``: its ``intercept`` row,
    absent for the baselines: ``nan``; ``lam``: ``nan`` for Popularity)."""
    sel = rows[(rows["metric"] == "rank_loss") & (rows["selected"].astype(str).str.lower() == "true")]
    if len(sel) != 1:
        raise StructpredError(f"expected one selected rank_loss row in a qs_movielens job, got {len(sel)}")
    c = rows.loc[rows["metric"] == "intercept", "value"]
    lam = sel["lam"].iloc[0]
    return (float(c.iloc[0]) if len(c) else float("nan"),
            float(lam) if pd.notna(lam) and str(lam) != "" else float("nan"), float(sel["value"].iloc[0]))


@register
class MovieLensNormalisation(Experiment):
    """QS Table 1: ``qs_movielens``'s fits scored under every candidate normalisation of the rank loss."""

    name = "qs_movielens_normalisation"
    title = ("QS (NeurIPS 2016) Table 1: qs_movielens's fits scored under every candidate normalisation of the rank "
             "loss (sensitivity)")
    needs = ("view", "runs")
    runs_of = references_of = BASE
    key = ("task", "dataset", "method", "scope", "normalisation", "metric")
    reference_key = ("task", "dataset", "method", "metric")

    def jobs(self, config):
        return get(BASE).jobs(config)

    def view(self, config, dataset):
        return get(BASE).view(config, dataset)

    def run_inputs(self, config, dataset, method):
        return [(dataset, method, None)]   # qs_movielens's job of the same (method, trial)

    def numeric_paths(self, config, dataset, method):
        return get(BASE).numeric_paths(config, dataset, method)

    def settings(self, config, dataset, method):
        return {**get(BASE).settings(config, dataset, method), "normalisations": list(NORMALISATIONS),
                "scopes": list(SCOPES)}

    def run(self, inputs, settings, *, seed, dataset, method, split, threads=1):
        if method not in METHODS:
            raise ConfigError(f"unknown {self.name} method {method!r}; known: {', '.join(METHODS)}")
        c, lam, before = archived_choice(pd.read_csv(inputs["runs"][0]))
        arrays, _ = load(inputs["view"])
        data = make_trial(arrays, settings, seed, split)
        start = time.perf_counter()
        if np.isnan(c):
            c = float(settings["intercept"])
        rank = held_out_ranker(method, data, c, lam, settings, int_seed(seed, BASE, split))   # qs_movielens's seeds
        ratings = {"target": data.target[data.test], "all": data.target[data.test] + data.profile[data.test]}
        values = {}
        for scope, R in ratings.items():
            terms = []
            for q, r in enumerate(R):
                items = np.flatnonzero(r)
                terms.append(pair_terms(r[items], rank(q, items)))
            values[scope] = normalised_losses(np.array(terms))
        seconds = time.perf_counter() - start
        log.info("%s trial %d: c=%g lam=%g, %s (archived %.6g)", method, split, c, lam,
                 {s: {k: round(v, 4) for k, v in d.items()} for s, d in values.items()}, before)
        common = {"experiment": self.name, "task": TASK, "dataset": dataset, "method": method, "split": split,
                  "lam": lam}
        rows = [{**common, "selected": True, "metric": "rank_loss", "scope": s, "normalisation": n, "value": v}
                for s, d in values.items() for n, v in d.items()]
        rows += [{**common, "selected": True, "metric": "seconds", "value": seconds},
                 {**common, "selected": False, "metric": "archived_diff", "scope": "target", "normalisation": "max",
                  "value": values["target"]["max"] - before}]
        return rows, None

    def render(self, table, tests, config):
        data = table[table["metric"] == "rank_loss"].assign(candidate=lambda t: t["scope"] + " / " + t["normalisation"])
        near = nearness(data, "candidate", _tolerance(config))
        lines = "; ".join(f"{r.candidate}: {r.within_tolerance} of {r.cells} within the ledger's tolerance, "
                          f"median ours/paper {r.median_ratio:.2f}" for r in near.itertuples())
        return render_by(table, rows=["scope", "normalisation"], metric="rank_loss", note=(
            "qs_movielens's fits (each trial's chosen lambda and c) scored under every candidate normalisation of "
            "the rank loss: per test user by its largest possible loss (max), its ordered pairs (pairs) or all its "
            "pairs (all_pairs), or pooled over the trial's users (pooled_max); over the target half of its movies "
            "or all of them; mean ± std over the 10 trials, the paper's (unverified) cell beneath each. target / "
            "max is qs_movielens's own. Popularity is not in the paper. " + lines))

    def figure(self, table, path, config):
        data = table.assign(candidate=table["scope"] + " / " + table["normalisation"], panel="movielens")
        figure_by(data, path, panel="panel", column="candidate", metric="rank_loss", ylabel="rank loss",
                  title="MovieLens rank loss under each normalisation")

    def tests(self, selected, config):
        sel = selected[selected["metric"] == "rank_loss"]
        return tests_by(sel.assign(candidate=sel["scope"] + " / " + sel["normalisation"]), "candidate")
