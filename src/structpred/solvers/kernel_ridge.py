"""Kernel-ridge weights of QS: ``alpha(x) = (K + n lam I)^{-1} K_x`` (Ciliberto et al. 2016, eq. 3-4).

``K`` is the ``(n, n)`` kernel matrix of the training inputs and ``K_x`` the ``(n, t)`` kernel
columns of ``t`` query inputs; every class returns the weights as a ``(t, n)`` array (one row
per query), the layout :meth:`structpred.outputs.base.WeightedDecoding.weighted_decode` takes.

- :class:`RidgeWeights`: one ``lam``, one Cholesky factorisation.
- :class:`RidgePath`: every ``lam`` of a grid from one eigendecomposition ``K = U diag(s) U^T``,
  ``alpha_lam(x) = U diag(1 / (s + n lam)) U^T K_x`` (cross-validation).
- :class:`NystromRidgeWeights`: ``m`` centres, ``alpha(x) = K_nm (K_mn K_nm + n lam K_mm)^+ K_mx``
  (the Nyström kernel ridge estimator of Rudi, Camoriano, Rosasco 2015), ``O(n m^2)``.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve, eigh

from structpred.errors import StructpredError, check_positive, check_positive_int
from structpred.features.kernels import kernel_matrix


def _square(K) -> np.ndarray:
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
        raise StructpredError(f"the kernel matrix must be square and non-empty, got shape {K.shape}")
    return K


class RidgeWeights:
    """``alpha(x) = (K + n lam I)^{-1} K_x`` from one Cholesky factorisation.  ``n``: the sample
    count in ``n lam``, by default ``K``'s size (a diagonal block of a block-diagonal ``K`` takes the
    whole's)."""

    def __init__(self, K, lam: float, n: int | None = None):
        K = _square(K)
        self.n = K.shape[0] if n is None else check_positive_int(n, "n")
        A = K + self.n * check_positive(lam, "lam") * np.eye(K.shape[0])
        self._factor = cho_factor(A, lower=True, check_finite=False)

    def __call__(self, Kx) -> np.ndarray:
        return cho_solve(self._factor, np.asarray(Kx, dtype=np.float64), check_finite=False).T

    def dual(self, E) -> np.ndarray:
        """Coefficients ``C = (K + n lam I)^{-1} E`` with ``alpha(x) @ E = K_x^T C`` (kernel ridge
        regression on the targets ``E``)."""
        return cho_solve(self._factor, np.asarray(E, dtype=np.float64), check_finite=False)


class RidgePath:
    """The weights for every ``lam`` of a grid from one eigendecomposition of ``K``.

    ``coords = path.project(Kx)`` (``U^T K_x``) is shared by all ``lam``;
    ``path.weights(coords, lam)`` is then one ``(n, n) x (n, t)`` product.
    """

    def __init__(self, K):
        K = _square(K)
        self.n = K.shape[0]
        s, self.U = eigh(K, check_finite=False)
        self.s = np.maximum(s, 0.0)

    def project(self, Kx) -> np.ndarray:
        return self.U.T @ np.asarray(Kx, dtype=np.float64)

    def weights(self, coords, lam: float) -> np.ndarray:
        d = 1.0 / (self.s + self.n * check_positive(lam, "lam"))
        return (self.U @ (coords * d[:, None])).T


class NystromRidgeWeights:
    """``alpha(x) = K_nm (K_mn K_nm + n lam K_mm)^+ K_mx`` with ``K_nm`` the kernel between the
    ``n`` training inputs and ``m`` centres (eigenvalues below ``1e-12`` of the largest are
    dropped from the pseudo-inverse)."""

    def __init__(self, Knm, Kmm, lam: float):
        Knm = np.asarray(Knm, dtype=np.float64)
        Kmm = _square(Kmm)
        if Knm.ndim != 2 or Knm.shape[1] != Kmm.shape[0]:
            raise StructpredError(f"K_nm {Knm.shape} and K_mm {Kmm.shape} do not match")
        self.n = Knm.shape[0]
        B = Knm.T @ Knm + self.n * check_positive(lam, "lam") * Kmm
        w, V = eigh(B, check_finite=False)
        keep = w > 1e-12 * max(float(w.max()), 1e-300)
        self._left = Knm @ (V[:, keep] / w[keep])
        self._right = V[:, keep].T

    def __call__(self, Kmx) -> np.ndarray:
        return (self._left @ (self._right @ np.asarray(Kmx, dtype=np.float64))).T

    def dual(self, E) -> np.ndarray:
        """Coefficients ``C`` (``(m, d)``) with ``alpha(x) @ E = K_mx^T C``."""
        return self._right.T @ (self._left.T @ np.asarray(E, dtype=np.float64))


def ridge_cv(X, folds, kernel: str, sigmas, lams, evaluate):
    """Cross-validated losses of kernel-ridge weights over a ``(sigma, lam)`` grid.

    ``folds``: ``(train_idx, val_idx)`` pairs; per fold and ``sigma``, one eigendecomposition
    (:class:`RidgePath`) serves every ``lam``.  ``evaluate(alpha, train_idx, val_idx)`` turns
    the ``(len(val), len(train))`` weights into per-sample validation losses (the caller
    decodes with its loss), or into ``(k, len(val))`` losses of ``k`` decoders of the same
    weights (several loss scales: one eigendecomposition serves them all).  Returns rows
    ``(sigma, lam, fold, loss)``: the mean loss of the fold (a list of ``k`` means in the
    second case).  ``sigma`` is ignored (recorded as given) for the linear kernel.
    """
    rows = []
    for f, (tr, va) in enumerate(folds):
        for sigma in sigmas:
            path = RidgePath(kernel_matrix(kernel, X[tr], X[tr], sigma))
            coords = path.project(kernel_matrix(kernel, X[tr], X[va], sigma))
            for lam in lams:
                err = evaluate(path.weights(coords, lam), tr, va)
                loss = float(np.mean(err)) if np.ndim(err) == 1 else [float(np.mean(e)) for e in err]
                rows.append((float(sigma), float(lam), f, loss))
    return rows
