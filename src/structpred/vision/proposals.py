"""Candidate boxes of an image by selective search (Uijlings et al. 2013; OpenCV ximgproc, fast mode).

OpenCV returns the proposals in an order drawn from an unseeded generator (two calls on one
image give the same set in different orders), so the order is made ours: the distinct boxes
sorted, then a permutation seeded by ``seed`` and the image's bytes, and the first
``max_boxes`` kept.  The same image and settings give the same boxes on every run; the boxes
are cached per image (:func:`cached_proposals`), keyed by the image's sha256 and the settings.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from structpred.errors import DataError
from structpred.io import atomic_open

#: the fixed settings (printed in the report): OpenCV's fast mode on the image's own size
SETTINGS = {"method": "opencv ximgproc selective search, fast mode", "max_boxes": 1000}


def _opencv():
    try:
        import cv2
    except ImportError:
        raise DataError("selective search needs OpenCV with the contrib modules: "
                        "pip install 'structpred[vision]' (opencv-contrib-python-headless)") from None
    if not hasattr(cv2, "ximgproc"):
        raise DataError("this OpenCV lacks the contrib module ximgproc: install opencv-contrib-python-headless")
    return cv2


def selective_search(image: np.ndarray, *, max_boxes: int = 1000, seed: int = 0) -> np.ndarray:
    """Up to ``max_boxes`` proposals of ``image`` (``(H, W, 3)`` uint8, BGR as OpenCV reads it) as
    an int64 ``(m, 4)`` array of inclusive ``(xmin, ymin, xmax, ymax)`` (0-based)."""
    cv2 = _opencv()
    image = np.ascontiguousarray(image)
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise DataError(f"an image is an (H, W, 3) uint8 array, got {image.shape} {image.dtype}")
    ss = cv2.ximgproc.segmentation.createSelectiveSearchSegmentation()
    ss.setBaseImage(image)
    ss.switchToSelectiveSearchFast()
    xywh = np.asarray(ss.process(), dtype=np.int64).reshape(-1, 4)
    boxes = np.unique(np.c_[xywh[:, :2], xywh[:, :2] + xywh[:, 2:] - 1], axis=0)
    digest = hashlib.sha256(image.tobytes()).digest()
    rng = np.random.default_rng([seed, *np.frombuffer(digest[:8], dtype=np.uint32)])
    return boxes[rng.permutation(len(boxes))[:max_boxes]]


def cached_proposals(jpeg: Path, cache_dir: Path, *, max_boxes: int = 1000, seed: int = 0) -> np.ndarray:
    """:func:`selective_search` of the image file ``jpeg``, read from / written to ``cache_dir``
    (one ``.npy`` per image, named by the image's sha256 and the settings)."""
    cv2 = _opencv()
    data = Path(jpeg).read_bytes()
    key = hashlib.sha256(data + f"|{SETTINGS['method']}|{max_boxes}|{seed}".encode()).hexdigest()[:24]
    path = Path(cache_dir) / f"{Path(jpeg).stem}-{key}.npy"
    if path.is_file():
        return np.load(path)
    image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise DataError(f"{jpeg}: not a readable image")
    boxes = selective_search(image, max_boxes=max_boxes, seed=seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path, "wb") as fh:
        np.save(fh, boxes)
    return boxes
