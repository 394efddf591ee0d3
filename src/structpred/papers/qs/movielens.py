"""QS (NeurIPS 2016) Table 1, §6 "Ranking Movies": rank loss on MovieLens 100K, QS against
pairwise ranking baselines.

Protocol (the text leaves most of it open: each choice is a config entry, printed beside the
table).  A trial (the workflow's ``split``) draws ``n_train`` training and ``n_test`` test users
at random and splits every user's rated movies at random into a profile half (``floor(m/2)``
movies) and a target half (the rest).  A user's features come from the profile half and the
user table only (:func:`user_features`): occupation one-hot, age-bin one-hot, gender, and the
Pearson correlation of the user's profile ratings with each training user's over their co-rated
movies (0 with fewer than two or a constant side; a training user's own column is 0),
standardised with the training users' means and deviations, and a constant ``intercept``.  A
training user's output is the target half's ratings over all movies (0 elsewhere).  A test
user's target movies are ranked and scored by the normalised rank loss (QS eq. 22) against their
ratings; a trial reports the mean over test users.

Methods, each with ``lam`` chosen by K-fold cross-validation of the same rank loss on the
training users (ties to the first of the grid), on the trial's features; QS selects its kernel's
constant ``c`` (``qs_intercepts``) with ``lam``:

* ``QS``: ``alpha(x) = (K + n lam I)^{-1} K_x`` with the linear kernel (the constant feature is
  its intercept), a test user's ranking ``argmin_y sum_i alpha_i(x) L(R_i, y)`` over its ``m_u``
  target movies (QS eq. 2) by the greedy feedback-arc-set heuristic
  (:meth:`structpred.outputs.PairwiseRanking.weighted_decode`);
* ``Linear``, ``Hinge``, ``Logistic``, ``SVM-Struct``: a linear score per (user, movie) on the same
  features (the constant feature's weight is a per-movie bias, regularised as the others;
  :mod:`structpred.papers.qs.pairwise_rankers`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import KFold

from structpred.data.store import load
from structpred.errors import ConfigError, DataError
from structpred.features.kernels import kernel_matrix
from structpred.outputs import PairwiseRanking
from structpred.outputs.ranking import order_to_positions
from structpred.papers.qs.pairwise_rankers import Preferences, fit_path
from structpred.papers.qs.report import metric_bars, render_grid
from structpred.papers.registry import Experiment, register
from structpred.solvers.kernel_ridge import RidgeWeights, ridge_cv
from structpred.tables.results import select_first_min
from structpred.tables.seeding import int_seed, rng_for
from structpred.tables.significance import best_tests

log = logging.getLogger(__name__)

METHODS = ("QS", "Linear", "Hinge", "Logistic", "SVM-Struct", "Popularity")
TASK = "ranking"
DATASET = "movielens"
LBFGS_KEYS = ("lbfgs_max_iter", "lbfgs_tol")
VIEW_ARRAYS = ("ratings", "user_age", "user_gender", "user_occupation", "item_genres")


def split_users(n_users: int, n_train: int, n_test: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint random ``(train, test)`` user indices."""
    if n_train + n_test > n_users:
        raise ConfigError(f"n_train + n_test = {n_train + n_test} exceeds the {n_users} users")
    perm = rng.permutation(n_users)
    return perm[:n_train], perm[n_train:n_train + n_test]


