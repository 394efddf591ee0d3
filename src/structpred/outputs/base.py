"""Abstract output space: the oracle interface every solver and surrogate relies on.

A space fixes an embedding ``phi(y) in R^k`` (``embedding_dim``) and an affine loss
decomposition ``L(y, y') = phi(y)^T A phi(y') + a`` (M4N §2.2, Assumption 2.1).  The
convention throughout the library is that the *first* argument of the loss is the
observed (true) output and the *second* the prediction, so ``A[y, y']`` is the loss of
predicting ``y'`` when the truth is ``y``.

Scores ``v`` are arrays whose last axis has length ``embedding_dim``; oracles accept a
single score ``(k,)`` or a batch ``(n, k)`` and are vectorised over the batch.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from structpred.errors import StructpredError


def as_int_labels(y, what: str) -> np.ndarray:
    """``y`` as int64, refusing NaN, non-integer floats and non-numeric dtypes (``what`` names them)."""
    y = np.asarray(y)
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)) or not np.all(y == np.round(y)):
            raise StructpredError(f"{what} must be integers (got non-integer or NaN values)")
    elif y.dtype.kind not in "iu":
        raise StructpredError(f"{what} must be integers, got dtype {y.dtype}")
    return y.astype(np.int64)


def rowdot(V, Phi) -> np.ndarray:
    """``<v_i, phi_i>`` per sample, for ``(n, k)`` arrays or lists of vectors (chains)."""
    if isinstance(V, list):
        return np.array([float(a @ b) for a, b in zip(V, Phi)])
    return np.einsum("ij,ij->i", np.atleast_2d(V), np.atleast_2d(Phi))


def rowsub(A, B):
    """``a_i - b_i`` per sample, for arrays or lists of vectors."""
    if isinstance(A, list):
        return [a - b for a, b in zip(A, B)]
    return np.atleast_2d(A) - np.atleast_2d(B)


@dataclass
class MaxMinResult:
    """Answer of the max-min oracle ``max_mu min_nu nu^T A mu + v^T mu`` (M4N eq. 14).

    Attributes
    ----------
    mu, nu : averaged SP-MP iterates of the max (prediction) and min (adversary) players.
    gap : exact duality gap of the averaged pair, ``upper - lower`` (>= 0).
    value : ``lower = min_nu F(nu, mu)``, the value guaranteed by ``mu`` (lower bound on
        the max-min value).  ``F`` is bilinear: the loss constant ``a`` (the space's
        ``loss_offset``) is not included.
    upper : ``max_mu F(nu_bar, mu)``, an upper bound on the max-min value.
    state : opaque warm-start state (log-domain last iterates) to pass back as ``warm``.
    """

    mu: np.ndarray
    nu: np.ndarray
    gap: np.ndarray
    value: np.ndarray
    upper: np.ndarray
    state: tuple


class OutputSpace(ABC):
    """Oracle interface of a structured output space (DESIGN.md, table "Output spaces").

    Subclasses implement:

    ``embedding_dim``            dimension ``k`` of ``phi(y)`` and of a score ``v``.
    ``embed(y)``                 ``phi(y)``; batch of outputs -> ``(n, k)``.
    ``loss(y, y2)``              task loss, vectorised (broadcasting) over outputs.
    ``decode(v)``                ``argmax_y <phi(y), v>`` (MAP).
    ``loss_augmented(v, y)``     ``argmax_y' L(y, y') + <phi(y'), v>``.
    ``marginals(v)``             ``E_{p_v} phi(y)`` for ``p_v(y) ∝ exp <phi(y), v>``.
    ``log_partition(v)``         ``log sum_y exp <phi(y), v>``.
    ``bayes_decode(m)``          ``argmin_y' sum_y m(y) L(y, y')`` for marginals ``m``.
    ``max_min(v, warm, n_iter)`` SP-MP answer of M4N eq. 14 as a :class:`MaxMinResult`.

    Solvers additionally use numba kernels that a space exposes through
    ``kernel_data()`` (a tuple of arrays passed to the jitted kernels); see
    :mod:`structpred.solvers` for the registry of per-space pass kernels.
    """

    #: short name used in error messages and registries
    name: str = "output-space"
    #: the constant ``a`` of the affine loss ``L(y, y') = phi(y)^T A phi(y') + a``
    loss_offset: float = 0.0
    #: whether the exp oracle (``marginals`` / ``log_partition``) is tractable
    supports_marginals: bool = True

    @property
    def label_shape(self) -> tuple:
        """Shape of one output (``()`` for a class index, ``(M,)`` for a ranking); a batch
        of ``n`` outputs has shape ``(n, *label_shape)``."""
        return ()

    @property
    def n_labels(self) -> int:
        """Number of labels (classes, or items being ranked)."""
        return self.embedding_dim

    def require_marginals(self) -> None:
        """Raise a :class:`StructpredError` when the exp oracle is intractable (e.g. CRF on
        permutations); no-op otherwise."""

    def init_maxmin_state(self, n: int) -> tuple:
        """Start state of :meth:`max_min` for ``n`` scores: a pair of ``(n, w)`` arrays, one
        per player (default: log of the uniform distribution on the simplex)."""
        k = self.embedding_dim
        s = np.full((int(n), k), -np.log(k))
        return s, s.copy()

    def mix_warm_state(self, lmu, lnu, eps: float) -> None:
        """In place: mix one sample's warm state with the start state (weight ``eps``),
        keeping warm starts away from the boundary (see :func:`structpred.solvers.gbcfw`)."""
        k = self.embedding_dim
        for s in (lmu, lnu):
            s[:k] = np.logaddexp(s[:k] + np.log1p(-eps), np.log(eps / k))

    @property
    @abstractmethod
    def embedding_dim(self) -> int: ...

    @abstractmethod
    def embed(self, y) -> np.ndarray: ...

    @abstractmethod
    def loss(self, y, y2) -> np.ndarray: ...

    @abstractmethod
    def decode(self, v) -> np.ndarray: ...

    @abstractmethod
    def loss_augmented(self, v, y) -> np.ndarray: ...

    @abstractmethod
    def marginals(self, v) -> np.ndarray: ...

    @abstractmethod
    def log_partition(self, v) -> np.ndarray: ...

    @abstractmethod
    def bayes_decode(self, m) -> np.ndarray: ...

    @abstractmethod
    def max_min(self, v, warm=None, n_iter: int = 20) -> MaxMinResult: ...

    def linear_loss(self, y, mu) -> np.ndarray:
        """``phi(y_i)^T A mu_i`` row-wise (linear dual term of M3N, without ``loss_offset``)."""
        raise NotImplementedError

    def min_loss(self, mu) -> np.ndarray:
        """``min_y' phi(y')^T A mu_i`` row-wise (concave dual term of M4N, M4N (D), without
        ``loss_offset``)."""
        raise NotImplementedError

    def kernel_data(self) -> tuple:
        """Arrays describing the space to its numba kernels (space-specific layout)."""
        raise NotImplementedError
