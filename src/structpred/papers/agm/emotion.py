"""AGM (NeurIPS 2018) Table 1: facial emotion intensity on CK sequences (AGM §4.1).

167 sequences of 25-d frames labelled neutral < increasing < apex (0, 1, 2 here; the paper's
1, 2, 3 give the same differences).  Splits come with the data (``ids_random.mat``: the
first 120 of each permutation train, the last 47 test).  Six evaluation losses: zero-one,
absolute and squared per node, each unweighted or weighted by the position ``t = 1..T``,
always normalised by the sum of the weights (a weighted mean over the sequence's frames),
then averaged over the test sequences; the reference code's second number, the node-wise
pooled loss ``sum_i sum_t w_t l_it / sum_i sum_t w_t`` over all test frames, is recorded too
(metric ``<loss>_nodewise``).

Methods (each loss trains its own model except the CRF, whose likelihood does not depend
on the loss):

* ``AGM``: the adversarial game surrogate, AdaGrad on the primal, argmax decoding;
* ``CRF``: maximum likelihood (SDCA), Bayes-optimal decoding for each loss;
* ``SSVM``: the structured hinge with the loss, BCFW;
* ``M4N``: the same game surrogate as AGM trained by GBCFW (extra column);
* ``AGM-SPMP``: AGM with its game solved by SP-MP instead of exactly (extra column).

AGM's game is solved as ``game`` says (``exact``: AGM §3.2, as the paper), from weights
``coef_init`` (-0.5 in the reference code).

Features: each frame ``[x_t, 1]`` (25 + bias) with unary weights per emotion class (6 blocks,
the sequence's class picks its block); edges either as the reference code
(``edge_features: true``: ``[|x_t - x_{t-1}|, 1]`` per emotion class, tensored with the
label pair) or one transition matrix shared by all sequences.  The regularisation of each
(method, loss) is chosen on the training sequences of the first split (``validation``:
``{holdout: f}`` fits the first fraction ``f`` in the split's order and validates on the rest,
as the reference code; ``{folds: K}`` K-fold CV), with ``cv_passes`` passes, then used for all
splits with ``n_passes`` (AGM §4.1).  ``lam = 0`` in the grid is tried by the methods that
minimise the primal (AGM) and skipped by the dual solvers, which need ``lam > 0``.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd

from structpred.data.store import load
from structpred.errors import ConfigError
from structpred.estimators.methods import make_estimator
from structpred.features import Sequences
from structpred.features.sequences import difference_edges
from structpred.outputs import Chain
from structpred.papers.agm.report import emotion_figure, render_emotion, render_emotion_converged
from structpred.papers.matrix.methods import estimator as matrix_estimator
from structpred.papers.registry import Experiment, register
from structpred.solvers.driver import relative_gap
from structpred.tables.results import select_first_min
from structpred.tables.seeding import int_seed, rng_for
from structpred.tables.significance import best_tests

log = logging.getLogger(__name__)

#: evaluation losses: name -> (node loss, position weights)
LOSSES = {
    "zero_one": ("zero_one", None),
    "absolute": ("absolute", None),
    "squared": ("squared", None),
    "weighted_zero_one": ("zero_one", "position"),
    "weighted_absolute": ("absolute", "position"),
    "weighted_squared": ("squared", "position"),
}
#: the dataset label of the table (CK, Kim & Pavlovic 2010); the data view is ``emotion``
DATASET = "ck"
N_LABELS = 3
N_EMOTIONS = 6
#: methods trained on the primal (AdaGrad), which accept ``lam = 0``
PRIMAL_METHODS = ("AGM", "AGM-SPMP")
#: the matrix's methods that the AGM paper does not run (``matrix`` runs them on this protocol)
MATRIX_METHODS = ("QS", "SGD", "Casimir-SVRG")


def loss_space(name: str, normalize: bool = True):
    """The chain space of one evaluation loss (``normalize=False``: ``sum_t w_t l_t`` without the
    division by ``sum_t w_t``, the training loss of ``agm_emotion_unnormalised``)."""
    if name not in LOSSES:
        raise ConfigError(f"unknown AGM loss {name!r}; known: {', '.join(LOSSES)}")
    node, weights = LOSSES[name]
    return Chain(N_LABELS, node, weights, normalize=normalize)


def test_losses(loss: str, y, pred) -> dict[str, float]:
    """``{loss: mean over sequences of the normalised loss, loss_nodewise: pooled over frames}``."""
    node, weights = LOSSES[loss]
    raw = Chain(N_LABELS, node, weights, normalize=False)
    mass = sum(raw.position_weights(len(s)).sum() for s in y)
    return {loss: float(np.mean(loss_space(loss).loss(y, pred))),
            f"{loss}_nodewise": float(np.sum(raw.loss(y, pred)) / mass)}


def sequences(arrays: dict[str, np.ndarray], idx, edge_features: bool = False) -> tuple:
    """``(Sequences, labels)`` of the sequences ``idx``: frames with a bias column, grouped by
    emotion class; ``edge_features``: with the edges ``[|x_t - x_{t-1}|, 1]``."""
    frames = np.hstack([arrays["X"], np.ones((arrays["X"].shape[0], 1))])
    edges = difference_edges(arrays["X"], arrays["offsets"]) if edge_features else None
    full = Sequences(frames, arrays["offsets"], arrays["emotion"], N_EMOTIONS, edges)
    part = full.subset(idx)
    y = full.split_labels(arrays["y"])
    return part, [y[i] for i in np.asarray(idx)]


def split_indices(arrays: dict[str, np.ndarray], split: int, n_train: int) -> tuple[np.ndarray, np.ndarray]:
    """Train / test sequence indices of one of the data's splits."""
    perm = arrays["splits"][split]
    return perm[:n_train], perm[n_train:]


