"""A training problem ``(1/n) sum_i S(Psi_i^T w, y_i) + lam/2 ||w||^2``: its one validation.

Estimators and solvers check their inputs here and nowhere else.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from sklearn.exceptions import DataConversionWarning

from structpred.errors import StructpredError, check_positive
from structpred.features.joint import joint_map
from structpred.outputs.batch import is_ragged
from structpred.solvers._compiled_passes import CompiledPasses
from structpred.solvers._generic_kernels import GenericKernels


@dataclass
class Problem:
    """Output space, joint feature map of the training inputs, checked labels, ``lam``."""

    space: object
    fmap: object
    y: object
    lam: float

    @property
    def n(self) -> int:
        return self.fmap.n

    @cached_property
    def compiled(self):
        """The step rules' compiled passes on the space's compiled oracles for this map and
        labels (``space.compiled_oracles``), or ``None``."""
        oracles = self.space.compiled_oracles(self.fmap, self.y)
        return None if oracles is None else CompiledPasses(oracles, self.lam)

    def pass_kernels(self, surrogate=None):
        """Per-pass loops of the dual solvers: the compiled ones where the space's oracles serve
        them for this map (and for the max-min ``surrogate``'s oracle, GBCFW's), else the generic
        loop over its public oracles; both for this problem's ``lam``, so the rules never relay it."""
        return GenericKernels(self.space, self.fmap, self.y, self.lam, self.compiled, surrogate)

    def primal_kernels(self, surrogate):
        """The compiled passes when the space's oracles compile the surrogate's oracle
        (``surrogate.pass_oracle()``) for this map: the primal rules then run whole passes in
        them; ``None``: the rules step through the surrogate."""
        oracle = surrogate.pass_oracle()
        kern = self.compiled
        return kern if kern is not None and oracle is not None and oracle[0] in kern.oracles else None

    def regulariser(self, W) -> float:
        return 0.5 * self.lam * float(np.sum(W * W))

    def evaluate(self, surrogate, W, predict: bool = True):
        """``(values (n,), predictions)``: the surrogate's value per sample at ``W`` (its
        certified upper bound for the max-min surrogate) and, if ``predict``, its outputs for the
        problem's inputs (else ``None``); compiled with the primal loops of its oracle when the
        space has them."""
        kern = self.primal_kernels(surrogate)
        if kern is not None:
            val, pred = kern.evaluate(W, surrogate.pass_oracle())
            return val, pred if predict else None
        V = self.fmap.scores(W)
        val, _ = surrogate.value_grad(V, self.y)
        return val, surrogate.predict(V) if predict else None

    def primal(self, surrogate, W) -> float:
        """``(1/n) sum_i S(Psi_i^T W, y_i) + lam/2 ||W||^2`` with the surrogate's value (its
        certified upper bound for the max-min surrogate)."""
        val, _ = self.evaluate(surrogate, W, predict=False)
        return float(np.mean(val)) + self.regulariser(W)

    def init_dual(self):
        """``mu_i = phi(y_i)`` so that ``W(mu) = 0`` (an ``(n, k)`` array, or a list of vectors
        for ragged spaces)."""
        phi = self.space.embed(self.y)
        if is_ragged(phi):
            return [np.array(p, dtype=np.float64, subok=True) for p in phi]  # TreeArrays keep their tree
        return np.ascontiguousarray(phi.astype(np.float64))


def check_labels_for(space, y, n: int, seq_lengths=None):
    """Labels ``y`` of ``n`` samples checked against ``space`` (and against the input
    sequences' lengths for ragged spaces)."""
    if space.ragged or is_ragged(y):
        if not is_ragged(y):
            raise StructpredError(f"{space!r} takes y as a list of label sequences")
        if len(y) != n:
            raise StructpredError(f"y has {len(y)} label sequences but X has {n} samples")
        y = space.check_labels(list(y))
        if seq_lengths is not None and any(len(s) != t for s, t in zip(y, seq_lengths)):
            raise StructpredError("a label sequence and its input sequence have different lengths")
        return y
    y = np.asarray(y)
    shape = tuple(space.label_shape)
    if not shape and y.ndim == 2 and y.shape[1] == 1:   # a column vector, as scikit-learn: warn and ravel
        warnings.warn("A column-vector y was passed when a 1d array was expected: it is ravelled "
                      "(y.ravel())", DataConversionWarning, stacklevel=3)
        y = y.ravel()
    if y.ndim != 1 + len(shape) or y.shape[0] != n:
        want = f"1-d with {n} entries" if not shape else f"of shape ({n}, {', '.join(map(str, shape))})"
        raise StructpredError(f"y must be {want}, got shape {y.shape}")
    return np.ascontiguousarray(space.check_labels(y))


def check_lam(lam, zero: bool = False) -> float:
    """``lam`` as a positive float (``zero``: also 0, for rules on the primal)."""
    if zero and not isinstance(lam, bool) and isinstance(lam, (int, float, np.floating, np.integer)) and lam == 0:
        return 0.0
    return check_positive(lam, "lam")


def check_validation(problem: Problem, X_val, y_val):
    """``(joint map, checked labels)`` of a validation set shaped like the training problem's
    (``(None, None)`` when there is none)."""
    if (X_val is None) != (y_val is None):
        raise StructpredError("give both X_val and y_val or neither")
    if X_val is None:
        return None, None
    val_map = joint_map(problem.space, X_val, like=problem.fmap)
    seq = getattr(val_map, "seq", None)
    return val_map, check_labels_for(problem.space, y_val, val_map.n, None if seq is None else seq.lengths)


def primal_objective(surrogate, X, y, W, lam) -> float:
    """The regularised objective of ``surrogate`` on ``(X, y)`` at weights ``W``."""
    return check_problem(surrogate.space, X, y, lam).primal(surrogate, W)


def check_problem(space, X, y, lam, like=None, zero_lam: bool = False) -> Problem:
    """Validate a training problem (inputs, labels, ``lam``; ``zero_lam``: ``lam = 0`` allowed,
    for the rules that minimise the primal without its strong convexity) and build its joint
    feature map."""
    fmap = joint_map(space, X, like=like)
    seq = getattr(fmap, "seq", None)
    y = check_labels_for(space, y, fmap.n, None if seq is None else seq.lengths)
    return Problem(space, fmap, y, check_lam(lam, zero_lam))
