"""Casimir's VOC localisation examples, candidate files and metrics: the one-instance rule, the
3/4 split, the devkit extracted from VOC-layout tarballs, deterministic candidate files with the
checksums of their inputs, CorLoc and AP on hand-made cases, and the experiment's run."""

from __future__ import annotations

import tarfile

import numpy as np
import pytest

from structpred.data.voc import VOC_CLASSES, parse_annotation_xml
from structpred.errors import DataError, StructpredError
from structpred.vision.localization_metrics import box_average_precision, corloc

torch = pytest.importorskip("torch")
cv2 = pytest.importorskip("cv2")

from structpred.vision.voc_localization import (  # noqa: E402
    build_candidate_file, class_examples, load_candidate_file, make_devkit, split_examples)

SYNTH = {"classes": ["aeroplane", "bicycle"], "n_images": 24, "size": [96, 128], "seed": 1}


@pytest.fixture(scope="module")
def devkit(tmp_path_factory):
    return make_devkit("synthetic", tmp_path_factory.mktemp("devkit"), synthetic=SYNTH)


@pytest.fixture(scope="module")
def candidate_file(devkit, tmp_path_factory):
    out = tmp_path_factory.mktemp("cand") / "aeroplane.npz"
    build_candidate_file(devkit, "aeroplane", out, weights=None, device="cpu", cache_dir=out.parent / "props",
                         max_boxes=40, batch_size=16)
    return out


def test_corloc_and_box_level_ap_on_hand_made_cases():
    assert corloc([0.6, 0.4, 0.9]) == pytest.approx(2 / 3)
    assert corloc([0.5, 0.4999]) == 0.5                 # IoU >= 0.5, as the reference code
    # two images, five candidates pooled and ranked by score: 0.9 (+), 0.8 (-), 0.7 (+), 0.2 (-), 0.1 (+)
    # (positives: IoU > 0.5) -> precision at each positive 1, 2/3, 3/5, each adding 1/3 of recall
    scores = [np.array([0.9, 0.2, 0.1]), np.array([0.8, 0.7])]
    ious = [np.array([0.8, 0.3, 0.51]), np.array([0.5, 0.6])]
    assert box_average_precision(scores, ious) == pytest.approx((1 + 2 / 3 + 3 / 5) / 3)
    assert box_average_precision([np.array([1.0, 2.0])], [np.array([0.1, 0.2])]) == 0.0   # no positive
    with pytest.raises(StructpredError):
        box_average_precision([np.array([1.0, np.nan])], [np.array([0.6, 0.7])])
    with pytest.raises(StructpredError):
        box_average_precision([np.array([1.0])], [np.array([0.6, 0.7])])
    with pytest.raises(StructpredError):
        corloc([])


def test_class_examples_keep_single_non_difficult_instances(devkit):
    listed = (devkit / "ImageSets/Main/trainval.txt").read_text().split()
    for cls in SYNTH["classes"]:
        kept = dict(class_examples(devkit, cls))
        assert kept, cls
        for image_id in listed:
            objs = [o for o in parse_annotation_xml((devkit / "Annotations" / f"{image_id}.xml").read_text())["objects"]
                    if o["class"] == cls]
            single = len(objs) == 1 and not objs[0]["difficult"]
            assert (image_id in kept) == single
            if single:   # 0-based inclusive box
                assert kept[image_id] == tuple(c - 1 for c in objs[0]["bbox"])
    with pytest.raises(DataError, match="unknown VOC class"):
        class_examples(devkit, "unicorn")
    with pytest.raises(DataError, match="not a VOC 2007 devkit"):
        class_examples(devkit / "JPEGImages", "aeroplane")


def test_split_is_seeded_disjoint_and_three_quarters():
    ex = [(f"{i:06d}", (0, 0, 1, 1)) for i in range(20)]
    tr, held = split_examples(ex, 0.75, seed=4)
    assert len(tr) == 15 and len(held) == 5 and sorted(tr + held) == ex
    assert split_examples(ex, 0.75, seed=4) == (tr, held) and split_examples(ex, 0.75, seed=5) != (tr, held)
    for bad in (0.0, 1.0):
        with pytest.raises(DataError):
            split_examples(ex, bad, seed=0)
    with pytest.raises(DataError, match="cannot be split"):
        split_examples(ex[:1], 0.75, seed=0)


def test_voc2007_devkit_from_tarballs_equals_its_files(devkit, tmp_path):
    # tarballs in the VOC 2007 layout (VOCdevkit/VOC2007/...), made from the synthetic folder
    raw = tmp_path / "raw"
    raw.mkdir()
    files = sorted(p for p in devkit.rglob("*") if p.is_file())
    for fname, keep in (("VOCtrainval_06-Nov-2007.tar", lambda p: "test" not in p.name),
                        ("VOCtest_06-Nov-2007.tar", lambda p: True)):
        with tarfile.open(raw / fname, "w") as tar:
            for p in files:
                if keep(p):
                    tar.add(p, arcname=f"VOCdevkit/VOC2007/{p.relative_to(devkit)}")
    out = make_devkit("voc2007", tmp_path / "dev", raw=raw)
    assert sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file()) == [p.relative_to(devkit) for p in files]
    assert all((out / p.relative_to(devkit)).read_bytes() == p.read_bytes() for p in files)
    with pytest.raises(DataError, match="fetch voc2007 first"):
        make_devkit("voc2007", tmp_path / "none", raw=tmp_path / "empty")
    with pytest.raises(DataError, match="unknown VOC devkit"):
        make_devkit("voc2012", tmp_path / "none")


