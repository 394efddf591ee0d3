"""Kernels on inputs for the kernel-ridge weights of QS (Ciliberto et al. 2016, eq. 3-4).

``linear``:   ``k(a, b) = <a, b>``
``gaussian``: ``k(a, b) = exp(-||a - b||^2 / (2 sigma^2))``
"""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError, check_positive

KERNELS = ("linear", "gaussian")


def check_kernel(kernel: str) -> str:
    if kernel not in KERNELS:
        raise StructpredError(f"unknown kernel {kernel!r}: use one of {', '.join(KERNELS)}")
    return kernel


def squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``||a_i - b_j||^2`` as an ``(len(A), len(B))`` array (clipped at 0 against round-off)."""
    D = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * (A @ B.T)
    np.maximum(D, 0.0, out=D)
    return D


def kernel_matrix(kernel: str, A: np.ndarray, B: np.ndarray, sigma: float = 1.0) -> np.ndarray:
    """``K[i, j] = k(A_i, B_j)`` for the named kernel (``sigma``: the Gaussian bandwidth)."""
    if check_kernel(kernel) == "linear":
        return A @ B.T
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