def method_estimator(method: str, space, lam: float, settings: dict, n_passes: int, seed: int):
    """The estimator of one of the AGM paper's methods on ``space`` (shared by the AGM tables):
    AGM (AdaGrad on the game, ``settings["game"]``), AGM-SPMP (the same with SP-MP), M4N (GBCFW),
    SSVM (BCFW on the hinge), CRF (SDCA).  With ``settings["rtol"]`` (the converged table) every
    fit stops at its first evaluated pass (every ``eval_every``) whose certified duality gap is
    ``<= rtol * primal``, ``settings["options"]`` are more estimator arguments (``solver: qp``: the
    dual QP), and AGM's objective is minimised through its dual (:class:`~structpred.estimators.M4N`
    with ``game="exact"``), which certifies the gap (AdaGrad has none).  The matrix's other methods
    (:data:`MATRIX_METHODS`: QS, SGD, Casimir-SVRG) come from its factory with ``settings["budget"]``,
    their passes this protocol's."""
    if method in MATRIX_METHODS:
        budget = {**settings.get("budget", {}), **({} if method == "QS" else {"n_passes": n_passes})}
        return matrix_estimator(method, space, float(lam), budget, seed)
    if method not in ("AGM", "CRF", "SSVM", "M4N", "AGM-SPMP"):
        raise ConfigError(f"unknown AGM-table method {method!r}; known: AGM, CRF, SSVM, M4N, AGM-SPMP, "
                          f"{', '.join(MATRIX_METHODS)}")
    common = {"loss": space, "lam": float(lam), "n_passes": n_passes, "random_state": seed,
              "eval_every": n_passes}
    if settings.get("rtol") is not None:
        common.update(rtol=settings["rtol"], eval_every=min(settings["eval_every"], n_passes),
                      **settings.get("options", {}))
        if method == "AGM":  # AGM's objective through its dual, which certifies the gap
            return make_estimator("M4N", **common, game="exact")
    if method in PRIMAL_METHODS:
        common.update(step=settings["adagrad_step"], n_iter_oracle=settings["oracle_iterations"],
                      game=settings["game"], coef_init=settings.get("coef_init", 0.0))
    elif method == "M4N":
        common.update(n_iter_oracle=settings["oracle_iterations"])
    return make_estimator(method, **common)


def _estimator(method: str, loss: str, lam: float, settings: dict, n_passes: int, seed: int):
    return method_estimator(method, loss_space(loss, settings.get("train_normalize", True)), lam, settings,
                            n_passes, seed)


def fit_and_score(method: str, lam: float, train, test, losses, settings: dict, seed: int,
                  n_passes: int | None = None) -> dict[str, float]:
    """Test losses of ``method`` with regularisation ``lam`` for each loss in ``losses``
    (:func:`test_losses`: the per-sequence mean and the node-wise pooled value); with
    ``settings["rtol"]`` also each fit's certified ``<loss>_rel_gap`` (gap / primal at its last
    pass) and ``<loss>_passes``.

    The CRF is fitted once and decoded per loss (Bayes decoding with that loss's node
    matrix); the other methods are fitted once per loss.  ``n_passes``: default the final fit's.
    """
    (X_tr, y_tr), (X_te, y_te) = train, test
    n_passes = settings["n_passes"] if n_passes is None else n_passes
    out = {}
    if method == "CRF":
        est = _estimator("CRF", losses[0], lam, settings, n_passes, seed).fit(X_tr, y_tr)
        marg = est.predict_proba(X_te)
        for loss in losses:
            out.update(test_losses(loss, y_te, loss_space(loss).bayes_decode(marg)), **_convergence(est, loss, settings))
        return out
    for loss in losses:
        est = _estimator(method, loss, lam, settings, n_passes, seed).fit(X_tr, y_tr)
        out.update(test_losses(loss, y_te, est.predict(X_te)), **_convergence(est, loss, settings))
    return out


