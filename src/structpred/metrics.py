"""Task metrics beyond the losses of the output spaces: the F1 scores of sequence tagging.

``token_f1``: the Casimir reference's metric, F1 of the flattened token tags over every tag but
the outside one, per tag and averaged with the tags' true counts as weights.
``entity_f1``: the CoNLL shared task's chunk-level F1 (``conlleval``: a chunk is a maximal run of
one type, started by ``B-`` or by an ``I-`` after another type or ``O``; IOB1 and IOB2 alike),
computed by ``seqeval`` in its default, conlleval-compatible mode.
"""

from __future__ import annotations

import numpy as np
from seqeval.metrics import f1_score as chunk_f1
from sklearn.metrics import f1_score

from structpred.errors import StructpredError


def _flat(sequences, what: str) -> np.ndarray:
    if len(sequences) == 0:
        raise StructpredError(f"{what} holds no sequence")
    return np.concatenate([np.asarray(s).ravel() for s in sequences])


def token_f1(y_true, y_pred, labels) -> float:
    """Token-level F1 of tag ids, over ``labels`` (all tags but the outside one), weighted by support."""
    t, p = _flat(y_true, "y_true"), _flat(y_pred, "y_pred")
    if t.shape != p.shape:
        raise StructpredError(f"y_true has {t.size} tokens but y_pred has {p.size}")
    return float(f1_score(t, p, labels=list(labels), average="weighted", zero_division=0))


def _tag_names(sequences, names) -> list:
    """``names[id]`` of every tag id, one list per sequence (one lookup for all tokens)."""
    if len(sequences) == 0:
        return []
    flat = names[_flat(sequences, "a tag sequence list")].tolist()
    ends = np.cumsum([len(s) for s in sequences]).tolist()
    return [flat[a:b] for a, b in zip([0, *ends[:-1]], ends)]


def entity_f1(y_true, y_pred, tag_names) -> float:
    """CoNLL chunk-level F1 of tag-id sequences (``tag_names[id]`` gives ``B-X`` / ``I-X`` / ``O``)."""
    names = np.asarray(tag_names, dtype=object)
    if len(y_true) != len(y_pred):
        raise StructpredError(f"y_true has {len(y_true)} sequences but y_pred has {len(y_pred)}")
    true, pred = _tag_names(y_true, names), _tag_names(y_pred, names)
    if any(len(a) != len(b) for a, b in zip(true, pred)):
        raise StructpredError("a predicted sequence differs in length from its true one")
    return float(chunk_f1(true, pred))
