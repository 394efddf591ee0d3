"""A small synthetic dataset in the PASCAL VOC 2007 devkit layout (tests and the smoke workflow).

``VOC2007/JPEGImages/<id>.jpg``, ``VOC2007/Annotations/<id>.xml`` (the fields
:func:`structpred.data.voc.parse_annotation_xml` reads) and ``VOC2007/ImageSets/Main/``
(``trainval.txt``, ``test.txt`` and ``<class>_<set>.txt`` with the devkit's ``1`` / ``-1`` /
``0`` (difficult) flags).  Each image is a smooth random background with one to three
filled shapes; a class is a (shape, colour) pair, so a detector can tell them apart.  Every
draw comes from one generator seeded by ``seed``: the same call writes the same bytes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from structpred.data.voc import VOC_CLASSES
from structpred.errors import DataError
from structpred.io import write_text

#: (shape, RGB colour) of each synthetic class, in VOC_CLASSES order
SHAPES = ("rectangle", "ellipse", "triangle", "diamond")
COLOURS = ((200, 40, 40), (40, 170, 60), (40, 70, 210), (220, 190, 30), (160, 50, 180))


def class_style(c: int) -> tuple[str, tuple[int, int, int]]:
    """The shape and colour drawn for VOC class index ``c``."""
    return SHAPES[c % len(SHAPES)], COLOURS[(c // len(SHAPES) + c) % len(COLOURS)]


def _background(rng, h: int, w: int) -> np.ndarray:
    """A smooth colour field: a bilinear upsampling of a 4 x 4 random grid, plus noise."""
    grid = rng.uniform(60, 200, size=(4, 4, 3))
    ys, xs = np.linspace(0, 3, h), np.linspace(0, 3, w)
    y0, x0 = np.minimum(ys.astype(int), 2), np.minimum(xs.astype(int), 2)
    fy, fx = (ys - y0)[:, None, None], (xs - x0)[None, :, None]
    g = lambda a, b: grid[y0[:, None] + a, x0[None, :] + b]  # noqa: E731
    img = (1 - fy) * ((1 - fx) * g(0, 0) + fx * g(0, 1)) + fy * ((1 - fx) * g(1, 0) + fx * g(1, 1))
    return np.clip(img + rng.normal(0, 8, size=img.shape), 0, 255)


def _draw(img: np.ndarray, shape: str, colour, box) -> None:
    """Fill ``shape`` inside ``box = (x0, y0, x1, y1)`` (0-based, inclusive) of ``img``."""
    x0, y0, x1, y1 = box
    yy, xx = np.mgrid[y0:y1 + 1, x0:x1 + 1]
    u = (xx - x0) / max(x1 - x0, 1) * 2 - 1     # [-1, 1] across the box
    v = (yy - y0) / max(y1 - y0, 1) * 2 - 1
    inside = {"rectangle": np.ones_like(u, dtype=bool), "ellipse": u ** 2 + v ** 2 <= 1.0,
              "triangle": np.abs(u) <= (v + 1) / 2, "diamond": np.abs(u) + np.abs(v) <= 1.0}[shape]
    img[y0:y1 + 1, x0:x1 + 1][inside] = colour


def _annotation_xml(image_id: str, w: int, h: int, objects) -> str:
    objs = "".join(
        f"<object><name>{VOC_CLASSES[c]}</name><pose>Unspecified</pose><truncated>0</truncated>"
        f"<difficult>{d}</difficult><bndbox><xmin>{b[0] + 1}</xmin><ymin>{b[1] + 1}</ymin>"
        f"<xmax>{b[2] + 1}</xmax><ymax>{b[3] + 1}</ymax></bndbox></object>"
        for c, b, d in objects)
    return (f"<annotation><folder>VOC2007</folder><filename>{image_id}.jpg</filename>"
            f"<source><database>structpred synthetic</database></source>"
            f"<size><width>{w}</width><height>{h}</height><depth>3</depth></size>"
            f"<segmented>0</segmented>{objs}</annotation>\n")


def write_synthetic_voc(root, *, n_images: int = 40, classes=(0, 1, 2), size=(120, 160), seed: int = 0,
                        test_fraction: float = 0.25) -> Path:
    """Write a synthetic VOC 2007 devkit under ``root`` and return its ``VOC2007`` folder.

    Each image holds one object of a random class of ``classes`` (VOC class indices) and,
    with probability 1/3 each, a second object of another class and a third one flagged
    difficult; boxes span 20 to 60 % of each side.  ``size = (height, width)``.
    """
    if n_images < 2 or not classes:
        raise DataError("a synthetic VOC set needs at least 2 images and 1 class")
    rng = np.random.default_rng(seed)
    base = Path(root) / "VOC2007"
    for sub in ("JPEGImages", "Annotations", "ImageSets/Main"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    h, w = size
    ids = [f"{i + 1:06d}" for i in range(n_images)]
    n_test = max(1, int(round(test_fraction * n_images)))
    part = {i: ("test" if k >= n_images - n_test else "trainval") for k, i in enumerate(ids)}
    flags = {(c, p): [] for c in classes for p in ("trainval", "test")}
    for image_id in ids:
        img = _background(rng, h, w)
        objects = []
        picks = [int(rng.choice(classes))]
        if len(classes) > 1 and rng.random() < 1 / 3:
            picks.append(int(rng.choice([c for c in classes if c != picks[0]])))
        difficult = [0] * len(picks)
        if rng.random() < 1 / 3:
            picks.append(int(rng.choice(classes)))
            difficult.append(1)
        for c, d in zip(picks, difficult):
            bw, bh = (int(rng.uniform(0.2, 0.6) * s) for s in (w, h))
            x0, y0 = int(rng.integers(0, w - bw)), int(rng.integers(0, h - bh))
            box = (x0, y0, x0 + bw - 1, y0 + bh - 1)
            _draw(img, *class_style(c), box)
            objects.append((c, box, d))
        Image.fromarray(img.astype(np.uint8)).save(base / "JPEGImages" / f"{image_id}.jpg", quality=95)
        write_text(base / "Annotations" / f"{image_id}.xml", _annotation_xml(image_id, w, h, objects))
        for c in classes:
            present = [d for k, _, d in objects if k == c]
            flag = 0 if present and all(present) else (1 if present else -1)
            flags[(c, part[image_id])].append(f"{image_id} {flag:2d}")
    for p in ("trainval", "test"):
        write_text(base / "ImageSets/Main" / f"{p}.txt", "".join(f"{i}\n" for i in ids if part[i] == p))
        for c in classes:
            write_text(base / "ImageSets/Main" / f"{VOC_CLASSES[c]}_{p}.txt", "\n".join(flags[(c, p)]) + "\n")
    return base