def _convergence(est, loss: str, settings: dict) -> dict[str, float]:
    """``{<loss>_rel_gap, <loss>_passes}`` of a fit of the converged table (else nothing)."""
    if settings.get("rtol") is None:
        return {}
    last = est.history_.iloc[-1]
    return {f"{loss}_rel_gap": relative_gap(last), f"{loss}_passes": float(last["pass"])}


def method_lambdas(method: str, lambdas, certified: bool = False) -> list[float]:
    """The grid a method searches: ``lam = 0`` only for the primal methods (``certified``: none,
    every solver is then a dual one)."""
    return [float(lam) for lam in lambdas if lam > 0 or (method in PRIMAL_METHODS and not certified)]


def validation_folds(n: int, validation: dict, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(fit, validate)`` positions among ``n`` training sequences: ``{holdout: f}`` the first
    ``round(f n)`` in order and the rest (the reference code); ``{folds: K}`` K-fold CV on a
    seeded permutation."""
    if "holdout" in validation:
        cut = int(round(float(validation["holdout"]) * n))
        if not 0 < cut < n:
            raise ConfigError(f"holdout {validation['holdout']} leaves no sequence to fit or to validate on (n = {n})")
        return [(np.arange(cut), np.arange(cut, n))]
    folds = np.array_split(rng_for(seed, "agm_emotion", "cv").permutation(n), int(validation["folds"]))
    return [(np.setdiff1d(np.arange(n), fold), fold) for fold in folds]


def cross_validate(arrays: dict[str, np.ndarray], method: str, settings: dict, seed: int) -> list[dict]:
    """Lambda selection on the first split's training sequences (``settings["validation"]``,
    ``cv_passes`` passes): one record per (loss, lambda) with the mean validation loss over
    folds and ``selected`` on the best lambda of each loss (ties: the first of the grid)."""
    train, _ = split_indices(arrays, 0, settings["n_train"])
    grid = method_lambdas(method, settings["lambdas"], settings.get("rtol") is not None)
    if not grid:
        raise ConfigError(f"{method} has no lambda to try: the dual solvers need lam > 0")
    losses = list(settings["losses"])
    edges = settings["edge_features"]
    scores = {(loss, lam): [] for loss in losses for lam in grid}
    for k, (fit, val) in enumerate(validation_folds(len(train), settings["validation"], seed)):
        fit_seq, val_seq = sequences(arrays, train[fit], edges), sequences(arrays, train[val], edges)
        for lam in grid:
            res = fit_and_score(method, lam, fit_seq, val_seq, losses, settings,
                                int_seed(seed, "agm_emotion", method, "cv", k), n_passes=settings["cv_passes"])
            for loss in losses:
                scores[(loss, lam)].append(res[loss])
            log.info("%s CV fold %d lam=%g: %s", method, k, lam, {k_: round(res[k_], 4) for k_ in losses})
    records = []
    for loss in losses:
        means = [float(np.mean(scores[(loss, lam)])) for lam in grid]
        best = select_first_min(means)
        records += [{"loss": loss, "lam": lam, "cv_loss": m, "selected": i == best}
                    for i, (lam, m) in enumerate(zip(grid, means))]
    return records


def run_split(arrays: dict[str, np.ndarray], method: str, split: int, chosen: dict[str, float],
              settings: dict, seed: int, experiment: str = "agm_emotion") -> list[dict]:
    """Tidy rows (metric = loss name, value = test loss) of one split with the CV-chosen lambdas."""
    tr, te = split_indices(arrays, split, settings["n_train"])
    train, test = sequences(arrays, tr, settings["edge_features"]), sequences(arrays, te, settings["edge_features"])
    rows = []
    # methods sharing one fit across losses (CRF) are fitted once per distinct lambda
    by_lam: dict[float, list[str]] = {}
    for loss in settings["losses"]:
        by_lam.setdefault(float(chosen[loss]), []).append(loss)
    for lam, losses in by_lam.items():
        start = time.perf_counter()
        res = fit_and_score(method, lam, train, test, losses, settings, int_seed(seed, "agm_emotion", method, split))
        common = {"experiment": experiment, "task": "emotion", "dataset": DATASET, "method": method,
                  "split": split, "lam": lam}
        for loss in losses:
            for metric in (m for m in (loss, f"{loss}_nodewise", f"{loss}_rel_gap", f"{loss}_passes") if m in res):
                rows.append({**common, "selected": True, "metric": metric, "value": res[metric]})
        rows.append({**common, "selected": False, "metric": "seconds", "value": time.perf_counter() - start})
    return rows


@register
class EmotionTable(Experiment):
    """AGM Table 1: lambda by cross-validation per (method, loss), then one job per split."""

    name = "agm_emotion"
    title = "AGM (NeurIPS 2018) Table 1: facial emotion intensity, average test loss over 20 splits"
    needs = ("view", "selection")
    #: settings every CV or split job depends on
    KEYS = ("losses", "n_train", "validation", "lambdas", "cv_passes", "n_passes", "edge_features", "adagrad_step",
            "coef_init", "game", "oracle_iterations")

    def block(self, config: dict) -> dict:
        """The experiment's settings (its config block)."""
        return config[self.name]

    def jobs(self, config):
        s = self.block(config)
        return [(DATASET, m, k) for m in s["methods"] for k in range(s["n_splits"])]

    def view(self, config, dataset):
        return self.block(config)["view"]

    def settings(self, config, dataset, method):
        return {k: self.block(config)[k] for k in self.KEYS}

    def space(self, config, dataset):
        """The chain space of the table's first loss (which methods a chain of 3 labels supports)."""
        return loss_space(self.block(config)["losses"][0])

    def numeric_paths(self, config, dataset, method):
        qp = self.settings(config, dataset, method).get("options", {}).get("solver") == "qp"
        return ("chain_game.qp",) if qp else (f"chain_game.{method}",)

    single_selection = True

    def grids(self, config, dataset, method):
        return self.settings_grids(self.settings(config, dataset, method), method)

    @staticmethod
    def settings_grids(settings: dict, method: str) -> dict[str, list]:
        """The lambda grid ``method`` searches under a job's ``settings``."""
        return {"lam": method_lambdas(method, settings["lambdas"], settings.get("rtol") is not None)}

    def select(self, inputs, settings, *, seed, dataset, method):
        arrays, _ = load(inputs["view"])
        return cross_validate(arrays, method, settings, seed)

    def run(self, inputs, settings, *, seed, dataset, method, split, threads=1):
        arrays, _ = load(inputs["view"])
        cv = pd.read_csv(inputs["selection"])
        chosen = dict(zip(cv.loc[cv["selected"], "loss"], cv.loc[cv["selected"], "lam"]))
        return run_split(arrays, method, split, chosen, settings, seed, self.name), None

    def render(self, table, tests, config):
        return render_emotion(table, tests)

    def figure(self, table, path, config):
        emotion_figure(table, path)

    def tests(self, selected, config):
        return best_tests(selected)