def split_halves(ratings: np.ndarray, n_users: int, n_items: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(profile, target)`` rating matrices ``(n_users, n_items)`` (0 = not in that half): each
    user's rated movies shuffled, the first ``floor(m/2)`` to the profile, the rest to the target."""
    profile = np.zeros((n_users, n_items))
    target = np.zeros((n_users, n_items))
    order = np.lexsort((ratings[:, 1], ratings[:, 0]))  # by user, then movie: independent of file order
    users, items, values = ratings[order, 0], ratings[order, 1], ratings[order, 2].astype(np.float64)
    bounds = np.searchsorted(users, np.arange(n_users + 1))
    for u in range(n_users):
        idx = rng.permutation(np.arange(bounds[u], bounds[u + 1]))
        half = len(idx) // 2
        profile[u, items[idx[:half]]] = values[idx[:half]]
        target[u, items[idx[half:]]] = values[idx[half:]]
    return profile, target


def pearson(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Pearson correlation of every row of ``A`` with every row of ``B`` over the entries both
    rate (> 0); 0 where fewer than two are co-rated or one side is constant there."""
    MA, MB = (A > 0).astype(np.float64), (B > 0).astype(np.float64)
    n = MA @ MB.T
    sa, sb = A @ MB.T, MA @ B.T
    with np.errstate(divide="ignore", invalid="ignore"):
        cov = A @ B.T - sa * sb / n
        va = (A * A) @ MB.T - sa * sa / n
        vb = MA @ (B * B).T - sb * sb / n
        ok = (n >= 2) & (va > 1e-9) & (vb > 1e-9)
        return np.where(ok, cov / np.sqrt(np.where(ok, va * vb, 1.0)), 0.0)


def user_features(arrays: dict, profile: np.ndarray, train: np.ndarray, age_bins, intercept: float) -> np.ndarray:
    """Features ``(n_users, d)`` of every user: occupation one-hot, age-bin one-hot (bin edges
    ``age_bins``), gender (1 = M), Pearson similarity of profile ratings to each training user
    (own column 0), standardised with the training users' statistics, then the constant
    ``intercept = c`` (QS's kernel ``<x, x'> + c^2``; the baselines' per-movie bias ``b``,
    penalised ``lam/2 b^2 / c^2``)."""
    occupations = np.unique(arrays["user_occupation"])
    parts = [(arrays["user_occupation"][:, None] == occupations[None, :]).astype(np.float64),
             np.eye(len(age_bins) + 1)[np.digitize(arrays["user_age"], age_bins)],
             (arrays["user_gender"] == "M").astype(np.float64)[:, None]]
    sim = pearson(profile, profile[train])
    sim[train, np.arange(len(train))] = 0.0
    X = np.hstack(parts + [sim])
    mean, std = X[train].mean(axis=0), X[train].std(axis=0)
    return np.hstack([(X - mean) / np.where(std > 0, std, 1.0), np.full((len(X), 1), float(intercept))])


@dataclass(frozen=True)
class Trial:
    """One trial: training / test users, every user's features, target-half and profile-half ratings."""

    train: np.ndarray
    test: np.ndarray
    X: np.ndarray
    target: np.ndarray
    profile: np.ndarray | None = None


def make_trial(arrays: dict, settings: dict, seed: int, trial: int) -> Trial:
    """The users, halves and features of trial ``trial`` (the same for every method)."""
    missing = [k for k in VIEW_ARRAYS if k not in arrays]
    if missing:
        raise DataError(f"qs_movielens needs the movielens view; missing arrays {missing}")
    n_users, n_items = len(arrays["user_age"]), len(arrays["item_genres"])
    train, test = split_users(n_users, settings["n_train"], settings["n_test"],
                              rng_for(seed, "qs_movielens", "users", trial))
    profile, target = split_halves(arrays["ratings"], n_users, n_items, rng_for(seed, "qs_movielens", "halves", trial))
    X = user_features(arrays, profile, train, settings["age_bins"], settings["intercept"])
    return Trial(train, test, X, target, profile)


def rank_losses(R: np.ndarray, rank) -> np.ndarray:
    """Rank loss (QS eq. 22, normalised) of each row of ``R`` (a user's target ratings, 0 =
    not a target): ``rank(q, items)`` gives the positions of row ``q``'s target movies."""
    out = np.empty(len(R))
    for q, r in enumerate(R):
        items = np.flatnonzero(r)
        out[q] = PairwiseRanking(len(items)).loss(r[items], rank(q, items))
    return out


def qs_ranker(alpha: np.ndarray, R_train: np.ndarray):
    """QS ranking of query ``q``'s movies: ``argmin_y sum_i alpha[q, i] L(R_i, y)`` (QS eq. 2)."""
    return lambda q, items: PairwiseRanking(len(items)).weighted_decode(alpha[q], R_train[:, items])


def score_ranker(S: np.ndarray):
    """Ranking of query ``q``'s movies by decreasing score ``S[q]`` (ties: movie order)."""
    return lambda q, items: order_to_positions(np.argsort(-S[q, items], kind="stable"))


def popularity_scores(R_train: np.ndarray) -> np.ndarray:
    """Each movie's mean rating over the training users who rated it (the mean of all their
    ratings for the others): the non-personalised reference ranking (not in the paper)."""
    rated = R_train > 0
    counts = rated.sum(axis=0)
    overall = R_train[rated].mean()
    return np.where(counts > 0, R_train.sum(axis=0) / np.maximum(counts, 1), overall)


def baseline_losses(method: str, X_tr, R_tr, X_q, R_q, lams, settings: dict, rng) -> list[np.ndarray]:
    """Rank losses of the query users under a baseline fitted on the training users, per ``lam``."""
    Ws = fit_path(method, Preferences.from_ratings(X_tr, R_tr), lams, settings, rng)
    return [rank_losses(R_q, score_ranker(X_q @ W.T)) for W in Ws]


def with_intercept(X: np.ndarray, c: float) -> np.ndarray:
    """``X`` with its constant last feature set to ``c`` (QS's linear kernel ``<x, x'> + c^2``)."""
    out = X.copy()
    out[:, -1] = float(c)
    return out


def cross_validate(method: str, X: np.ndarray, R: np.ndarray, settings: dict,
                   seed: int) -> tuple[tuple[float, float], list[tuple[float, float, float]]]:
    """``((chosen c, chosen lam), [(c, lam, mean CV rank loss)])``: K-fold CV over the training
    users, over ``lam`` and, for QS, the kernel's constant ``c`` (``settings["intercepts"]``; the
    baselines keep the configured ``intercept``); ties to the first of the grid (``c`` slowest).
    QS shares one eigendecomposition per fold and ``c`` across the lambdas
    (:func:`structpred.solvers.kernel_ridge.ridge_cv`)."""
    lams = [float(v) for v in settings["lambdas"]]
    folds = list(KFold(settings["cv_folds"], shuffle=True, random_state=int_seed(seed, "cv")).split(X))
    intercepts = [float(c) for c in settings.get("intercepts", [X[0, -1]])]
    errors = {(c, lam): [] for c in intercepts for lam in lams}
    if method == "QS":
        def evaluate(alpha, tr, va):
            return rank_losses(R[va], qs_ranker(alpha, R[tr]))

        for c in intercepts:
            for _, lam, _, err in ridge_cv(with_intercept(X, c), folds, "linear", [1.0], lams, evaluate):
                errors[(c, lam)].append(err)
    else:
        for f, (tr, va) in enumerate(folds):
            losses = baseline_losses(method, X[tr], R[tr], X[va], R[va], lams, settings, rng_for(seed, method, "cv", f))
            for lam, err in zip(lams, losses):
                errors[(intercepts[0], lam)].append(float(np.mean(err)))
    curve = [(c, lam, float(np.mean(errors[(c, lam)]))) for c in intercepts for lam in lams]
    log.info("%s CV rank loss per (c, lam): %s", method, {(c, lam): round(m, 4) for c, lam, m in curve})
    best = curve[select_first_min([m for _, _, m in curve])]
    return best[:2], curve


def held_out_ranker(method: str, data: Trial, c: float, lam: float, settings: dict, seed: int):
    """``rank(q, items)``: the positions ``method`` fitted on all training users with ``lam`` (and,
    for QS, the kernel constant ``c``) gives the movies ``items`` of test user ``q`` (an index into
    ``data.test``)."""
    X_tr, R_tr = data.X[data.train], data.target[data.train]
    X_te = data.X[data.test]
    if method == "QS":
        X_tr, X_te = with_intercept(X_tr, c), with_intercept(X_te, c)
        alpha = RidgeWeights(kernel_matrix("linear", X_tr, X_tr), lam)(kernel_matrix("linear", X_tr, X_te))
        return qs_ranker(alpha, R_tr)
    if method == "Popularity":
        return score_ranker(np.broadcast_to(popularity_scores(R_tr), (len(data.test), R_tr.shape[1])))
    W = fit_path(method, Preferences.from_ratings(X_tr, R_tr), [lam], settings, rng_for(seed, method, "fit"))[0]
    return score_ranker(X_te @ W.T)


def held_out_losses(method: str, data: Trial, c: float, lam: float, settings: dict, seed: int) -> np.ndarray:
    """Rank loss of each test user under ``method`` fitted on all training users with ``lam`` (and,
    for QS, the kernel constant ``c``)."""
    return rank_losses(data.target[data.test], held_out_ranker(method, data, c, lam, settings, seed))


@register
class MovieLensRanking(Experiment):
    """QS Table 1: normalised rank loss on MovieLens 100K for QS and four pairwise baselines."""

    name = "qs_movielens"
    title = ("QS (NeurIPS 2016) Table 1: ranking movies on MovieLens 100K, normalised rank loss of QS "
             "against linear, hinge, logistic pairwise surrogates and a structural SVM")
    needs = ("view",)
    KEYS = ("n_train", "n_test", "cv_folds", "age_bins", "intercept")
    METHOD_KEYS = {"SVM-Struct": ("ssvm_passes",), "Linear": LBFGS_KEYS, "Hinge": LBFGS_KEYS,
                   "Logistic": LBFGS_KEYS, "QS": ("intercepts",), "Popularity": ()}

    def jobs(self, config):
        s = config[self.name]
        return [(DATASET, m, t) for m in s["methods"] for t in range(s["n_trials"])]

    def numeric_paths(self, config, dataset, method):
        return ("qs.ranking",) if method in ("QS", "Popularity") else ("qs.pairwise_baselines",)

    def settings(self, config, dataset, method):
        s = {**config[self.name], "intercepts": config[self.name]["qs_intercepts"]}
        if method not in METHODS:
            raise ConfigError(f"unknown qs_movielens method {method!r}; known: {', '.join(METHODS)}")
        return {**{k: s[k] for k in self.KEYS + self.METHOD_KEYS[method]}, "lambdas": s["lambdas"].get(method, [])}

    def run(self, inputs, settings, *, seed, dataset, method, split, threads=1):
        if method not in METHODS:
            raise ConfigError(f"unknown qs_movielens method {method!r}; known: {', '.join(METHODS)}")
        arrays, _ = load(inputs["view"])
        start = time.perf_counter()
        data = make_trial(arrays, settings, seed, split)
        log.info("trial %d: %d train / %d test users, %d features (%.1fs)", split, len(data.train),
                 len(data.test), data.X.shape[1], time.perf_counter() - start)
        start = time.perf_counter()
        trial_seed = int_seed(seed, self.name, split)  # the same CV folds for every method
        if settings["lambdas"]:
            (c, lam), curve = cross_validate(method, data.X[data.train], data.target[data.train], settings,
                                             trial_seed)
        else:  # nothing to select (Popularity)
            (c, lam), curve = (float(settings["intercept"]), float("nan")), []
        loss = float(np.mean(held_out_losses(method, data, c, lam, settings, trial_seed)))
        seconds = time.perf_counter() - start
        log.info("%s trial %d: c=%g lam=%g, test rank loss %.4f (%.1fs)", method, split, c, lam, loss, seconds)
        common = {"experiment": self.name, "task": TASK, "dataset": dataset, "method": method, "split": split,
                  "lam": lam}
        rows = [{**common, "selected": True, "metric": "rank_loss", "value": loss},
                {**common, "selected": True, "metric": "seconds", "value": seconds}]
        if "intercepts" in settings:   # the kernel constant QS chose: the grid-edge check reads it (not aggregated)
            rows.append({**common, "selected": False, "metric": "intercept", "value": c})
        # the CV curve, in the job's file only (not aggregated); c in the detail where QS selects it
        rows += [{**common, "lam": v, "selected": False, "metric": "cv_rank_loss", "value": m,
                  **({"detail": f"intercept={cv:g}"} if "intercepts" in settings else {})}
                 for cv, v, m in curve]
        return rows, None

    def grids(self, config, dataset, method):
        return {"intercept": list(config[self.name]["qs_intercepts"])} if method == "QS" else {}

    def render(self, table, tests, config):
        return render_grid(table, tests, rows="metric", metric="rank_loss",
                           note="The paper's numbers are unverified: our copy of the paper lost Table 1's digits; "
                                "they are taken from REFERENCE.md.")

    def figure(self, table, path, config):
        metric_bars(table[table["metric"] == "rank_loss"], path,
                    title="MovieLens 100K: mean ± std over trials (paper: unverified)")

    def tests(self, selected, config):
        return best_tests(selected)
