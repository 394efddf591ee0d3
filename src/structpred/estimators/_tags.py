"""scikit-learn's tags of a structured estimator, from its task loss."""

from __future__ import annotations

from sklearn.utils import ClassifierTags

from structpred.outputs import SPACE_NAMES, Multiclass


def classifier_tags(tags, loss):
    """scikit-learn's tags of a structured estimator: y required; a classifier (so that
    ``is_classifier`` holds, cross-validation stratifies, and scikit-learn's classifier checks
    run) when the task loss is on single labels (``zero_one``, ``ordinal`` or an alias, a loss
    matrix, a :class:`~structpred.outputs.Multiclass`), not on rankings or sequences.  Labels stay
    integers ``0..k-1``."""
    tags.target_tags.required = True
    names = {n for key in ("zero_one", "ordinal") for n in (key, *SPACE_NAMES[key])}
    if (isinstance(loss, str) and loss in names) or isinstance(loss, Multiclass) or (
            not isinstance(loss, str) and getattr(loss, "ndim", None) == 2):
        tags.estimator_type = "classifier"
        tags.classifier_tags = ClassifierTags()
    return tags
