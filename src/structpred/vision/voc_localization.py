"""The localisation examples of one VOC class (Casimir §7.2) and their candidate boxes and features.

An example is an image of the devkit's ``trainval`` list holding exactly one instance of the
class, that instance not flagged difficult (an image with a second instance, difficult or not,
is left out: the task is to find *the* object); its truth is the ground-truth box.  The
examples are shuffled once with ``seed`` and cut into a training part (the first
``floor(train_fraction n)``, as the reference's ``n * 3 // 4``) and a held-out part.  Each image then gets its candidate boxes
(:mod:`structpred.vision.proposals`), their losses ``1 - IoU`` with the truth and their conv4
features (:mod:`structpred.vision.alexnet`), stacked as :class:`~structpred.features.Sequences`
rows: one row per candidate.
"""

from __future__ import annotations

import hashlib
import json
import logging
import tarfile
from pathlib import Path

import numpy as np
from PIL import Image

from structpred.data.store import load
from structpred.data.voc import VOC_CLASSES, VOC_TARS, parse_annotation_xml
from structpred.data.voc_synthetic import write_synthetic_voc
from structpred.errors import DataError
from structpred.features import Sequences
from structpred.io import atomic_open
from structpred.vision.alexnet import box_features, conv4_net, load_weights, resolve_device, weights_digest
from structpred.vision.boxes import candidate_losses
from structpred.vision.proposals import cached_proposals

log = logging.getLogger(__name__)


def class_examples(voc: Path, class_name: str, image_set: str = "trainval") -> list[tuple[str, tuple]]:
    """``(image id, ground-truth box)`` of each image of ``ImageSets/Main/<image_set>.txt`` with
    exactly one instance of ``class_name``, not difficult (box: 0-based inclusive pixels)."""
    if class_name not in VOC_CLASSES:
        raise DataError(f"unknown VOC class {class_name!r}; known: {', '.join(VOC_CLASSES)}")
    listing = Path(voc) / "ImageSets" / "Main" / f"{image_set}.txt"
    if not listing.is_file():
        raise DataError(f"{listing} is missing: not a VOC 2007 devkit folder")
    out = []
    for image_id in listing.read_text().split():
        path = Path(voc) / "Annotations" / f"{image_id}.xml"
        if not path.is_file():
            raise DataError(f"{path} is missing")
        objs = [o for o in parse_annotation_xml(path.read_bytes(), str(path))["objects"] if o["class"] == class_name]
        if len(objs) == 1 and not objs[0]["difficult"]:
            out.append((image_id, tuple(int(c) - 1 for c in objs[0]["bbox"])))
    return out


def split_examples(examples: list, train_fraction: float, seed: int) -> tuple[list, list]:
    """The examples shuffled with ``seed``, then cut: ``(training part, held-out part)``."""
    if not 0 < train_fraction < 1:
        raise DataError(f"train_fraction must lie in (0, 1), got {train_fraction}")
    order = np.random.default_rng(seed).permutation(len(examples))
    cut = int(np.floor(train_fraction * len(examples)))   # the reference: n * 3 // 4
    if cut < 1 or cut >= len(examples):
        raise DataError(f"{len(examples)} examples cannot be split {train_fraction:g} / {1 - train_fraction:g}")
    shuffled = [examples[i] for i in order]
    return shuffled[:cut], shuffled[cut:]


def candidate_arrays(voc: Path, examples: list, *, net, device: str, cache_dir: Path, max_boxes: int,
                     seed: int = 0, batch_size: int = 256) -> dict[str, np.ndarray]:
    """Per candidate of each example: conv4 ``features`` (float32 rows), ``losses`` (``1 - IoU``),
    ``boxes``; per example: ``offsets`` into those rows, ``image`` ids and ``gt`` boxes."""
    feats, losses, boxes, sizes = [], [], [], []
    for image_id, gt in examples:
        jpeg = Path(voc) / "JPEGImages" / f"{image_id}.jpg"
        if not jpeg.is_file():
            raise DataError(f"{jpeg} is missing")
        b = cached_proposals(jpeg, cache_dir, max_boxes=max_boxes, seed=seed)
        image = np.asarray(Image.open(jpeg).convert("RGB"))
        feats.append(box_features(net, image, b, device=device, batch_size=batch_size))
        losses.append(candidate_losses(b, gt))
        boxes.append(b)
        sizes.append(len(b))
    return {"features": np.concatenate(feats), "losses": np.concatenate(losses), "boxes": np.concatenate(boxes),
            "offsets": np.r_[0, np.cumsum(sizes)].astype(np.int64),
            "image": np.asarray([i for i, _ in examples]), "gt": np.asarray([g for _, g in examples], dtype=np.int64)}


def _digest(paths) -> str:
    """sha256 over the bytes of ``paths`` in order (the inputs behind a candidate file)."""
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).read_bytes())
    return h.hexdigest()


