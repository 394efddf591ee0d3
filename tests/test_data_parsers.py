"""Views parse the mirror with the exact shapes, dtypes and label counts; malformed files fail."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from structpred.data.parsers import VIEWS, dnk, parse_view
from structpred.data.text import decode
from structpred.data.voc import annotations_to_arrays, parse_annotation_xml
from structpred.errors import DataError

_CACHE: dict = {}


def parsed(mirror, name):
    if name not in _CACHE:
        _CACHE[name] = parse_view(name, mirror / VIEWS[name].source)
    return _CACHE[name]


MC_COUNTS = {
    "iris": [50, 50, 50],
    "wine": [59, 71, 48],
    "segment": [330] * 7,
    "vehicle": [218, 212, 217, 199],
    "satimage": [1072, 479, 961, 415, 470, 1038],
    "mfeat": [200] * 10,
    # equal-frequency bins of the ordinal targets
    "wisconsin": [38, 40, 38, 39, 39],
    "stocks": [192, 188, 191, 188, 191],
    "machine": [20, 20, 22, 20, 22, 21, 21, 22, 20, 21],
    "abalone": [448, 391, 568, 689, 634, 487, 267, 203, 126, 364],
    "auto": [33, 41, 50, 36, 36, 40, 38, 39, 40, 39],
}
DNK = {
    "segment": (19, 2310, 7), "iris": (4, 150, 3), "wine": (13, 178, 3),
    "vehicle": (18, 846, 4), "satimage": (36, 4435, 6), "letter": (16, 20000, 26),
    "mfeat": (216, 2000, 10), "wisconsin": (32, 194, 5), "stocks": (9, 950, 5),
    "machine": (6, 209, 10), "abalone": (10, 4177, 10), "auto": (7, 392, 10),
    "ocr": (128, 6877, 26), "rnk_glass": (9, 214, 6), "rnk_bodyfat": (7, 252, 7),
    "rnk_wine": (13, 178, 3), "rnk_vowel": (10, 528, 11), "rnk_vehicle": (18, 846, 4),
    "rnk_iris": (4, 150, 3), "emotion": (25, 167, 3), "conll2003": (None, 20744, 8),
    "conll2005": (None, 44020, None), "movielens": (None, 100000, 5),
    "usps": (256, 9298, 10),
}


def test_every_view_with_data_is_listed():
    assert set(DNK) == set(VIEWS) - {"voc2007"}


@pytest.mark.parametrize("name", sorted(DNK))
def test_view_dnk(mirror, name):
    a = parsed(mirror, name)
    assert dnk(VIEWS[name].task, a) == DNK[name]
    for key, v in a.items():
        assert v.dtype in (np.float64, np.int64) or v.dtype.kind == "U", key
    paper = VIEWS[name].paper_dnk
    if paper is not None and paper != DNK[name]:
        assert VIEWS[name].deviations


@pytest.mark.parametrize("name", sorted(MC_COUNTS))
def test_label_counts(mirror, name):
    a = parsed(mirror, name)
    assert a["X"].dtype == np.float64 and a["y"].dtype == np.int64
    assert np.bincount(a["y"]).tolist() == MC_COUNTS[name]
    assert np.isfinite(a["X"]).all()


def test_ordinal_targets(mirror):
    w = parsed(mirror, "wisconsin")
    assert w["target"].min() == 1 and w["target"].max() == 125
    auto = parsed(mirror, "auto")
    assert auto["target"].min() == 9.0 and auto["target"].max() == 46.6
    assert auto["X"][0].tolist() == [8, 307, 130, 3504, 12, 70, 1]
    m = parsed(mirror, "machine")
    assert m["target"].min() == 6 and m["target"].max() == 1150
    s = parsed(mirror, "stocks")
    assert s["target"].min() == 34.0 and s["target"].max() == 62.0
    ab = parsed(mirror, "abalone")
    assert ab["X"][:, :3].sum(axis=0).tolist() == [1528, 1307, 1342]  # M, F, I
    for name in ("wisconsin", "auto", "machine", "stocks", "abalone"):
        a = parsed(mirror, name)
        order = np.argsort(a["target"], kind="stable")
        assert np.all(np.diff(a["y"][order]) >= 0)


def test_letter_and_satimage(mirror):
    a = parsed(mirror, "letter")
    c = np.bincount(a["y"])
    assert c.min() == 734 and c.max() == 813 and c.sum() == 20000
    sat = parsed(mirror, "satimage")
    assert sat["X"].min() == 27 and sat["X"].max() == 157


def test_ocr(mirror):
    a = parsed(mirror, "ocr")
    assert a["X"].shape == (52152, 128)
    assert set(np.unique(a["X"])) == {0.0, 1.0}
    assert a["offsets"][-1] == 52152 and len(a["fold"]) == 6877
    assert np.bincount(a["fold"]).tolist() == [626, 704, 684, 698, 693, 651, 739, 717, 690, 675]
    counts = np.bincount(a["y"])
    assert counts[0] == 4034 and counts[4] == 4955 and counts[25] == 1094
    lengths = np.bincount(np.diff(a["offsets"]))
    assert lengths[3] == 1283 and lengths[14] == 267 and lengths[4] == 0


def test_emotion(mirror):
    a = parsed(mirror, "emotion")
    assert a["X"].shape == (3026, 25)
    assert np.bincount(a["y"]).tolist() == [585, 1261, 1180]
    assert np.bincount(a["emotion"]).tolist() == [17, 26, 26, 39, 21, 38]
    lengths = np.diff(a["offsets"])
    assert lengths.min() == 7 and lengths.max() == 43
    assert a["splits"].shape == (20, 167)
    assert a["splits"][0, :5].tolist() == [122, 60, 134, 110, 152]


def test_conll2003(mirror):
    a = parsed(mirror, "conll2003")
    lengths = np.diff(a["offsets"])
    expect = {"train": (14041, 203621), "testa": (3250, 51362), "testb": (3453, 46435)}
    for part, (n_sent, n_tok) in expect.items():
        sel = a["part"] == part
        assert sel.sum() == n_sent and lengths[sel].sum() == n_tok
    assert "-DOCSTART-" not in set(a["words"])
    assert sorted(np.unique(a["tags"])) == ["B-LOC", "B-MISC", "B-ORG", "I-LOC", "I-MISC",
                                           "I-ORG", "I-PER", "O"]
    assert a["words"][0] == "EU" and a["tags"][0] == "I-ORG"


def test_conll2005(mirror):
    a = parsed(mirror, "conll2005")
    lengths = np.diff(a["offsets"])
    expect = {"train": (39832, 950028), "devel": (1346, 32853), "test.wsj": (2416, 56684),
              "test.brown": (426, 7159)}
    for part, (n_sent, n_tok) in expect.items():
        sel = a["part"] == part
        assert sel.sum() == n_sent and lengths[sel].sum() == n_tok
    words, props = decode(a, "words"), decode(a, "props")
    assert words[:3].tolist() == ["In", "an", "Oct."]
    train_tok = lengths[a["part"] == "train"].sum()
    n_props = sum(not p.startswith("- ") and p != "-" for p in props[:train_tok])
    assert n_props == 90750


def test_movielens(mirror):
    a = parsed(mirror, "movielens")
    r = a["ratings"]
    assert r.shape == (100000, 4) and r.dtype == np.int64
    assert np.bincount(r[:, 2])[1:].tolist() == [6110, 11370, 27145, 34174, 21201]
    assert r[:, 0].min() == 0 and r[:, 0].max() == 942 and r[:, 1].max() == 1681
    assert a["user_age"].shape == (943,) and a["user_gender"][0] == "M"
    assert a["user_occupation"][0] == "technician"
    assert a["item_genres"].shape == (1682, 19) and a["item_genres"][0, 3:6].tolist() == [1, 1, 1]


def test_usps(mirror):
    a = parsed(mirror, "usps")
    assert a["X"].shape == (9298, 256) and a["X"].min() >= -1 and a["X"].max() <= 1
    tr = a["part"] == "train"
    assert tr.sum() == 7291
    assert np.bincount(a["y"][tr]).tolist() == [1194, 1005, 731, 658, 652, 556, 664, 645, 542, 644]
    assert np.bincount(a["y"][~tr]).tolist() == [359, 264, 198, 166, 200, 160, 170, 147, 166, 177]


@pytest.mark.parametrize("name,distinct", [("glass", 30), ("bodyfat", 236), ("wine", 5),
                                           ("vowel", 294), ("vehicle", 18), ("iris", 5)])
def test_label_ranking(mirror, name, distinct):
    a = parsed(mirror, f"rnk_{name}")
    Y = a["Y"]
    assert Y.dtype == np.int64
    assert np.all(np.sort(Y, axis=1) == np.arange(Y.shape[1]))
    assert len({tuple(r) for r in Y}) == distinct


# ----------------------------------------------------------------- malformed files

@pytest.fixture
def iris_copy(mirror, tmp_path):
    dst = tmp_path / "iris"
    shutil.copytree(mirror / "iris", dst)
    for p in dst.iterdir():
        p.chmod(0o644)
    return dst


def test_wrong_column_count_names_file_and_line(iris_copy):
    p = iris_copy / "iris.data"
    lines = p.read_text().split("\n")
    lines[6] = "5.4,3.9,1.7,Iris-setosa"
    p.write_text("\n".join(lines))
    with pytest.raises(DataError, match=r"iris\.data: line 7: expected 5 columns, got 4"):
        parse_view("iris", iris_copy)


def test_non_numeric_value_names_line(iris_copy):
    p = iris_copy / "iris.data"
    lines = p.read_text().split("\n")
    lines[9] = "4.9,x,1.5,0.1,Iris-setosa"
    p.write_text("\n".join(lines))
    with pytest.raises(DataError, match=r"iris\.data: line 10: non-numeric"):
        parse_view("iris", iris_copy)


def test_shape_check_against_paper(iris_copy):
    p = iris_copy / "iris.data"
    p.write_text("\n".join(p.read_text().split("\n")[1:]))
    with pytest.raises(DataError, match=r"\(4, 149, 3\), expected \(4, 150, 3\)"):
        parse_view("iris", iris_copy)


def test_ranking_not_a_permutation(tmp_path):
    (tmp_path / "iris.csv").write_text("2,1,3\n0.5,1,2,3\n0.1,1,1,3\n")
    with pytest.raises(DataError, match=r"iris\.csv: line 3: target is not a permutation"):
        parse_view("rnk_iris", tmp_path)


def test_missing_raw_file(tmp_path):
    with pytest.raises(DataError, match="wine.data is missing"):
        parse_view("wine", tmp_path)


VOC_XML = """<annotation>
  <folder>VOC2007</folder><filename>000005.jpg</filename>
  <size><width>500</width><height>375</height><depth>3</depth></size>
  <object><name>chair</name><pose>Rear</pose><truncated>0</truncated><difficult>0</difficult>
    <bndbox><xmin>263</xmin><ymin>211</ymin><xmax>324</xmax><ymax>339</ymax></bndbox></object>
  <object><name>chair</name><truncated>1</truncated><difficult>1</difficult>
    <bndbox><xmin>5</xmin><ymin>244</ymin><xmax>67</xmax><ymax>374</ymax></bndbox></object>
</annotation>"""


def test_voc_annotation_xml():
    ann = parse_annotation_xml(VOC_XML)
    assert ann["image"] == "000005" and (ann["width"], ann["height"]) == (500, 375)
    assert [o["bbox"] for o in ann["objects"]] == [(263, 211, 324, 339), (5, 244, 67, 374)]
    assert [o["difficult"] for o in ann["objects"]] == [0, 1]
    arr = annotations_to_arrays([ann], ["trainval"])
    assert arr["obj_offsets"].tolist() == [0, 2]
    assert arr["obj_class"].tolist() == [8, 8] and arr["obj_bbox"].dtype == np.int64
    with pytest.raises(DataError, match="unknown class 'chiar'"):
        parse_annotation_xml(VOC_XML.replace("chair", "chiar"), "x.xml")
    with pytest.raises(DataError, match="x.xml: invalid XML"):
        parse_annotation_xml("<annotation>", "x.xml")


def test_voc_view_without_tarballs(tmp_path):
    with pytest.raises(DataError, match="VOCtrainval_06-Nov-2007.tar is missing"):
        parse_view("voc2007", tmp_path)
