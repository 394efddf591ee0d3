"""Output spaces: an embedding plus the oracles it has (DESIGN.md, M4N §2.2)."""

import numpy as np

from structpred.errors import StructpredError
from structpred.outputs.base import (
    AffineLoss,
    ExactMaxMin,
    LossAugmented,
    LossSpace,
    MarginalPolytope,
    Marginals,
    MaxMin,
    MaxMinResult,
    MinLossLines,
    OutputSpace,
    StatisticDecoding,
    TopK,
    WeightedDecoding,
    capabilities,
    require,
)
from structpred.outputs.candidates import Candidates, Pick
from structpred.outputs.chain import Chain
from structpred.outputs.histogram import GaussianHistogram, Hellinger
from structpred.outputs.multiclass import Multiclass
from structpred.outputs.permutation import Permutation
from structpred.outputs.ranking import PairwiseRanking
from structpred.outputs.real_line import Cauchy
from structpred.outputs.tree import Tree, TreeArray

#: task-loss names understood by :func:`make_space` (and the estimators' ``loss=``), with aliases
SPACE_NAMES = {"zero_one": ("0-1", "multiclass", "mc"), "ordinal": ("absolute", "ord"),
               "permutation_hamming": (), "sequence_hamming": ()}


def _canonical(name: str) -> str:
    for canon, aliases in SPACE_NAMES.items():
        if name == canon or name in aliases:
            return canon
    raise StructpredError(f"unknown loss {name!r}: use one of {', '.join(SPACE_NAMES)}, "
                          "a (k, k) loss matrix or an OutputSpace")


def _labels_from(y, canon: str) -> int:
    """Number of labels implied by training targets ``y`` for the loss ``canon``."""
    if canon == "sequence_hamming":
        if not isinstance(y, (list, tuple)) or not len(y):
            raise StructpredError("sequence losses take y as a non-empty list of label sequences")
        seqs = [np.asarray(s) for s in y]
        for i, s in enumerate(seqs):
            if s.ndim != 1 or s.size == 0:
                raise StructpredError(f"y[{i}] must be a non-empty 1-d sequence of labels, got shape {s.shape}")
            if s.dtype.kind not in "iu":
                raise StructpredError(f"y[{i}] must hold integer labels 0..k-1, got dtype {s.dtype} "
                                      "(encode tags as integers, e.g. sklearn.preprocessing.LabelEncoder)")
        return _label_count(np.concatenate(seqs))
    yy = np.asarray(y)
    if yy.size == 0:
        raise StructpredError("y is empty")
    if np.iscomplexobj(yy):
        raise StructpredError("Complex data not supported: y must hold integer labels")
    if yy.dtype.kind not in "iuf":
        raise StructpredError(f"Unknown label type: y must hold integer labels 0..k-1, got dtype {yy.dtype} "
                              "(encode other labels with sklearn.preprocessing.LabelEncoder)")
    if not np.all(np.isfinite(yy.astype(float))):
        raise StructpredError("y must hold finite integer labels")
    if canon == "permutation_hamming":
        if yy.ndim != 2:
            raise StructpredError(f"rankings y must be 2-d (n_samples, M), got shape {yy.shape}")
        return yy.shape[1]
    return _label_count(yy)


def _label_count(yy: np.ndarray) -> int:
    """``max(y) + 1``: labels are ``0..k-1``.  A training set may lack some of them (a split
    without its rarest class), but not most: when more than half of ``0..max(y)`` never occur
    (``{0, 5, 9}`` would silently be 10 classes, a single class ``2`` three, one label of 10**6 a
    million), y is not encoded that way, and that is one clear error; so are negative or
    fractional labels."""
    labels = np.unique(yy)
    bad = labels[(labels < 0) | (labels != np.round(labels))]
    if len(bad):
        raise StructpredError(f"Unknown label type: y must hold integer labels 0..k-1, got {bad[0]:g}")
    k = int(labels[-1]) + 1
    if 2 * len(labels) < k:
        missing = np.setdiff1d(np.arange(min(k, 10**6)), labels.astype(np.int64))
        shown = ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")
        raise StructpredError(f"y's labels must be 0..k-1, but {len(missing) if k <= 10**6 else 'most'} of 0..{k - 1} "
                              f"never occur ({shown}): encode y as 0..k-1 (sklearn.preprocessing.LabelEncoder), or "
                              f"pass n_labels={k} if the absent labels are real classes")
    return k


def make_space(loss, n_labels: int | None = None, y=None, **options) -> LossSpace:
    """The output space of a task loss: the one place loss names and their aliases live.

    ``loss`` is a name, a ``(k, k)`` loss matrix (a :class:`Multiclass`) or a space (a
    :class:`LossSpace`, e.g. an :class:`OutputSpace`: returned as is; ``n_labels`` must match).  Names:
    ``"zero_one"`` -> ``Multiclass.zero_one(n)``, ``"ordinal"`` -> ``Multiclass.ordinal(n)``
    (absolute loss over ordered bins), ``"permutation_hamming"`` -> ``Permutation(n)``
    (label ranking, normalised Hamming loss on rank positions), ``"sequence_hamming"`` ->
    ``Chain(n)`` (normalised Hamming loss).  ``n`` is ``n_labels``, else read off the
    training targets ``y`` (``max(y) + 1`` labels, at least 2; the width of 2-d rankings).
    ``options``: more of the named space's constructor arguments (e.g. a chain's
    ``iterations_per_node``).
    """
    if isinstance(loss, LossSpace):
        if n_labels is not None and int(n_labels) != getattr(loss, "n_labels", None):
            raise StructpredError(f"n_labels={n_labels} does not match {loss!r}")
        return loss
    if not isinstance(loss, str):
        sp = Multiclass(loss)
        A = sp.loss_matrix
        if np.any(A < 0) or np.any(np.diag(A) != 0):
            raise StructpredError("a task loss matrix must be nonnegative with a zero diagonal (L(y, y) = 0 <= "
                                  f"L(y, y'); got min {A.min():g}, diagonal max {np.abs(np.diag(A)).max():g}): the "
                                  "surrogates assume it; wrap another matrix in outputs.Multiclass yourself")
        if n_labels is not None and int(n_labels) != sp.k:
            raise StructpredError(f"n_labels={n_labels} does not match the {sp.k}x{sp.k} loss matrix")
        return sp
    canon = _canonical(loss)
    if n_labels is None:
        if y is None:
            raise StructpredError(f"the loss {loss!r} needs n_labels (or training targets y)")
        n_labels = max(_labels_from(y, canon), 2)
    n = int(n_labels)
    if canon == "sequence_hamming":
        return Chain(n, "hamming", **options)
    if options:
        raise StructpredError(f"the loss {loss!r} takes no space options, got {', '.join(sorted(options))}")
    if canon == "permutation_hamming":
        return Permutation(n)
    return Multiclass.zero_one(n) if canon == "zero_one" else Multiclass.ordinal(n)


__all__ = ["AffineLoss", "Candidates", "Cauchy", "Chain", "ExactMaxMin", "GaussianHistogram", "Hellinger", "LossAugmented", "LossSpace", "MarginalPolytope", "Marginals",
           "MaxMin", "MaxMinResult", "MinLossLines", "Multiclass", "OutputSpace", "PairwiseRanking", "Permutation", "Pick", "SPACE_NAMES", "StatisticDecoding", "TopK",
           "Tree", "TreeArray", "WeightedDecoding", "capabilities", "make_space", "require"]