def build_candidate_file(voc: Path, class_name: str, out: Path, *, weights: Path | None, device: str = "auto",
                         cache_dir: Path, max_boxes: int = 1000, train_fraction: float = 0.75, seed: int = 0,
                         batch_size: int = 256, net_seed: int = 0) -> dict:
    """The candidate file of one class: for the ``train`` and ``held`` parts the arrays of
    :func:`candidate_arrays` (keys ``<array>_<part>``), and a JSON ``meta`` with the settings,
    the device used, the sha256 of the images and annotations read and of the network's
    weights (``weights``: torchvision's AlexNet file; ``None``: random weights from
    ``net_seed``, for synthetic runs).  Written atomically; returns the meta."""
    examples = class_examples(voc, class_name)
    train, held = split_examples(examples, train_fraction, seed)
    net = conv4_net(net_seed)
    if weights is not None:
        load_weights(net, weights)
    device = resolve_device(device)
    arrays = {}
    for part, ex in (("train", train), ("held", held)):
        for k, v in candidate_arrays(voc, ex, net=net, device=device, cache_dir=cache_dir,
                                     max_boxes=max_boxes, seed=seed, batch_size=batch_size).items():
            arrays[f"{k}_{part}"] = v
    ids = [i for i, _ in train + held]
    meta = {"class": class_name, "n_train": len(train), "n_held": len(held), "max_boxes": max_boxes,
            "train_fraction": train_fraction, "seed": seed, "device": device,
            "weights": "random (seed %d)" % net_seed if weights is None else Path(weights).name,
            "weights_sha256": weights_digest(net),
            "images_sha256": _digest(Path(voc) / "JPEGImages" / f"{i}.jpg" for i in ids),
            "annotations_sha256": _digest(Path(voc) / "Annotations" / f"{i}.xml" for i in ids)}
    with atomic_open(out, "wb") as fh:
        np.savez_compressed(fh, meta=np.asarray(json.dumps(meta, sort_keys=True)), **arrays)
    log.info("%s: %d train / %d held-out images, %d candidates, on %s", class_name, len(train), len(held),
             len(arrays["losses_train"]) + len(arrays["losses_held"]), device)
    return meta


def load_candidate_file(path: Path) -> tuple[dict, dict]:
    """``({part: {array: values}}, meta)`` of a file of :func:`build_candidate_file`; each part's
    ``X`` is a :class:`~structpred.features.Sequences` of its candidates' features, ``iou`` the
    list of per-example candidate IoUs and ``y`` the :class:`~structpred.outputs.Candidates`
    truths ``l_ij - min_j l_ij`` with ``l_ij = 1 - IoU``: the reference code's hinge scores the
    label (the best candidate) with its own loss, ``max_j [l_ij + v_ij] - (l_i* + v_i*)``."""
    arrays, meta = load(path)
    parts = {}
    for part in ("train", "held"):
        a = {k[: -len(part) - 1]: v for k, v in arrays.items() if k.endswith(f"_{part}")}
        if set(a) != {"features", "losses", "boxes", "offsets", "image", "gt"}:
            raise DataError(f"{path}: not a candidate file (part {part} has {sorted(a)})")
        off = a["offsets"]
        a["X"] = Sequences(a["features"], off)
        losses = [a["losses"][off[i]:off[i + 1]] for i in range(len(off) - 1)]
        a["iou"] = [1.0 - t for t in losses]
        a["y"] = [t - t.min() for t in losses]
        parts[part] = a
    return parts, meta


def make_devkit(name: str, dest: Path, *, raw: Path | None = None, synthetic: dict | None = None) -> Path:
    """The ``VOC2007`` devkit folder ``dest/VOC2007`` of ``name``: ``voc2007`` extracts
    JPEGImages, Annotations and ImageSets of the two VOC 2007 tarballs in ``raw``; ``synthetic``
    writes :func:`~structpred.data.voc_synthetic.write_synthetic_voc`'s folder with the settings
    ``synthetic`` (class names, n_images, size, seed)."""
    dest = Path(dest)
    if name == "synthetic":
        s = dict(synthetic or {})
        names = s.pop("classes", list(VOC_CLASSES[:3]))
        unknown = [c for c in names if c not in VOC_CLASSES]
        if unknown:
            raise DataError(f"unknown VOC classes {unknown} in the synthetic settings")
        if "size" in s:
            s["size"] = tuple(s["size"])
        return write_synthetic_voc(dest, classes=tuple(VOC_CLASSES.index(c) for c in names), **s)
    if name != "voc2007":
        raise DataError(f"unknown VOC devkit {name!r}: voc2007 or synthetic")
    keep = ("/JPEGImages/", "/Annotations/", "/ImageSets/Main/")
    for _, fname in VOC_TARS:
        path = Path(raw) / fname
        if not path.is_file():
            raise DataError(f"raw file {path} is missing (fetch voc2007 first)")
        with tarfile.open(path) as tar:
            for m in tar.getmembers():
                inside = m.name.partition("VOC2007/")[2]
                if m.isfile() and inside and any(k in "/" + m.name for k in keep) and ".." not in inside:
                    target = dest / "VOC2007" / inside
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with tar.extractfile(m) as src, atomic_open(target, "wb") as out:
                        out.write(src.read())
    return dest / "VOC2007"
