"""QS (NeurIPS 2016) Table 2: USPS digit reconstruction, the lower half of a digit from its upper half.

Images (16 x 16, pixels in [-1, 1]) are mapped to [0, 1]; the input is the upper half (128
pixels), the output the lower half normalised to sum 1: a histogram (QS §6, after Cuturi 2013).
Per run (the workflow's ``split``): ``n_train`` training images evenly over the 10 digits,
``n_test`` test images and a separate classifier set (the rest), all drawn with the seed from
the 9298 USPS images (ESL train + test).

Methods (QS Alg. 1 with a Gaussian input kernel of bandwidth ``sigma``, ``(sigma, lam)`` by
K-fold cross-validation of each method's own loss on the training images):

* ``KDE``: the Gaussian output loss ``1 - exp(-||y - y'||^2 / (2 output_sigma^2))`` (QS Alg. 1
  with this loss is the KDE of Cortes et al. 2005), decoded by fixed-point iterations;
* ``QS``: the squared Hellinger loss ``sum_j (sqrt y_j - sqrt y'_j)^2`` (QS eq. 23), decoded in
  closed form.

Metrics on the test images: the Gaussian and Hellinger losses of the reconstructed lower half,
and the recognition loss: the error of an RBF SVM digit classifier (scikit-learn ``SVC``),
trained on the classifier set, on the test digits whose lower half is the reconstruction.  The
classifier sees each half as its own histogram, ``[upper / sum, lower / sum]``, the scale of
the reconstructions.  A job's history holds the first ``n_shown`` test digits (truth and
reconstruction), from which the report draws the digit grid.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd
from sklearn.model_selection import KFold
from sklearn.svm import SVC

from structpred.data.store import load
from structpred.errors import ConfigError
from structpred.estimators import QS
from structpred.features.kernels import median_distance
from structpred.outputs.histogram import GaussianHistogram, Hellinger
from structpred.papers.qs.report import digit_grid, metric_bars, render_grid
from structpred.papers.registry import Experiment, register
from structpred.solvers.kernel_ridge import ridge_cv
from structpred.tables.results import select_first_min
from structpred.tables.seeding import int_seed, rng_for
from structpred.tables.significance import best_tests

log = logging.getLogger(__name__)

METHODS = ("KDE", "QS")
TASK = "reconstruction"
DATASET = "usps"
SIDE = 16
HALF = SIDE * SIDE // 2
#: the name that seeds a run's images and folds: Table 2's, also for its bandwidth sensitivity table,
#: so that both tables' runs are the same images and folds
DRAWS = "qs_usps"


def halves(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(upper half in [0, 1], lower half as a histogram)`` of images with pixels in [-1, 1]."""
    P = (np.asarray(X, dtype=np.float64) + 1.0) / 2.0
    lower = P[:, HALF:]
    return P[:, :HALF], lower / lower.sum(axis=1, keepdims=True)


