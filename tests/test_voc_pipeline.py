"""Casimir's localisation inputs: IoU, the synthetic VOC folder, selective-search proposals and
AlexNet conv4 box features (random weights; torchvision's file layout)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from structpred.data.voc import VOC_CLASSES, parse_annotation_xml
from structpred.data.voc_synthetic import write_synthetic_voc
from structpred.errors import DataError
from structpred.vision.boxes import candidate_losses, iou

torch = pytest.importorskip("torch")
cv2 = pytest.importorskip("cv2")


def test_iou_on_hand_made_boxes():
    gt = (0, 0, 9, 9)                               # 10 x 10 pixels, inclusive corners
    boxes = [(0, 0, 9, 9), (5, 0, 14, 9), (10, 10, 20, 20), (0, 0, 4, 9), (2, 2, 7, 7)]
    np.testing.assert_allclose(iou(boxes, gt), [1.0, 50 / 150, 0.0, 0.5, 36 / 100])
    np.testing.assert_allclose(candidate_losses(boxes, gt), 1 - iou(boxes, gt))
    assert iou([(9, 9, 9, 9)], gt)[0] == 1 / 100   # a one-pixel corner overlap counts
    for bad in ([(0, 0, 1)], [(5, 0, 4, 9)], [(0, np.nan, 3, 3)]):
        with pytest.raises(DataError):
            iou(bad, gt)


@pytest.fixture(scope="module")
def voc(tmp_path_factory):
    return write_synthetic_voc(tmp_path_factory.mktemp("voc"), n_images=8, classes=(0, 1, 2), seed=3)


def test_synthetic_voc_layout_and_determinism(voc, tmp_path):
    ids = (voc / "ImageSets/Main/trainval.txt").read_text().split() + (voc / "ImageSets/Main/test.txt").read_text().split()
    assert sorted(ids) == [f"{i:06d}" for i in range(1, 9)] and len((voc / "ImageSets/Main/test.txt").read_text().split()) == 2
    for image_id in ids:
        ann = parse_annotation_xml((voc / "Annotations" / f"{image_id}.xml").read_text(), image_id)
        img = cv2.imread(str(voc / "JPEGImages" / f"{image_id}.jpg"))
        assert img.shape == (ann["height"], ann["width"], 3) == (120, 160, 3)
        assert 1 <= len(ann["objects"]) <= 3
        for obj in ann["objects"]:
            x0, y0, x1, y1 = obj["bbox"]
            assert 1 <= x0 < x1 <= 160 and 1 <= y0 < y1 <= 120 and obj["class"] in VOC_CLASSES[:3]
    # the per-class lists flag 1 (present), -1 (absent), 0 (only difficult instances)
    for c in VOC_CLASSES[:3]:
        for line in (voc / f"ImageSets/Main/{c}_trainval.txt").read_text().splitlines():
            image_id, flag = line.split()
            objs = parse_annotation_xml((voc / "Annotations" / f"{image_id}.xml").read_text())["objects"]
            mine = [o["difficult"] for o in objs if o["class"] == c]
            assert int(flag) == (-1 if not mine else (0 if all(mine) else 1))
    again = write_synthetic_voc(tmp_path, n_images=8, classes=(0, 1, 2), seed=3)
    digest = lambda base: sorted(hashlib.sha256(p.read_bytes()).hexdigest() for p in base.rglob("*") if p.is_file())  # noqa: E731
    assert digest(voc) == digest(again)


def test_proposals_are_deterministic_and_cached(voc, tmp_path):
    from structpred.vision.proposals import cached_proposals, selective_search

    jpeg = voc / "JPEGImages" / "000001.jpg"
    img = cv2.imread(str(jpeg))
    a = selective_search(img)
    assert a.ndim == 2 and a.shape[1] == 4 and 10 < len(a) <= 1000 and len(np.unique(a, axis=0)) == len(a)
    assert np.all(a[:, :2] >= 0) and np.all(a[:, 2] < 160) and np.all(a[:, 3] < 120) and np.all(a[:, 2:] >= a[:, :2])
    np.testing.assert_array_equal(a, selective_search(img))          # OpenCV's own order is not
    assert len(selective_search(img, max_boxes=7)) == 7
    b = cached_proposals(jpeg, tmp_path)
    np.testing.assert_array_equal(a, b)
    [cache] = list(tmp_path.glob("000001-*.npy"))
    np.save(cache, b[:3])                                             # served from the cache
    assert len(cached_proposals(jpeg, tmp_path)) == 3
    with pytest.raises(DataError, match="uint8"):
        selective_search(img.astype(np.float32))
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"not a jpeg")
    with pytest.raises(DataError, match="not a readable image"):
        cached_proposals(bad, tmp_path)


def test_alexnet_conv4_features(voc, tmp_path):
    from structpred.vision.alexnet import (N_FEATURES, box_features, conv4_net, load_weights, resolve_device,
                                           weights_digest)

    img = cv2.cvtColor(cv2.imread(str(voc / "JPEGImages" / "000002.jpg")), cv2.COLOR_BGR2RGB)
    boxes = np.array([(0, 0, 159, 119), (10, 20, 40, 90), (5, 5, 5, 5)])
    net = conv4_net(seed=0)
    F = box_features(net, img, boxes, batch_size=2)
    assert F.shape == (3, N_FEATURES) == (3, 2304) and F.dtype == np.float32 and np.all(F >= 0)
    np.testing.assert_array_equal(F, box_features(conv4_net(seed=0), img, boxes, batch_size=2))
    # another batch size may take other convolution kernels: equal to rounding (measured 1.3e-4)
    np.testing.assert_allclose(F, box_features(conv4_net(seed=0), img, boxes), rtol=1e-3, atol=1e-5)
    assert weights_digest(conv4_net(seed=0)) == weights_digest(net) != weights_digest(conv4_net(seed=1))
    # torchvision's weight file: features.0 .. features.10 plus a classifier, loaded by name
    other = conv4_net(seed=5)
    state = {f"features.{k}": v for k, v in other.state_dict().items()}
    state["features.10.weight"] = torch.zeros(256, 256, 3, 3)
    state["classifier.1.weight"] = torch.zeros(4096, 9216)
    torch.save(state, tmp_path / "alexnet.pth")
    load_weights(net, tmp_path / "alexnet.pth")
    assert weights_digest(net) == weights_digest(other)
    torch.save({"features.0.weight": torch.zeros(1)}, tmp_path / "bad.pth")
    with pytest.raises(DataError, match="not an AlexNet weight file"):
        load_weights(net, tmp_path / "bad.pth")
    assert resolve_device("cpu") == "cpu" and resolve_device("auto") in ("cpu", "cuda")
    with pytest.raises(DataError, match="unknown device"):
        resolve_device("tpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU visible to torch")
def test_alexnet_features_on_the_gpu_match_the_cpu(voc):
    from structpred.vision.alexnet import box_features, conv4_net, resolve_device

    assert resolve_device("auto") == "cuda"
    img = cv2.cvtColor(cv2.imread(str(voc / "JPEGImages" / "000003.jpg")), cv2.COLOR_BGR2RGB)
    boxes = np.array([(0, 0, 159, 119), (10, 20, 40, 90)])
    cpu = box_features(conv4_net(seed=0), img, boxes, device="cpu")
    gpu = box_features(conv4_net(seed=0), img, boxes, device="cuda")
    np.testing.assert_allclose(gpu, cpu, rtol=1e-3, atol=1e-4)


def test_cuda_without_a_gpu_is_a_clear_error():
    from structpred.vision.alexnet import resolve_device

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    with pytest.raises(DataError, match="sees no GPU"):
        resolve_device("cuda")
