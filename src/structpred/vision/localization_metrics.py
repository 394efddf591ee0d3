"""Localisation metrics of a box scorer (Casimir §7.2, as the reference code computes them).

Each image of a class holds one ground-truth box; the model scores the image's candidate boxes
and returns the top one.  ``CorLoc = (1/n) sum_i 1[IoU(top box of image i) >= 0.5]`` (the paper
writes "> 0.5"; the reference code tests ``>= 0.5``).  The average precision is box-level: every
candidate of every image, ranked by its raw score, is a positive when its IoU with the ground
truth exceeds 0.5, and ``AP = sum_r (R_r - R_{r-1}) P_r`` over the ranks (scikit-learn's
``average_precision_score`` on the pooled candidates, the reference's ``average='micro'``).
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import average_precision_score

from structpred.errors import StructpredError

#: the reference code's CorLoc criterion: IoU >= 0.5
CORLOC_IOU = 0.5
#: a candidate box is a positive of the AP when IoU > 0.5
AP_IOU = 0.5


def corloc(ious) -> float:
    """The fraction of images whose returned box has IoU >= 0.5 with the ground truth."""
    ious = np.asarray(ious, dtype=np.float64)
    if ious.ndim != 1 or ious.size == 0:
        raise StructpredError("corloc needs a non-empty vector of IoUs")
    return float(np.mean(ious >= CORLOC_IOU))


def box_average_precision(scores: list, ious: list) -> float:
    """Box-level AP of every candidate of every image (see the module docstring): ``scores[i]``
    and ``ious[i]`` are image ``i``'s candidates' scores and IoUs.  0 when no candidate is a
    positive."""
    if len(scores) != len(ious) or not scores:
        raise StructpredError("box_average_precision needs one score and one IoU vector per image")
    s = np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in scores])
    t = np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in ious])
    if s.shape != t.shape or not np.all(np.isfinite(s)):
        raise StructpredError("each image needs as many finite scores as IoUs")
    positive = t > AP_IOU
    if not positive.any():
        return 0.0
    return float(average_precision_score(positive, s))