def as_histograms(upper: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """The classifier's representation of a digit: each half normalised to sum 1, side by side."""
    return np.hstack([upper / upper.sum(axis=1, keepdims=True), lower])


def draw_run(y: np.ndarray, n_train: int, n_test: int, rng: np.random.Generator):
    """Disjoint ``(train, test, classifier)`` indices: ``n_train / 10`` training images per digit,
    then ``n_test`` test images and the rest (the classifier's) from a permutation of the others."""
    per = n_train // 10
    train = np.concatenate([rng.permutation(np.flatnonzero(y == d))[:per] for d in range(10)])
    if len(train) != n_train or n_train % 10:
        raise ConfigError(f"qs_usps: n_train={n_train} must be a multiple of 10 with enough images per digit")
    rest = rng.permutation(np.setdiff1d(np.arange(len(y)), train))
    if n_test >= len(rest):
        raise ConfigError(f"qs_usps: n_test={n_test} leaves no image for the classifier")
    return np.sort(train), rest[:n_test], rest[n_test:]


def space_of(method: str, settings: dict):
    if method == "KDE":
        return GaussianHistogram(HALF, settings["output_sigma"])
    if method == "QS":
        return Hellinger(HALF)
    raise ConfigError(f"unknown qs_usps method {method!r}; known: {', '.join(METHODS)}")


def select(space, X, Y, settings: dict, seed: int) -> tuple[float, float]:
    """``(sigma, lam)`` of the lowest mean CV loss (the space's own loss; ties: the first)."""
    scale = median_distance(X)
    sigmas = [f * scale for f in settings["sigma_factors"]]
    folds = list(KFold(settings["cv_folds"], shuffle=True, random_state=seed).split(X))
    rows = ridge_cv(X, folds, "gaussian", sigmas, settings["lambdas"],
                    lambda alpha, tr, va: space.loss(Y[va], space.weighted_decode(alpha, Y[tr])))
    frame = pd.DataFrame(rows, columns=["sigma", "lam", "fold", "loss"])
    mean = frame.groupby(["sigma", "lam"], sort=False)["loss"].mean()
    return mean.index[select_first_min(mean.to_numpy())]


@register
class DigitReconstruction(Experiment):
    """QS Table 2: KDE (Gaussian loss) vs QS (Hellinger loss) on USPS lower-half reconstruction."""

    name = "qs_usps"
    title = ("QS (NeurIPS 2016) Table 2: USPS lower-half reconstruction, Gaussian / Hellinger / "
             "recognition loss on the test digits (paper numbers unverified)")
    needs = ("view",)
    KEYS = ("n_train", "n_test", "cv_folds", "sigma_factors", "lambdas", "output_sigma", "svm_C", "n_shown")

    def block(self, config: dict) -> dict:
        """The experiment's settings (Table 2's block)."""
        return config["qs_usps"]

    def jobs(self, config):
        s = self.block(config)
        return [(DATASET, m, k) for m in s["methods"] for k in range(s["n_runs"])]

    def view(self, config, dataset):
        return "usps"

    def numeric_paths(self, config, dataset, method):
        return ("qs.histogram",)

    def settings(self, config, dataset, method):
        return {k: self.block(config)[k] for k in self.KEYS}

    def grids(self, config, dataset, method):
        # the input bandwidth is recorded as its value (factor x the median distance), not its factor
        return {"lam": self.block(config)["lambdas"]}

    def run(self, inputs, settings, *, seed, dataset, method, split, threads=1):
        arrays, _ = load(inputs["view"])
        upper, lower = halves(arrays["X"])
        train, test, clf_idx = draw_run(arrays["y"], settings["n_train"], settings["n_test"],
                                        rng_for(seed, DRAWS, split))  # the same images for every method
        space = space_of(settings.get("base", method), settings)
        start = time.perf_counter()
        sigma, lam = select(space, upper[train], lower[train], settings, int_seed(seed, DRAWS, split, "cv"))
        model = QS(loss=space, kernel="gaussian", sigma=sigma, lam=lam).fit(upper[train], lower[train])
        pred = model.predict(upper[test])
        seconds = time.perf_counter() - start
        truth = lower[test]
        classifier = SVC(kernel="rbf", C=settings["svm_C"], gamma="scale")
        classifier.fit(as_histograms(upper[clf_idx], lower[clf_idx]), arrays["y"][clf_idx])
        digits = arrays["y"][test]
        recognition = float(np.mean(classifier.predict(as_histograms(upper[test], pred)) != digits))
        clean = float(np.mean(classifier.predict(as_histograms(upper[test], truth)) != digits))
        metrics = {"gaussian": GaussianHistogram(HALF, settings["output_sigma"]).loss(truth, pred).mean(),
                   "hellinger": Hellinger(HALF).loss(truth, pred).mean(), "recognition": recognition}
        log.info("%s run %d: sigma=%.3g lam=%g %s (classifier on true digits: %.4f) %.1fs", method, split, sigma,
                 lam, {k: round(float(v), 4) for k, v in metrics.items()}, clean, seconds)
        common = {"experiment": self.name, "task": TASK, "dataset": DATASET, "method": method, "split": split,
                  "lam": lam}
        rows = [{**common, "selected": True, "metric": k, "value": float(v)} for k, v in metrics.items()]
        rows += [{**common, "selected": True, "metric": "seconds", "value": seconds},
                 {**common, "selected": False, "metric": "sigma", "value": sigma},
                 {**common, "selected": False, "metric": "recognition_true_digits", "value": clean}]
        k = settings["n_shown"]
        shown = pd.DataFrame(np.hstack([np.vstack([upper[test[:k]]] * 2), np.vstack([truth[:k], pred[:k]])]),
                             columns=[f"u{j}" for j in range(HALF)] + [f"p{j}" for j in range(HALF)])
        shown.insert(0, "image", np.tile(np.arange(k), 2))
        shown.insert(0, "kind", ["truth"] * k + [method] * k)
        shown.insert(0, "split", split)
        return rows, shown

    def render(self, table, tests, config):
        return render_grid(table, tests, rows="metric",
                           note="The paper's numbers are unverified: our copy of the paper lost Table 2's digits; "
                                "they come from ../shared/REFERENCE.md.")

    def figure(self, table, path, config):
        metric_bars(table, path, title="USPS reconstruction: mean ± std over runs")

    def tests(self, selected, config):
        return best_tests(selected)

    def curve_panels(self, config):
        return ["digits"]

    def curve_table(self, histories):
        """The digits of the first run: the truth once, then each method's reconstruction."""
        first = histories[histories["split"] == histories["split"].min()]
        return pd.concat([first[first["kind"] == "truth"].drop_duplicates("image"), first[first["kind"] != "truth"]],
                         ignore_index=True)

    def curve_figure(self, panel, curves, path):
        digit_grid(curves, path)


def kde_name(output_sigma) -> str:
    """``KDE_output_sigma=0.05``: KDE trained and scored with that Gaussian output bandwidth."""
    return f"KDE_output_sigma={float(output_sigma):g}"


@register
class BandwidthSensitivity(DigitReconstruction):
    """QS Table 2's KDE at several bandwidths of its Gaussian output loss (the paper gives none),
    beside QS, on the same runs: how the recognition error depends on the bandwidth.  Every
    other setting is ``qs_usps``'s, whose table uses ``output_sigma``; each KDE row's ``gaussian``
    column is its own loss, QS's is at ``output_sigma``."""

    name = "qs_usps_bandwidth"
    title = ("QS (NeurIPS 2016) Table 2, sensitivity: KDE's Gaussian output-loss bandwidth against "
             "the recognition error, beside QS")

    def runs(self, config: dict) -> dict[str, tuple[str, float]]:
        """Job method names -> ``(method, output bandwidth)``."""
        out = {kde_name(s): ("KDE", float(s)) for s in config[self.name]["output_sigmas"]}
        return {**out, "QS": ("QS", float(self.block(config)["output_sigma"]))}

    def jobs(self, config):
        return [(DATASET, m, k) for m in self.runs(config) for k in range(self.block(config)["n_runs"])]

    def settings(self, config, dataset, method):
        runs = self.runs(config)
        if method not in runs:
            raise ConfigError(f"{method!r} is not a run of {self.name}; runs: {', '.join(runs)}")
        base, sigma = runs[method]
        return {**super().settings(config, dataset, method), "output_sigma": sigma, "base": base}
