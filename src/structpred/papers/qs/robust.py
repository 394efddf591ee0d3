"""QS (NeurIPS 2016) §6 "Robust estimation": regression with outliers, QS with the Cauchy loss
against the robust Nadaraya-Watson estimator (RNW) and kernel ridge regression (KRR).

Data (the paper's model, arXiv v3 §6, with its constants in the config): ``x ~ U[x_range]``,
``y = f(x) + eta + nu`` with ``f(x) = sin(2 pi frequency x)``, ``eta ~ N(0, noise_variance)``
and ``nu = 0`` with probability ``1 - outlier_fraction``, else ``U[outlier_range]``.  Test
error: the mean squared error against ``f`` on ``n_test`` fresh inputs (the paper does not say
what its test error measures: ``qs_robust_metrics`` scores these fits under the other candidates).

Methods, each with its hyper-parameters chosen by K-fold cross-validation of the mean absolute
error on the held-out noisy targets (one criterion for all three, robust to the outliers):

* ``QS``: kernel-ridge weights ``alpha(x) = (K + n lam I)^{-1} K_x`` (Gaussian kernel, bandwidth
  ``sigma``), prediction ``argmin_t sum_i alpha_i(x) rho_c(t - y_i)`` (QS eq. 2 with the Cauchy
  loss of scale ``c``); grid ``sigmas x lambdas x cauchy_scales``;
* ``RNW``: Nadaraya-Watson weights ``w_i(x) = k(x, x_i) / sum_j k(x, x_j)`` and the same Cauchy
  M-estimate (Härdle 1984); grid ``sigmas x cauchy_scales``;
* ``KRR``: ``alpha(x)^T y`` (QS with the squared loss); grid ``sigmas x lambdas``.

A job is one (n, method, block of ``repetitions_per_job`` repetitions); its rows carry the
repetition as ``split``, so the table's ``n_splits`` counts repetitions.  The three methods
of a repetition see the same data (paired tests).
"""

from __future__ import annotations

import logging
import time

import numpy as np
from sklearn.model_selection import KFold

from structpred.errors import ConfigError
from structpred.features.kernels import kernel_matrix
from structpred.outputs.real_line import Cauchy
from structpred.papers.qs.report import render_grid, robust_figure
from structpred.papers.registry import Experiment, register
from structpred.solvers.kernel_ridge import RidgeWeights, ridge_cv
from structpred.tables.results import select_first_min
from structpred.tables.seeding import int_seed, rng_for
from structpred.tables.significance import best_tests

log = logging.getLogger(__name__)

METHODS = ("QS", "RNW", "KRR")
#: the hyper-parameters each method selects by cross-validation
PARAMETERS = {"QS": ("sigma", "lam", "cauchy_scale"), "RNW": ("sigma", "cauchy_scale"), "KRR": ("sigma", "lam")}
TASK = "robust"


def draw(model: dict, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x (n, 1), noisy y (n,), f(x) (n,))`` from the generative model."""
    lo, hi = model["x_range"]
    x = rng.uniform(lo, hi, size=n)
    f = np.sin(2.0 * np.pi * model["frequency"] * x)
    noise = rng.normal(0.0, np.sqrt(model["noise_variance"]), size=n)
    olo, ohi = model["outlier_range"]
    outlier = rng.uniform(size=n) < model["outlier_fraction"]
    y = f + noise + np.where(outlier, rng.uniform(olo, ohi, size=n), 0.0)
    return x[:, None], y, f


def nadaraya_watson(K_x: np.ndarray) -> np.ndarray:
    """Nadaraya-Watson weights ``(t, n)`` from kernel columns ``K_x (n, t)``."""
    s = K_x.sum(axis=0)
    return (K_x / np.where(s > 0, s, 1.0)).T


def _fit_predict(method: str, X, y, Xq, sigma: float, lam: float, c: float) -> np.ndarray:
    """Predictions at ``Xq`` of one method at one grid point."""
    Kx = kernel_matrix("gaussian", X, Xq, sigma)
    if method == "RNW":
        return Cauchy(c).weighted_decode(nadaraya_watson(Kx), y)
    alpha = RidgeWeights(kernel_matrix("gaussian", X, X, sigma), lam)(Kx)
    return alpha @ y if method == "KRR" else Cauchy(c).weighted_decode(alpha, y)


def grid(method: str, settings: dict) -> list[tuple[float, float, float]]:
    """The method's ``(sigma, lam, c)`` grid (``nan`` where a parameter does not apply)."""
    nan = float("nan")
    lams = settings["lambdas"] if "lam" in PARAMETERS[method] else [nan]
    scales = settings["cauchy_scales"] if "cauchy_scale" in PARAMETERS[method] else [nan]
    return [(float(s), float(lam), float(c)) for s in settings["sigmas"] for lam in lams for c in scales]


