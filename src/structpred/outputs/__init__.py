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
        return int(max(int(np.max(s)) for s in y)) + 1
    yy = np.asarray(y)
    if yy.size == 0:
        raise StructpredError("y is empty")
    if np.iscomplexobj(yy):
        raise StructpredError("Complex data not supported: y must hold integer labels")
    if yy.dtype.kind not in "iuf":
        raise StructpredError(f"Unknown label type: y must hold integer labels, got dtype {yy.dtype}")
    if not np.all(np.isfinite(yy.astype(float))):
        raise StructpredError("y must hold finite integer labels")
    if canon == "permutation_hamming":
        if yy.ndim != 2:
            raise StructpredError(f"rankings y must be 2-d (n_samples, M), got shape {yy.shape}")
        return yy.shape[1]
    return int(np.max(yy)) + 1


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
