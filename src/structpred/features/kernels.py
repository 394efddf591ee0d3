"""Kernels on inputs for the kernel-ridge weights of QS (Ciliberto et al. 2016, eq. 3-4).

``linear``:   ``k(a, b) = <a, b>``
``gaussian``: ``k(a, b) = exp(-||a - b||^2 / (2 sigma^2))``
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from structpred.errors import StructpredError, check_positive

KERNELS = ("linear", "gaussian")


def check_kernel(kernel: str) -> str:
    if kernel not in KERNELS:
        raise StructpredError(f"unknown kernel {kernel!r}: use one of {', '.join(KERNELS)}")
    return kernel


def _gram(A, B) -> np.ndarray:
    """``A B^T`` as a dense array (``A``, ``B`` dense, or both scipy sparse rows)."""
    G = A @ B.T
    return G.toarray() if sparse.issparse(G) else G


def squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``||a_i - b_j||^2`` as an ``(len(A), len(B))`` array (clipped at 0 against round-off); ``A``
    and ``B`` dense, or both scipy sparse rows (hashed features)."""
    norms = [np.asarray(M.multiply(M).sum(1)).ravel() if sparse.issparse(M) else (M * M).sum(1) for M in (A, B)]
    D = norms[0][:, None] + norms[1][None, :] - 2.0 * _gram(A, B)
    np.maximum(D, 0.0, out=D)
    return D


def kernel_matrix(kernel: str, A: np.ndarray, B: np.ndarray, sigma: float = 1.0) -> np.ndarray:
    """``K[i, j] = k(A_i, B_j)`` for the named kernel (``sigma``: the Gaussian bandwidth); rows dense,
    or scipy sparse (the hashed window features of :mod:`structpred.estimators._qs_sequences`)."""
    if check_kernel(kernel) == "linear":
        return _gram(A, B)
    s = check_positive(sigma, "sigma")
    D = squared_distances(A, B)
    D *= -1.0 / (2.0 * s * s)
    return np.exp(D, out=D)


def median_distance(X: np.ndarray, max_rows: int = 1000) -> float:
    """Median of the pairwise distances between (at most ``max_rows`` first) rows: the usual
    scale of a Gaussian bandwidth grid."""
    Z = X[:max_rows]
    D = np.sqrt(squared_distances(Z, Z)[np.triu_indices(len(Z), 1)])
    return float(np.median(D)) if D.size else 1.0