def cross_validate(method: str, X, y, settings: dict, seed: int) -> tuple[tuple, list[float]]:
    """``(chosen grid point, mean CV error per grid point)``: K-fold CV of the mean absolute
    error on held-out noisy targets; ties to the first grid point."""
    points = grid(method, settings)
    folds = list(KFold(settings["cv_folds"], shuffle=True, random_state=seed).split(X))
    errors = {p: [] for p in points}
    if method == "RNW":
        for tr, va in folds:
            for sigma, lam, c in points:
                w = nadaraya_watson(kernel_matrix("gaussian", X[tr], X[va], sigma))
                errors[sigma, lam, c].append(np.mean(np.abs(Cauchy(c).weighted_decode(w, y[tr]) - y[va])))
    else:
        # one eigendecomposition per (fold, sigma) serves every lambda and every Cauchy scale
        scales = sorted({p[2] for p in points})

        def evaluate(alpha, tr, va):
            preds = [alpha @ y[tr] if method == "KRR" else Cauchy(c).weighted_decode(alpha, y[tr]) for c in scales]
            return np.abs(np.array(preds) - y[va])

        for sigma, lam, _, errs in ridge_cv(X, folds, "gaussian", settings["sigmas"], settings["lambdas"], evaluate):
            for c, err in zip(scales, errs):
                errors[sigma, lam, c].append(err)
    means = [float(np.mean(errors[p])) for p in points]
    return points[select_first_min(means)], means


@register
class RobustRegression(Experiment):
    """QS §6 robust regression: test error against n for QS (Cauchy), RNW and KRR."""

    name = "qs_robust"
    title = ("QS (NeurIPS 2016) §6 robust estimation: test error (MSE against f) vs n, Cauchy-loss QS "
             "against robust Nadaraya-Watson and kernel ridge regression")
    needs = ()
    KEYS = ("n_test", "n_repetitions", "repetitions_per_job", "model", "cv_folds", "sigmas", "lambdas",
            "cauchy_scales")
    #: the name the data and the folds are drawn under: a variant of the table draws the same
    draws = "qs_robust"

    def jobs(self, config):
        s = self.block(config)
        blocks = -(-s["n_repetitions"] // s["repetitions_per_job"])
        return [(f"n{n}", m, b) for n in s["n_train"] for m in s["methods"] for b in range(blocks)]

    def view(self, config, dataset):
        return None

    def numeric_paths(self, config, dataset, method):
        return ("qs.cauchy",)

    def settings(self, config, dataset, method):
        return {k: self.block(config)[k] for k in self.KEYS}

    def grids(self, config, dataset, method):
        s = self.block(config)
        grid = {"sigma": s["sigmas"], "lam": s["lambdas"], "cauchy_scale": s["cauchy_scales"]}
        return {k: grid[k] for k in PARAMETERS[method]}

    def run(self, inputs, settings, *, seed, dataset, method, split, threads=1):
        if method not in METHODS:
            raise ConfigError(f"unknown {self.name} method {method!r}; known: {', '.join(METHODS)}")
        n = int(dataset.removeprefix("n"))
        per = settings["repetitions_per_job"]
        rows = []
        for rep in range(split * per, min((split + 1) * per, settings["n_repetitions"])):
            rng = rng_for(seed, self.draws, n, rep)  # the same data for every method
            X, y, _ = draw(settings["model"], n, rng)
            Xt, _, ft = draw(settings["model"], settings["n_test"], rng)
            start = time.perf_counter()
            (sigma, lam, c), _ = cross_validate(method, X, y, settings, int_seed(seed, self.draws, n, rep, "cv"))
            pred = _fit_predict(method, X, y, Xt, sigma, lam, c)
            seconds = time.perf_counter() - start
            err = float(np.mean((pred - ft) ** 2))
            log.info("%s n=%d rep=%d: sigma=%g lam=%g c=%g, test error %.4f (%.1fs)", method, n, rep, sigma, lam,
                     c, err, seconds)
            common = {"experiment": self.name, "task": TASK, "dataset": dataset, "method": method, "split": rep,
                      "lam": None if np.isnan(lam) else lam}
            rows += [{**common, "selected": True, "metric": "test_error", "value": err},
                     {**common, "selected": True, "metric": "seconds", "value": seconds}]
            # the chosen hyper-parameters, in the job's file only (not aggregated)
            rows += [{**common, "selected": False, "metric": k, "value": v}
                     for k, v in (("sigma", sigma), ("cauchy_scale", c)) if not np.isnan(v)]
        return rows, None

    def render(self, table, tests, config):
        return render_grid(table, tests, rows="dataset", metric="test_error")

    def figure(self, table, path, config):
        robust_figure(table, path)

    def tests(self, selected, config):
        return best_tests(selected)


@register
class RobustRegressionWide(RobustRegression):
    """QS §6 robust regression on wider hyper-parameter grids (``qs_robust``'s first run chose its
    grids' edges): the same data, folds and methods, every setting ``qs_robust``'s unless this
    block overrides it (``sigmas``, ``lambdas``, ``cauchy_scales``)."""

    name = "qs_robust_wide"
    title = ("QS (NeurIPS 2016) §6 robust estimation on grids that do not bind: test error (MSE against f) "
             "vs n, Cauchy-loss QS against robust Nadaraya-Watson and kernel ridge regression")
    variant_of = references_of = "qs_robust"
