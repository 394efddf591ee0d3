"""Output spaces as small capabilities: a space implements only the oracles it has.

Every space is an :class:`OutputSpace` (embedding, task loss, labels, MAP decoding) plus
the capabilities it can offer, each an abstract mixin class:

==========================  =====================================================================
:class:`LossAugmented`      ``loss_augmented(v, y) = argmax_y' L(y, y') + <phi(y'), v>`` (M3N, SGD)
:class:`TopK`               ``top_k(v, y, K)``: the K best (loss-augmented) outputs (Casimir §4)
:class:`Marginals`          ``marginals``, ``log_partition``, ``entropy`` (CRF, entropy smoothing)
:class:`MaxMin`             ``max_min(v, warm, n_iter)``: SP-MP for M4N eq. 14 with warm state
:class:`ExactMaxMin`        ``max_min_exact(v, warm, tol, max_iter)``: the same game solved exactly
                            (AGM §3.2: Lagrangian dual, per-node closed forms)
:class:`AffineLoss`         ``L(y, y') = phi(y)^T A phi(y') + a``: ``linear_loss``, ``min_loss``,
                            ``bayes_decode`` (M4N Assumption 2.1); gives loss-trick decoding
:class:`WeightedDecoding`   ``weighted_decode(alpha, Y) = argmin_y sum_i alpha_i L(Y_i, y)`` (QS eq. 2)
:class:`MinLossLines`       the M4N dual's min-loss term on a segment as lower envelopes of lines
:class:`MarginalPolytope`   ``conv{phi(y)} = {m >= 0 : A m = b}`` and a map into it (the dual QP)
==========================  =====================================================================

The base :class:`LossSpace` is only labels and a loss: enough for the loss trick (QS), whose
spaces (histograms, the real line, rankings scored against ratings) have no finite linear
embedding to score.  :class:`OutputSpace` adds the embedding ``phi`` and MAP decoding that
the linear methods (M3N, CRF, M4N, Casimir) score.

A method states what it needs with :func:`require`, which fails with one clear line
naming the method, the space and the missing capability (and the space's reason, when
it declares one in ``unsupported``).  A space instance may also list a capability of its class
in ``unsupported`` when its parameters rule it out (a chain whose node loss the exact game does
not cover): it then counts as missing.

The convention throughout the library is that the *first* argument of the loss is the
observed (true) output and the *second* the prediction, so ``A[y, y']`` is the loss of
predicting ``y'`` when the truth is ``y``.  Scores ``v`` are arrays whose last axis has
length ``embedding_dim``; oracles accept one score ``(k,)`` or a batch ``(n, k)`` (a
ragged list for spaces with ``ragged = True``, see :mod:`structpred.outputs.batch`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from structpred.errors import StructpredError
from structpred.outputs.batch import rowdot


def as_int_labels(y, what: str) -> np.ndarray:
    """``y`` as int64, refusing NaN, non-integer floats and non-numeric dtypes (``what`` names them)."""
    y = np.asarray(y)
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)) or not np.all(y == np.round(y)):
            raise StructpredError(f"{what} must be integers (got non-integer or NaN values)")
    elif y.dtype.kind not in "iu":
        raise StructpredError(f"Unknown label type: {what} must be integers, got dtype {y.dtype}")
    return y.astype(np.int64)


def as_real(y, what: str) -> np.ndarray:
    """``y`` as a finite float64 array (one clear error for non-numeric, complex, NaN or inf)."""
    if np.iscomplexobj(y):
        raise StructpredError(f"{what} must be real numbers, got complex values")
    try:
        a = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise StructpredError(f"{what} must be real numbers, got {type(y).__name__}") from None
    if not np.all(np.isfinite(a)):
        raise StructpredError(f"{what} contain NaN or infinite values")
    return a


def broadcast_pair(a: np.ndarray, b: np.ndarray, what: str) -> None:
    """One clear error when a batch of truths and a batch of predictions do not broadcast."""
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise StructpredError(f"{what} of shapes {a.shape} and {b.shape} do not match "
                              "(give one output, or batches of the same length)") from None


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


class LossSpace(ABC):
    """The part every space has: label checks and the task loss ``L(y, y')`` (truth first).

    Class attributes a space may set:

    Attributes
    ----------
    name : str
        short name for messages.
    ragged : bool
        batches are lists of per-sample vectors (embedding size varies).
    joint_map : str
        name of its default joint feature map (:data:`structpred.features.joint.JOINT_MAPS`).
    unsupported : dict
        ``{capability: reason}`` printed when a method needs one it lacks.
    """

    name: str = "output-space"
    ragged: bool = False
    joint_map: str = "linear"
    unsupported: dict = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    @property
    def label_shape(self) -> tuple:
        """Shape of one output (``()`` for a class index, ``(M,)`` for a ranking, ``(None,)``
        for a sequence); a dense batch of ``n`` outputs has shape ``(n, *label_shape)``."""
        return ()

    @abstractmethod
    def check_labels(self, y): ...

    @abstractmethod
    def loss(self, y, y2) -> np.ndarray: ...


class OutputSpace(LossSpace):
    """A space with a finite linear embedding ``phi`` and MAP decoding ``argmax_y <phi(y), v>``:
    what the linear methods score (M4N §2.2)."""

    @property
    def n_labels(self) -> int:
        """Number of labels (classes, or items being ranked)."""
        return self.embedding_dim

    @property
    @abstractmethod
    def embedding_dim(self) -> int: ...

    @abstractmethod
    def embed(self, y) -> np.ndarray: ...

    @abstractmethod
    def decode(self, v) -> np.ndarray: ...

    def mean_embedding(self, Y, w) -> np.ndarray:
        """``sum_k w_k phi(Y_k)`` over the outputs ``Y`` of one sample (e.g. the top-K outputs,
        as :meth:`TopK.top_k` returns them); spaces may override it with a compiled loop."""
        E = self.embed(list(Y) if self.ragged else Y)
        return np.tensordot(np.asarray(w, dtype=np.float64), np.asarray(E, dtype=np.float64), axes=1)

    def compiled_oracles(self, fmap, y):
        """This space's compiled oracles (:mod:`structpred.outputs.compiled`) on the joint map
        ``fmap`` and labels ``y``: an object with ``bundle(oracle)`` (the arrays the oracles are
        implemented for), ``passes`` (the solvers' compiled passes they serve) and ``oracles``
        (the surrogate oracles of the compiled primal passes); ``None`` to use the solvers'
        generic loops over the public oracles."""
        return None


class LossAugmented(ABC):
    """``argmax_y' L(y, y') + <phi(y'), v>`` (the structured hinge's oracle)."""

    @abstractmethod
    def loss_augmented(self, v, y) -> np.ndarray: ...


class TopK(ABC):
    """``top_k(v, y, K)``: the ``K`` outputs of largest ``<phi(y'), v> + L(y, y')`` (``y=None``:
    without the loss), in decreasing order, as ``(outputs, scores)`` per sample (Casimir §4)."""

    @abstractmethod
    def top_k(self, v, y, K: int): ...


class Marginals(ABC):
    """The exp oracle: ``p_v(y) ∝ exp <phi(y), v>``, its mean ``E phi``, ``log Z`` and the
    entropy of mean parameters (the CRF's conjugate)."""

    @abstractmethod
    def marginals(self, v): ...

    @abstractmethod
    def log_partition(self, v): ...

    @abstractmethod
    def entropy(self, mu) -> np.ndarray: ...

    @abstractmethod
    def entropy_coefficients(self, mu) -> np.ndarray:
        """``c`` with ``entropy(mu) = -sum_j c_j mu_j log mu_j`` on one marginal vector."""


def as_weights(alpha, n_train: int) -> tuple[np.ndarray, bool]:
    """Loss-trick weights as a finite ``(n, n_train)`` float array, and whether one row was given."""
    a = np.asarray(alpha, dtype=np.float64)
    single = a.ndim == 1
    a = np.atleast_2d(a)
    if a.ndim != 2 or a.shape[1] != n_train:
        raise StructpredError(f"weights must have shape ({n_train},) or (n, {n_train}) for {n_train} "
                              f"training outputs, got {np.shape(alpha)}")
    if not np.all(np.isfinite(a)):
        raise StructpredError("weights contain NaN or infinite values")
    return a, single


class WeightedDecoding(ABC):
    """Loss-trick decoding (QS Alg. 1, eq. 2): ``argmin_y sum_i alpha_i L(Y_i, y)`` for weights
    ``alpha`` of any sign over training outputs ``Y`` (the truths, first argument of the loss).

    ``weighted_decode(alpha, Y)``: ``alpha`` is ``(n_train,)`` (one prediction) or
    ``(n, n_train)`` (``n`` predictions, decoded in one call so that work on ``Y`` is shared).
    """

    @abstractmethod
    def weighted_decode(self, alpha, Y): ...


class StatisticDecoding(WeightedDecoding):
    """Loss-trick decoding through a finite statistic: ``sum_i alpha_i L(Y_i, y)`` depends on
    the weights only through ``m = sum_i alpha_i psi(Y_i)`` (QS Asm. 1 with a finite-dimensional
    embedding), so the prediction is ``decode_statistic(alpha @ statistic(Y))`` and QS can keep
    the kernel ridge coefficients ``(K + n lam I)^{-1} psi(Y)`` instead of every weight vector.

    ``statistic(Y)``: the ``(n_train, d)`` array of ``psi(Y_i)``; ``decode_statistic(m)``: the
    argmin for each row of ``m`` ``(n, d)``.
    """

    @abstractmethod
    def statistic(self, Y) -> np.ndarray: ...

    @abstractmethod
    def decode_statistic(self, m): ...

    def weighted_decode(self, alpha, Y):
        E = self.statistic(Y)
        a, single = as_weights(alpha, E.shape[0])
        out = self.decode_statistic(a @ E)
        return out[0] if single else out


class AffineLoss(StatisticDecoding):
    """``L(y, y') = phi(y)^T A phi(y') + loss_offset`` (M4N Assumption 2.1).

    An affine loss has loss-trick decoding for free: ``sum_i alpha_i L(Y_i, y') =
    phi(y')^T A^T (sum_i alpha_i phi(Y_i)) + const``, so the QS prediction is
    ``bayes_decode(sum_i alpha_i phi(Y_i))`` (QS §3, Asm. 1 with a finite embedding).
    """

    loss_offset: float = 0.0

    def linear_loss(self, y, mu) -> np.ndarray:
        """``phi(y_i)^T A mu_i = <loss_scores(y_i), mu_i>`` row-wise (without ``loss_offset``)."""
        return np.atleast_1d(rowdot(mu, self.loss_scores(y)))

    @abstractmethod
    def loss_scores(self, y):
        """``A^T phi(y_i)`` row-wise: the score ``s`` with ``<s, phi(y')> = L(y_i, y') - loss_offset``
        (adding it to ``v`` turns an oracle into its loss-augmented version)."""

    @abstractmethod
    def min_loss(self, mu) -> np.ndarray:
        """``min_y' phi(y')^T A mu_i`` row-wise (without ``loss_offset``; M4N (D))."""

    @abstractmethod
    def bayes_decode(self, m) -> np.ndarray:
        """``argmin_y' sum_y m(y) L(y, y') = argmin_y' phi(y')^T A^T m`` for mean parameters ``m``
        (any real vector: weights of the loss trick may be negative)."""

    def statistic(self, Y) -> np.ndarray:
        """``phi(Y_i)`` stacked ``(n_train, k)``: the loss trick's statistic for an affine loss.
        On a ragged space the training outputs must share one size (a loss between chains of
        different lengths is not defined)."""
        E = self.embed(list(Y) if self.ragged else Y)
        if self.ragged:
            sizes = sorted({len(e) for e in E})
            if len(sizes) > 1:
                raise StructpredError(f"{self!r}: loss-trick decoding needs training outputs of one size, "
                                      f"got embeddings of sizes {sizes[0]}..{sizes[-1]}")
        return np.atleast_2d(np.asarray(E, dtype=np.float64))

    def decode_statistic(self, m):
        """``bayes_decode`` of each row of ``m = sum_i alpha_i phi(Y_i)``."""
        return self.bayes_decode(list(m) if self.ragged else m)


class MaxMin(ABC):
    """SP-MP answer of ``max_mu min_nu nu^T A mu + v^T mu`` (M4N eq. 14) with a warm state."""

    @abstractmethod
    def max_min(self, v, warm=None, n_iter: int = 20) -> MaxMinResult: ...

    def init_maxmin_state(self, n: int) -> tuple:
        """Start state of :meth:`max_min` for ``n`` scores: a pair of ``(n, w)`` arrays, one
        per player (default: log of the uniform distribution on the simplex)."""
        k = self.embedding_dim
        s = np.full((int(n), k), -np.log(k))
        return s, s.copy()

    def mix_warm_state(self, lmu, lnu, eps: float) -> None:
        """In place: mix one sample's warm state with the start state (weight ``eps``),
        keeping warm starts away from the boundary (see :class:`structpred.surrogates.MaxMinMargin`)."""
        k = self.embedding_dim
        for s in (lmu, lnu):
            s[:k] = np.logaddexp(s[:k] + np.log1p(-eps), np.log(eps / k))


class ExactMaxMin(ABC):
    """The max-min game ``max_mu min_nu nu^T A mu + v^T mu`` solved exactly (AGM §3.2, eq. 6-9):
    ``max_min_exact(v, warm, tol, max_iter)`` returns a :class:`MaxMinResult` whose ``mu`` is a
    feasible adversary, ``value`` its exact value and ``upper`` the Lagrangian dual at the final
    multipliers, within ``tol`` of each other at convergence; ``state`` the multipliers (warm start)."""

    @abstractmethod
    def max_min_exact(self, v, warm=None, tol: float = 1e-9, max_iter: int = 1000) -> MaxMinResult: ...


class MinLossLines(ABC):
    """The M4N dual's concave term along a segment as a sum of lower envelopes of lines:
    ``min_loss(mu + g d) = sum_b min_{l in block b} (p_l + g q_l)`` for every ``g``, with
    ``p = (A mu)`` and ``q = (A d)`` blocked by ``starts`` (block ``b``: ``starts[b]:starts[b+1]``);
    a loss whose adversary decomposes over the output's parts (one block per part).  GBCFW's
    exact line search (:func:`structpred.solvers.line_search.envelope_step`) maximises it."""

    @abstractmethod
    def min_loss_lines(self, mu, d) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(p, q, starts)`` for one dual block ``mu`` and one direction ``d`` (float64, int64)."""


class MarginalPolytope(ABC):
    """The marginal polytope of one output, ``conv{phi(y)} = {m >= 0 : A m = b}`` with a sparse
    ``A`` (an exact description: the simplex, a chain's locally consistent marginals), and a
    map of nearly feasible points (an interior point solver's answer) into it.  The dual
    quadratic program (:class:`structpred.solvers.DualQP`) is built from it."""

    @abstractmethod
    def marginal_polytope(self, m) -> tuple:
        """``(A, b)``: a ``scipy.sparse`` matrix and a vector with ``conv{phi(y)} = {m >= 0 : A m = b}``
        for outputs of the layout (size) of the vector ``m``."""

    @abstractmethod
    def into_polytope(self, m) -> np.ndarray:
        """A point of the polytope (exactly, up to rounding) near ``m``, which may violate its
        constraints slightly; ``m`` itself when it is feasible."""


#: capability name -> class, for messages and :func:`capabilities`
CAPABILITIES = {"loss-augmented decoding": LossAugmented, "top-K": TopK, "marginals": Marginals,
                "max-min": MaxMin, "exact max-min game": ExactMaxMin, "affine loss": AffineLoss,
                "min-loss lines": MinLossLines, "marginal polytope": MarginalPolytope,
                "loss-trick decoding": WeightedDecoding}


def has(space, capability) -> bool:
    """``space`` implements ``capability`` and its parameters do not rule it out (``unsupported``)."""
    return isinstance(space, capability) and capability not in getattr(space, "unsupported", {})


def capabilities(space) -> list[str]:
    """Names of the capabilities ``space`` implements."""
    return [name for name, cap in CAPABILITIES.items() if has(space, cap)]


def require(space, capability, who: str) -> None:
    """Raise one clear :class:`StructpredError` unless ``space`` has ``capability``."""
    if not isinstance(space, LossSpace):
        raise StructpredError(f"{who} needs an output space (structpred.outputs.OutputSpace), got {space!r}")
    if has(space, capability):
        return
    name = next(n for n, c in CAPABILITIES.items() if c is capability)
    reason = getattr(space, "unsupported", {}).get(capability)
    raise StructpredError(f"{who} needs {name}, which {space!r} does not provide"
                          + (f": {reason}" if reason else f" (it has: {', '.join(capabilities(space)) or 'none'})"))