def test_candidate_file_is_deterministic_and_consistent(devkit, candidate_file, tmp_path):
    from structpred.vision.boxes import candidate_losses

    parts, meta = load_candidate_file(candidate_file)
    tr, held = split_examples(class_examples(devkit, "aeroplane"), 0.75, seed=0)
    assert meta["n_train"] == len(tr) == parts["train"]["X"].n and meta["n_held"] == len(held)
    assert meta["weights"] == "random (seed 0)" and meta["device"] == "cpu" and len(meta["images_sha256"]) == 64
    for part, ex in (("train", tr), ("held", held)):
        a = parts[part]
        assert list(a["image"]) == [i for i, _ in ex] and a["features"].shape[1] == 2304
        assert a["features"].dtype == np.float32 and np.all(np.diff(a["offsets"]) <= 40)
        for i, (_, gt) in enumerate(ex):
            rows = slice(a["offsets"][i], a["offsets"][i + 1])
            np.testing.assert_array_equal(a["gt"][i], gt)
            losses = candidate_losses(a["boxes"][rows], gt)
            np.testing.assert_allclose(a["iou"][i], 1 - losses)
            np.testing.assert_allclose(a["y"][i], losses - losses.min())   # relative to the label
    again = tmp_path / "again.npz"
    build_candidate_file(devkit, "aeroplane", again, weights=None, device="cpu", cache_dir=tmp_path / "props",
                         max_boxes=40, batch_size=7)
    parts2, meta2 = load_candidate_file(again)
    assert meta2 == meta
    for part in parts:
        np.testing.assert_array_equal(parts2[part]["boxes"], parts[part]["boxes"])
        np.testing.assert_allclose(parts2[part]["features"], parts[part]["features"], rtol=1e-4, atol=1e-5)
    with pytest.raises(DataError, match="not a candidate file"):
        np.savez(tmp_path / "bad.npz", meta=np.asarray("{}"), features_train=np.zeros(2))
        load_candidate_file(tmp_path / "bad.npz")


def test_experiment_run_records_the_figure_measures(candidate_file):
    from structpred.papers.registry import get

    exp = get("casimir_voc")
    settings = {"class": "aeroplane", "method": "Casimir-SVRG-adapt", "c": 10.0, "eval_every": 1,
                "devkit": "synthetic", "weights": "random",
                "hyper": {"n_passes": 3, "lr": 0.01, "mu": 10, "K": 10, "mu_schedule": "expo",
                          "warm_start": "prox-centre"}}
    rows, history = exp.run({"candidates": candidate_file}, settings, seed=0, dataset="aeroplane",
                            method="Casimir-SVRG-adapt", split=0)
    assert list(history["pass"]) == [0, 1, 2, 3] and set(history["data"]) == {"synthetic"}
    # at w = 0 every candidate scores 0: the hinge is the mean over images of the largest loss
    # 1 - IoU(box, truth) minus the label's (the best candidate's), as the reference code scores it
    parts, _ = load_candidate_file(candidate_file)
    want = np.mean([iou.max() - iou.min() for iou in parts["train"]["iou"]])
    assert history["train_objective"].iloc[0] == pytest.approx(want, rel=1e-12)
    assert history["train_objective"].iloc[-1] < history["train_objective"].iloc[0]
    assert history["held_corloc"].between(0, 1).all() and history["held_ap"].between(0, 1).all()
    assert history["held_mean_iou"].between(0, 1).all()
    values = {r["metric"]: r["value"] for r in rows}
    assert {"held_corloc", "held_ap", "train_objective", "oracle_calls_per_n"} <= set(values)
    assert {r["task"] for r in rows} == {"localisation (synthetic)"}
    again, _ = exp.run({"candidates": candidate_file}, settings, seed=0, dataset="aeroplane",
                       method="Casimir-SVRG-adapt", split=0)
    assert [r["value"] for r in again if r["metric"] != "seconds"] == \
        [r["value"] for r in rows if r["metric"] != "seconds"]


def test_per_class_settings_and_the_paper_config():
    import yaml

    from structpred.errors import ConfigError
    from structpred.papers.casimir.voc import per_class
    from structpred.papers.registry import get

    hp = {"n_passes": 15, "L": {"default": 2048, "person": 32768}, "mu": 1.0}
    assert per_class(hp, "person") == {"n_passes": 15, "L": 32768, "mu": 1.0}
    assert per_class(hp, "cat")["L"] == 2048
    with pytest.raises(ConfigError, match="no value for 'cat'"):
        per_class({"L": {"person": 1}}, "cat")
    config = yaml.safe_load(open("config/config.yaml"))
    exp = get("casimir_voc")
    # the reference's values for a few classes (scripts/_run_one_loc.py)
    assert exp.settings(config, "person", "Casimir-SVRG-const")["hyper"]["L"] == 32768
    assert exp.settings(config, "sheep", "SVRG")["hyper"]["mu"] == 0.1
    assert exp.settings(config, "bottle", "SGD")["hyper"] == {"n_passes": 30, "eta0": 2 ** -14, "t0": 4096}
    assert exp.settings(config, "tvmonitor", "Casimir-SVRG-adapt")["hyper"]["lr"] == 2 ** -12
    assert len(exp.jobs(config)) == 20 * 5 * 9
