"""Gaussian-kernel Nyström features as used by the M4N reference experiments."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from structpred.errors import StructpredError


def _check_X(X, name="X"):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise StructpredError(f"{name} must be 2-d (n_samples, n_features), got shape {X.shape}")
    if X.shape[0] == 0:
        raise StructpredError(f"{name} has no rows")
    if not np.all(np.isfinite(X)):
        raise StructpredError(f"{name} contains NaN or infinite values")
    return X


class NystromGaussian(BaseEstimator, TransformerMixin):
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
    Deterministic for a fixed integer ``random_state``.
    """

    def __init__(self, n_components=200, random_state=None, whiten=True, eig_tol=1e-10):
        self.n_components = n_components
        self.random_state = random_state
        self.whiten = whiten
        self.eig_tol = eig_tol

    def fit(self, X, y=None):
        X = _check_X(X)
        if int(self.n_components) < 1:
            raise StructpredError(f"n_components must be >= 1, got {self.n_components}")
        n = X.shape[0]
        self.mean_ = X.mean(axis=0)
        std = X.std(axis=0)
        self.scale_ = np.where(std > 0, std, 1.0)
        Z = (X - self.mean_) / self.scale_
        s = float(np.sqrt(Z.std(axis=0).sum()))
        self.sigma_ = s if s > 0 else 1.0
        m = min(int(self.n_components), n)
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
        self.n_features_in_ = X.shape[1]
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
        X = _check_X(X)
        if X.shape[1] != self.n_features_in_:
            raise StructpredError(f"X has {X.shape[1]} features, the transformer was fitted on {self.n_features_in_}")
        Z = (X - self.mean_) / self.scale_
        F = (self._raw(Z) - self.feat_mean_) / self.feat_scale_
        return np.hstack([F, np.ones((F.shape[0], 1))])
