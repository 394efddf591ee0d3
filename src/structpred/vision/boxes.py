"""Boxes ``(xmin, ymin, xmax, ymax)`` in inclusive pixel coordinates (the VOC devkit's convention).

``IoU(a, b) = |a ∩ b| / |a ∪ b|`` with areas counted in pixels, ``(xmax - xmin + 1) (ymax - ymin
+ 1)``, as the VOC evaluation code; the localisation loss of a candidate is ``1 - IoU`` with the
ground truth (Casimir §7.2), and its label the candidate of highest IoU.
"""

from __future__ import annotations

import numpy as np

from structpred.errors import DataError


def as_boxes(boxes, what: str = "boxes") -> np.ndarray:
    """``boxes`` as a float ``(m, 4)`` array; one clear error for a wrong shape, NaN or an empty box."""
    b = np.asarray(boxes, dtype=np.float64)
    if b.ndim == 1:
        b = b[None]
    if b.ndim != 2 or b.shape[1] != 4:
        raise DataError(f"{what} must have shape (m, 4) (xmin, ymin, xmax, ymax), got {np.shape(boxes)}")
    if not np.all(np.isfinite(b)):
        raise DataError(f"{what} contain NaN or infinite values")
    if np.any(b[:, 2] < b[:, 0]) or np.any(b[:, 3] < b[:, 1]):
        raise DataError(f"{what}: xmax < xmin or ymax < ymin")
    return b


def area(boxes) -> np.ndarray:
    b = as_boxes(boxes)
    return (b[:, 2] - b[:, 0] + 1) * (b[:, 3] - b[:, 1] + 1)


def iou(boxes, gt) -> np.ndarray:
    """IoU of each of ``boxes (m, 4)`` with the one box ``gt (4,)``."""
    b, g = as_boxes(boxes), as_boxes(gt, "the ground-truth box")[0]
    w = np.minimum(b[:, 2], g[2]) - np.maximum(b[:, 0], g[0]) + 1
    h = np.minimum(b[:, 3], g[3]) - np.maximum(b[:, 1], g[1]) + 1
    inter = np.where((w > 0) & (h > 0), w * h, 0.0)
    return inter / (area(b) + area(g)[0] - inter)


def candidate_losses(boxes, gt) -> np.ndarray:
    """``1 - IoU(box_j, gt)`` per candidate: the truth of the :class:`~structpred.outputs.Candidates` space."""
    return 1.0 - iou(boxes, gt)
