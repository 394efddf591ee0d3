"""Localisation metrics of one box per image (Casimir §7.2): CorLoc and average precision.

Each image of a class holds one ground-truth box and the model returns one box, its top
candidate, with that candidate's score as confidence.  A returned box is correct when its IoU
with the ground truth exceeds 0.5 (the paper: "IoU > 0.5").  ``CorLoc = (1/n) sum_i 1[IoU_i >
0.5]``; the average precision ranks the n returned boxes by confidence and averages the
precision over recall as PASCAL VOC 2007 does (11 recall points ``0, 0.1, ..., 1``, each the
largest precision at that recall or beyond), each image's box counting once toward recall.
"""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError

#: a box is correct when IoU > 0.5 (Casimir §7.1.2)
IOU_THRESHOLD = 0.5


def _check(values, n, what):
    a = np.asarray(values, dtype=np.float64)
    if a.shape != (n,) or not np.all(np.isfinite(a)):
        raise StructpredError(f"{what} must be {n} finite numbers")
    return a


def corloc(ious) -> float:
    """The fraction of images whose returned box has IoU > 0.5 with the ground truth."""
    ious = np.asarray(ious, dtype=np.float64)
    if ious.ndim != 1 or ious.size == 0:
        raise StructpredError("corloc needs a non-empty vector of IoUs")
    return float(np.mean(ious > IOU_THRESHOLD))


def average_precision(confidences, ious) -> float:
    """PASCAL VOC 2007 11-point AP of one returned box per image (see the module docstring);
    ties in confidence keep the images' order."""
    ious = np.asarray(ious, dtype=np.float64)
    if ious.ndim != 1 or ious.size == 0:
        raise StructpredError("average_precision needs a non-empty vector of IoUs")
    conf = _check(confidences, ious.size, "confidences")
    order = np.argsort(-conf, kind="stable")
    correct = (ious[order] > IOU_THRESHOLD).astype(np.float64)
    tp = np.cumsum(correct)
    recall = tp / ious.size
    precision = tp / np.arange(1, ious.size + 1)
    return float(np.mean([precision[recall >= r].max() if np.any(recall >= r) else 0.0
                          for r in np.linspace(0, 1, 11)]))
