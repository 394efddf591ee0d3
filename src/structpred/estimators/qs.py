"""QS: kernel-ridge weights and loss-trick decoding (Ciliberto, Rosasco, Rudi, NeurIPS 2016), scikit-learn style.

Alg. 1 of the paper: ``alpha(x) = (K + n lam I)^{-1} K_x`` (eq. 3-4), then
``f(x) = argmin_y sum_i alpha_i(x) L(y_i, y)`` (eq. 2), the argmin delegated to the output
space's loss-trick decoder (:class:`structpred.outputs.WeightedDecoding`): closed forms for the
Hellinger loss, fixed points for the Gaussian (KDE) loss, a bounded global 1-d search for the
Cauchy loss, a feedback-arc-set heuristic for rankings, and ``bayes_decode`` of the weighted
embeddings for every affine loss (``Multiclass``, ``Chain``, ``Permutation``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.model_selection import KFold
from sklearn.utils.validation import check_is_fitted

from structpred.errors import StructpredError, check_positive, check_positive_int
from structpred._fitting import AtomicFit, check_feature_names
from structpred.estimators._qs_sequences import SEQUENCE_INPUTS, LengthBlocks, check_sequences, position_width
from structpred.estimators._tags import classifier_tags
from structpred.features.kernels import check_kernel, kernel_matrix
from structpred.features.sequences import as_float_matrix
from structpred.outputs import Multiclass, StatisticDecoding, WeightedDecoding, make_space, require
from structpred.outputs.batch import is_ragged, labels_batch
from structpred.solvers.kernel_ridge import NystromRidgeWeights, RidgeWeights, ridge_cv
from structpred.solvers.problem import check_labels_for


def _refuse_sparse(X) -> None:
    if hasattr(X, "tocsr") or hasattr(X, "sparse"):
        raise StructpredError("X is a sparse matrix: QS's kernels take dense arrays (use X.toarray())")


def _take(y, idx):
    """Rows ``idx`` of a label batch (a list for ragged spaces)."""
    return [y[i] for i in idx] if is_ragged(y) else y[idx]


def _concat(parts):
    if parts and is_ragged(parts[0]):
        return [p for part in parts for p in part]
    return np.concatenate(parts, axis=0)


class QS(AtomicFit, BaseEstimator):
    """Structured prediction by the loss trick (QS Alg. 1).

    ``alpha(x) = (K + n lam I)^{-1} K_x`` with the ``kernel`` (``"linear"`` or ``"gaussian"``
    of bandwidth ``sigma``) on the inputs, then ``argmin_y sum_i alpha_i(x) L(y_i, y)`` by the
    space's decoder.  ``loss``: a loss name, a loss matrix or any space with loss-trick
    decoding (see :func:`structpred.outputs.make_space`).  ``n_components``: ``None`` for the
    exact weights (one Cholesky factorisation), or the number of Nyström centres (drawn with
    ``random_state``) for large ``n``.  Predictions are decoded ``batch_size`` queries at a time.

    ``X`` may be :class:`~structpred.features.Sequences` (words of varying length, a sequence
    space's outputs) or :class:`~structpred.features.hashed.WindowTokens` (tagged sentences, on
    their hashed window ids): the kernel is then ``[T(x) = T(x')] kappa(vec x, vec x')``, one ridge
    system per length (:mod:`structpred.estimators._qs_sequences`).

    When the loss depends on the weights only through a finite statistic
    ``sum_i alpha_i psi(y_i)`` (:class:`structpred.outputs.StatisticDecoding`: every affine loss,
    the Hellinger loss), ``fit`` keeps the kernel ridge coefficients ``(K + n lam I)^{-1} psi(Y)``
    and ``predict`` costs ``O(n d)`` per query instead of ``O(n^2)``.
    """

    def __init__(self, *, loss="zero_one", kernel="gaussian", sigma=1.0, lam=1e-3, n_components=None,
                 random_state=None, batch_size=500, n_labels=None):
        self.loss = loss
        self.kernel = kernel
        self.sigma = sigma
        self.lam = lam
        self.n_components = n_components
        self.random_state = random_state
        self.batch_size = batch_size
        self.n_labels = n_labels

    # --- fit ------------------------------------------------------------------------
    def _fit(self, X, y):
        """Factorise the kernel ridge system on the training inputs and keep the outputs (through
        :meth:`fit`, which leaves the estimator as it was if this fails)."""
        X, self.space_, self.y_fit_ = self._check_data(X, y)
        self._fit_weights(X, self.sigma, self.lam)
        self._set_classes()
        return self

    def _check_data(self, X, y):
        """Checked ``(X, space, y)`` of a training set."""
        who = type(self).__name__
        _refuse_sparse(X)
        if y is None:
            raise StructpredError(f"{who} requires y to be passed, but the target y is None")
        X = check_sequences(X, self.n_components) if isinstance(X, SEQUENCE_INPUTS) else as_float_matrix(X)
        space = make_space(self.loss, self.n_labels, y)
        require(space, WeightedDecoding, who)
        return X, space, check_labels_for(space, y, len(X))

    def _set_classes(self) -> None:
        """``classes_`` (labels 0..k-1) when the outputs are single labels, as for a classifier."""
        if isinstance(self.space_, Multiclass):
            self.classes_ = np.arange(self.space_.n_labels)

    def _fit_weights(self, X, sigma, lam) -> None:
        check_kernel(self.kernel)
        self.sigma_ = check_positive(sigma, "sigma")
        self.lam_ = check_positive(lam, "lam")
        self.X_fit_ = X
        if isinstance(X, SEQUENCE_INPUTS):
            self.n_features_in_ = position_width(X)
            self.weights_ = LengthBlocks(self.kernel, X, self.y_fit_, self.sigma_, self.lam_, self.space_)
            self.centers_ = self.dual_coef_ = None
            return
        n = X.shape[0]
        self.n_features_in_ = X.shape[1]
        m = None if self.n_components is None else check_positive_int(self.n_components, "n_components")
        if m is None or m >= n:
            self.centers_ = None
            self.weights_ = RidgeWeights(kernel_matrix(self.kernel, X, X, self.sigma_), self.lam_)
        else:
            idx = np.sort(np.random.default_rng(self.random_state).choice(n, m, replace=False))
            self.centers_ = X[idx]
            self.weights_ = NystromRidgeWeights(kernel_matrix(self.kernel, X, self.centers_, self.sigma_),
                                                kernel_matrix(self.kernel, self.centers_, self.centers_, self.sigma_),
                                                self.lam_)
        stat = isinstance(self.space_, StatisticDecoding)
        self.dual_coef_ = self.weights_.dual(self.space_.statistic(self.y_fit_)) if stat else None

    # --- predict --------------------------------------------------------------------
    def _kernel_columns(self, X) -> np.ndarray:
        """Kernel between the training inputs (or the Nyström centres) and the rows of ``X``."""
        check_is_fitted(self, "weights_")
        _refuse_sparse(X)
        X = as_float_matrix(X)
        if X.shape[1] != self.n_features_in_:
            raise StructpredError(f"X has {X.shape[1]} features, but QS is expecting {self.n_features_in_} "
                                  "features as input")
        basis = self.X_fit_ if self.centers_ is None else self.centers_
        return kernel_matrix(self.kernel, basis, X, self.sigma_)

    def weights(self, X) -> np.ndarray:
        """``alpha(x)`` for every row (or sequence) of ``X``: a ``(t, n_train)`` array (QS eq. 3-4)."""
        check_is_fitted(self, "weights_")
        check_feature_names(self, X)
        if isinstance(self.weights_, LengthBlocks):
            return self.weights_.weights(self._check_sequences(X), len(self.X_fit_))
        return self.weights_(self._kernel_columns(X))

    def _check_sequences(self, X):
        fitted = type(self.X_fit_)
        if not isinstance(X, fitted):
            raise StructpredError(f"QS was fitted on sequences ({fitted.__module__}.{fitted.__name__}); "
                                  f"got {type(X).__name__}")
        if position_width(X) != self.n_features_in_:
            raise StructpredError(f"X has {position_width(X)} features per position, but QS is expecting "
                                  f"{self.n_features_in_}")
        return X

    def _decode(self, X):
        if self.dual_coef_ is not None:
            return self.space_.decode_statistic(self._kernel_columns(X).T @ self.dual_coef_)
        return self.space_.weighted_decode(self.weights(X), self.y_fit_)

    def predict(self, X):
        """``argmin_y sum_i alpha_i(x) L(y_i, y)`` per row of ``X`` (QS eq. 2)."""
        check_is_fitted(self, "weights_")
        check_feature_names(self, X)
        if isinstance(self.weights_, LengthBlocks):
            return self.weights_.decode(self._check_sequences(X))
        X = as_float_matrix(X)
        b = check_positive_int(self.batch_size, "batch_size")
        return _concat([self._decode(X[s:s + b]) for s in range(0, X.shape[0], b)])

    def task_loss(self, X, y) -> float:
        """Mean task loss ``mean_j L(y_j, f(x_j))``."""
        check_is_fitted(self, "weights_")
        pred = self.predict(X)
        y = labels_batch(self.space_, y)
        if len(y) != len(pred):
            raise StructpredError(f"X has {len(pred)} samples but y has {len(y)}")
        return float(np.mean(self.space_.loss(y, pred)))

    def score(self, X, y) -> float:
        """``-task_loss(X, y)``: greater is better (scikit-learn convention)."""
        return -self.task_loss(X, y)

    def __sklearn_tags__(self):
        return classifier_tags(super().__sklearn_tags__(), self.loss)


class QSCV(QS):
    """:class:`QS` with ``(sigma, lam)`` chosen by ``n_folds``-fold cross-validation of the task
    loss over the grids ``sigmas`` x ``lams`` (the first of the lowest mean validation losses,
    in grid order), then refitted on all the data.  Each fold and ``sigma`` costs one
    eigendecomposition, shared by every ``lam`` (:func:`structpred.solvers.kernel_ridge.ridge_cv`).
    ``cv_results_``: one row per ``(sigma, lam, fold)``; ``sigma_`` and ``lam_`` the choice.
    ``random_state`` shuffles the folds: an int (or a ``np.random.Generator``, from which one seed
    is drawn per fit) for reproducible choices; ``None`` shuffles them anew at every fit, so the
    choice may differ between fits (scikit-learn's convention).
    """

    def __init__(self, *, loss="zero_one", kernel="gaussian", sigmas=(1.0,), lams=(1e-1, 1e-2, 1e-3, 1e-4),
                 n_folds=5, n_components=None, random_state=None, batch_size=500, n_labels=None):
        self.loss = loss
        self.kernel = kernel
        self.sigmas = sigmas
        self.lams = lams
        self.n_folds = n_folds
        self.n_components = n_components
        self.random_state = random_state
        self.batch_size = batch_size
        self.n_labels = n_labels

    def _fit(self, X, y):
        X, space, y = self._check_data(X, y)
        if isinstance(X, SEQUENCE_INPUTS):
            raise StructpredError("QSCV takes inputs of one size; for sequences fit QS over a grid of (sigma, lam) "
                                  "and choose on a validation set")
        sigmas = [check_positive(s, "sigma") for s in np.atleast_1d(self.sigmas)]
        lams = [check_positive(v, "lam") for v in np.atleast_1d(self.lams)]
        if not sigmas or not lams:
            raise StructpredError(f"sigmas and lams must each hold at least one value, got {self.sigmas!r} and "
                                  f"{self.lams!r}")
        k = int(self.n_folds)
        if k < 2 or k > X.shape[0]:
            raise StructpredError(f"n_folds must be in 2..n_samples={X.shape[0]}, got {self.n_folds}")
        seed = self.random_state
        if isinstance(seed, np.random.Generator):   # KFold takes an int or a RandomState: one draw from it
            seed = int(seed.integers(2**32 - 1))
        folds = list(KFold(k, shuffle=True, random_state=seed).split(X))

        def evaluate(alpha, tr, va):
            return space.loss(_take(y, va), space.weighted_decode(alpha, _take(y, tr)))

        rows = ridge_cv(X, folds, check_kernel(self.kernel), sigmas, lams, evaluate)
        self.cv_results_ = pd.DataFrame(rows, columns=["sigma", "lam", "fold", "loss"])
        mean = self.cv_results_.groupby(["sigma", "lam"], sort=False)["loss"].mean()
        sigma, lam = mean.index[int(np.argmin(mean.to_numpy()))]  # ties: the first in grid order
        self.space_ = space
        self.y_fit_ = y
        self._fit_weights(X, sigma, lam)
        self._set_classes()
        return self
