"""PASCAL VOC 2007 annotations (Casimir localisation): XML parser and tarball reader.

The tarballs (VOCtrainval_06-Nov-2007.tar, VOCtest_06-Nov-2007.tar) are not in the mirror
here; :func:`parse_voc2007` works once they are fetched into the raw folder.
"""

from __future__ import annotations

import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from structpred.errors import DataError

VOC_CLASSES = (
    "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
    "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa",
    "train", "tvmonitor",
)
VOC_TARS = (("trainval", "VOCtrainval_06-Nov-2007.tar"), ("test", "VOCtest_06-Nov-2007.tar"))


def parse_annotation_xml(text: str | bytes, name: str = "<xml>") -> dict:
    """One VOC ``Annotations/*.xml``: ``{image, width, height, objects}``.

    ``objects`` is a list of dicts ``{class, bbox: (xmin, ymin, xmax, ymax) 1-based pixels,
    difficult, truncated}``. Missing fields or unknown classes raise DataError naming ``name``.
    """
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise DataError(f"{name}: invalid XML ({exc})") from None

    def req(node, tag):
        el = node.find(tag)
        if el is None or el.text is None:
            raise DataError(f"{name}: missing <{tag}>")
        return el.text.strip()

    def integer(node, tag, default=None):
        if default is not None and (node.find(tag) is None):
            return default
        try:
            return int(float(req(node, tag)))
        except ValueError:
            raise DataError(f"{name}: <{tag}> is not a number") from None

    size = root.find("size")
    if size is None:
        raise DataError(f"{name}: missing <size>")
    objects = []
    for obj in root.findall("object"):
        cls = req(obj, "name")
        if cls not in VOC_CLASSES:
            raise DataError(f"{name}: unknown class {cls!r}")
        box = obj.find("bndbox")
        if box is None:
            raise DataError(f"{name}: object without <bndbox>")
        objects.append({
            "class": cls,
            "bbox": tuple(integer(box, t) for t in ("xmin", "ymin", "xmax", "ymax")),
            "difficult": integer(obj, "difficult", 0),
            "truncated": integer(obj, "truncated", 0),
        })
    return {"image": Path(req(root, "filename")).stem, "width": integer(size, "width"),
            "height": integer(size, "height"), "objects": objects}


def annotations_to_arrays(annotations: list[dict], parts: list[str]) -> dict[str, np.ndarray]:
    """Flatten parsed annotations: per image ``image``, ``width``, ``height``, ``part``,
    ``obj_offsets`` (images + 1,); per object ``obj_class`` int64 (index in VOC_CLASSES),
    ``obj_bbox`` (m, 4) int64, ``obj_difficult``, ``obj_truncated`` int64."""
    objs = [o for a in annotations for o in a["objects"]]
    return {
        "image": np.asarray([a["image"] for a in annotations], dtype=str),
        "width": np.asarray([a["width"] for a in annotations], dtype=np.int64),
        "height": np.asarray([a["height"] for a in annotations], dtype=np.int64),
        "part": np.asarray(parts, dtype=str),
        "obj_offsets": np.r_[0, np.cumsum([len(a["objects"]) for a in annotations])].astype(np.int64),
        "obj_class": np.asarray([VOC_CLASSES.index(o["class"]) for o in objs], dtype=np.int64),
        "obj_bbox": np.asarray([o["bbox"] for o in objs], dtype=np.int64).reshape(-1, 4),
        "obj_difficult": np.asarray([o["difficult"] for o in objs], dtype=np.int64),
        "obj_truncated": np.asarray([o["truncated"] for o in objs], dtype=np.int64),
    }


def parse_voc2007(raw: Path) -> dict[str, np.ndarray]:
    """All ``VOC2007/Annotations/*.xml`` of both tarballs (images not extracted)."""
    annotations, parts = [], []
    for part, fname in VOC_TARS:
        path = raw / fname
        if not path.is_file():
            raise DataError(f"raw file {path} is missing (fetch voc2007 first)")
        with tarfile.open(path) as tar:
            for m in sorted(tar.getmembers(), key=lambda m: m.name):
                if m.isfile() and "/Annotations/" in m.name and m.name.endswith(".xml"):
                    fh = tar.extractfile(m)
                    annotations.append(parse_annotation_xml(fh.read(), f"{path}:{m.name}"))
                    parts.append(part)
    if not annotations:
        raise DataError(f"no Annotations/*.xml found in the voc2007 tarballs in {raw}")
    return annotations_to_arrays(annotations, parts)
