"""Output spaces: an embedding plus a few oracles (DESIGN.md, M4N §2.2)."""

from structpred.errors import StructpredError
from structpred.outputs.base import MaxMinResult, OutputSpace
from structpred.outputs.chain import Chain
from structpred.outputs.multiclass import Multiclass
from structpred.outputs.permutation import Permutation

#: task-loss names understood by :func:`make_space` (and the estimators' ``loss=``)
SPACE_NAMES = ("zero_one", "ordinal", "permutation_hamming", "sequence_hamming")


def make_space(loss_name: str, n_labels: int) -> OutputSpace:
    """Output space of a named task loss over ``n_labels`` labels.

    ``"zero_one"`` -> ``Multiclass.zero_one(n_labels)`` (multi-class),
    ``"ordinal"`` -> ``Multiclass.ordinal(n_labels)`` (absolute loss over ordered bins),
    ``"permutation_hamming"`` -> ``Permutation(n_labels)`` (label ranking, normalised
    Hamming loss on rank positions),
    ``"sequence_hamming"`` -> ``Chain(n_labels)`` (sequences, normalised Hamming loss).
    """
    if loss_name == "sequence_hamming":
        return Chain(n_labels, "hamming")
    if loss_name == "permutation_hamming":
        return Permutation(n_labels)
    if loss_name in ("zero_one", "ordinal"):
        return Multiclass.from_name(loss_name, n_labels)
    raise StructpredError(f"unknown loss {loss_name!r}: use one of {', '.join(SPACE_NAMES)}")


__all__ = ["Chain", "MaxMinResult", "Multiclass", "OutputSpace", "Permutation", "SPACE_NAMES", "make_space"]
