"""Gaussian-kernel Nyström features as used by the M4N reference experiments."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from structpred.errors import StructpredError, check_positive_int
from structpred._fitting import AtomicFit


def _validate(estimator, X, reset: bool) -> np.ndarray:
    """scikit-learn's checks of ``X`` (``validate_data``), after a one-line error for a non-2-d
    ``X`` (scikit-learn's prints the whole array)."""
    ndim = None if hasattr(X, "tocsr") else np.asarray(X).ndim
    if ndim is not None and ndim != 2:
        raise StructpredError(f"X must be 2-d (n_samples, n_features), got {ndim}-d. Reshape your data: "
                              "X.reshape(-1, 1) for one feature, X.reshape(1, -1) for one sample")
    return validate_data(estimator, X, dtype=np.float64, reset=reset)


def _check_params(n_components, eig_tol) -> int:
    """``n_components`` as an int >= 1 (an integral number, not a string or a fraction); ``eig_tol`` in [0, 1)."""
    if not isinstance(eig_tol, numbers.Real) or isinstance(eig_tol, bool) or not 0 <= eig_tol < 1:
        raise StructpredError(f"eig_tol must be a number in [0, 1), got {eig_tol!r}")
    return check_positive_int(n_components, "n_components")


class NystromGaussian(AtomicFit, TransformerMixin, BaseEstimator):
    """Nyström features of the Gaussian kernel ``exp(-||x - c||^2 / (2 sigma^2))``.

    fit:
      1. standardise the inputs with the training mean/std (constant columns: std := 1);
      2. ``sigma = sqrt(sum_j std_j)`` where ``std_j`` is the std of the *standardised*
         training inputs (the reference code standardises the data, then computes
         ``np.sqrt(np.std(X, axis=0).sum())``; this equals sqrt(number of non-constant
         features));
      3. draw ``m = min(n_components, n)`` centres among the training rows
         (``numpy.random.default_rng(random_state).permutation(n)[:m]``);
      4. with ``whiten=True`` the Nyström map ``K(x, C) K_CC^{-1/2}`` (eigendecomposition,
         eigenvalues below ``1e-10 * max`` dropped); with ``whiten=False`` the raw kernel
         columns ``K(x, C)`` as in the reference code (``transform_features``);
      5. standardise the resulting features (training mean/std) and append a bias
         column of ones.

    Output dimension ``n_features_out_`` = number of kept directions + 1.
    Deterministic for a fixed integer ``random_state``.  Input checks are scikit-learn's
    (``validate_data``: dense, real, finite, at least one row and column, the fitted column
    count and names); a failed ``fit`` leaves a fitted transformer as it was.
    """

    def __init__(self, n_components=200, random_state=None, whiten=True, eig_tol=1e-10):
        self.n_components = n_components
        self.random_state = random_state
        self.whiten = whiten
        self.eig_tol = eig_tol

    def _fit(self, X, y=None):
        m = _check_params(self.n_components, self.eig_tol)
        X = _validate(self, X, reset=True)
        n = X.shape[0]
        self.mean_ = X.mean(axis=0)
        std = X.std(axis=0)
        self.scale_ = np.where(std > 0, std, 1.0)
        Z = (X - self.mean_) / self.scale_
        s = float(np.sqrt(Z.std(axis=0).sum()))
        self.sigma_ = s if s > 0 else 1.0
        m = min(m, n)
        rng = np.random.default_rng(self.random_state)
        self.center_indices_ = rng.permutation(n)[:m]
        self.centers_ = Z[self.center_indices_].copy()
        if self.whiten:
            Kmm = self._kernel(self.centers_, self.centers_)
            evals, evecs = np.linalg.eigh(Kmm)
            keep = evals > self.eig_tol * max(evals.max(), 1e-300)
            self.projection_ = evecs[:, keep] / np.sqrt(evals[keep])
        else:
            self.projection_ = None
        F = self._raw(Z)
        self.feat_mean_ = F.mean(axis=0)
        fs = F.std(axis=0)
        self.feat_scale_ = np.where(fs > 0, fs, 1.0)
        self.n_features_out_ = F.shape[1] + 1
        return self

    def _kernel(self, A, B):
        sq = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
        np.maximum(sq, 0.0, out=sq)
        return np.exp(-sq / (2.0 * self.sigma_ ** 2))

    def _raw(self, Z):
        K = self._kernel(Z, self.centers_)
        return K @ self.projection_ if self.projection_ is not None else K

    def transform(self, X):
        check_is_fitted(self, "centers_")
        X = _validate(self, X, reset=False)
        Z = (X - self.mean_) / self.scale_
        F = (self._raw(Z) - self.feat_mean_) / self.feat_scale_
        return np.hstack([F, np.ones((F.shape[0], 1))])