@register
class EmotionUnnormalised(EmotionTable):
    """AGM Table 1 with the loss-trained methods trained on ``sum_t w_t l_t`` (no division by
    ``sum_t w_t``; evaluation unchanged): every other setting from ``agm_emotion``."""

    name = "agm_emotion_unnormalised"
    title = "AGM (NeurIPS 2018) Table 1 with unnormalised training losses (sensitivity)"
    references_of = "agm_emotion"

    def block(self, config: dict) -> dict:
        return {**config["agm_emotion"], **config[self.name]}

    def settings(self, config, dataset, method):
        return {**super().settings(config, dataset, method), "train_normalize": False}


@register
class EmotionConverged(EmotionTable):
    """AGM Table 1 with every fit run until its certified duality gap is ``<= rtol * primal`` (or
    ``max_passes[method]`` passes; both recorded per fit as ``<loss>_rel_gap`` and
    ``<loss>_passes``), the same lambda selection, beside the paper-budget table: AGM's objective
    by GBCFW on its exact game, SSVM by BCFW, CRF by SDCA; every other setting from
    ``agm_emotion``."""

    name = "agm_emotion_converged"
    title = "AGM (NeurIPS 2018) Table 1 at certified convergence, beside the paper's budget"
    references_of = "agm_emotion"
    beside = "agm_emotion"

    def block(self, config: dict) -> dict:
        return {**config["agm_emotion"], **config[self.name]}

    def settings(self, config, dataset, method):
        own = config[self.name]
        cap = own["max_passes"][method]
        return {**super().settings(config, dataset, method), "cv_passes": cap, "n_passes": cap,
                "rtol": own["rtol"], "eval_every": own["eval_every"],
                "options": dict(own.get("options", {}).get(method) or {})}

    def tests(self, selected, config):
        """The paired tests of the test losses (not of the gaps and passes)."""
        losses = [m for loss in LOSSES for m in (loss, f"{loss}_nodewise")]
        return super().tests(selected[selected["metric"].isin(losses)], config)

    def page(self, table, tests, others, config):
        return render_emotion_converged(table, tests, *others.get(self.beside, (None, None)))
