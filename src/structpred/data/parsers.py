"""Views: parsed datasets with a fixed array schema per task, checked against the papers.

A :class:`View` names a raw :class:`~structpred.data.registry.Source`, a task and a parse
function ``parse(raw_folder) -> dict[str, np.ndarray]``. :func:`parse_view` runs it and then
:func:`validate` checks the task schema (dtypes, label ranges, no NaN, offsets) and that the
parsed ``(d, n, k)`` equals ``View.expected``; where that differs from the paper's
``View.paper_dnk`` the reason is in ``View.deviations`` (a test enforces it).

Schemas (``(d, n, k)`` meaning per task in :func:`dnk`):

* ``mc``/``ord``: ``X`` (n, d) float64, ``y`` (n,) int64 0..k-1; ``ord`` adds ``target``
  (n,) float64 (raw regression target; ``y`` = its equal-frequency bins).
* ``rnk``: ``X`` (n, d) float64, ``Y`` (n, k) int64 0-based rank position of each label.
* ``seq`` (ocr): ``X`` (letters, 128), ``y`` (letters,) 0..25, ``offsets``, ``fold``; n = words.
* ``emotion``: ``X`` (frames, 25), ``y`` (frames,) 0..2, ``offsets``, ``emotion``, ``splits``;
  n = sequences.
* ``ner``: unicode ``words``, ``pos``, ``chunk``, ``tags``, ``offsets``, ``part``; n = sentences.
* ``srl``: dictionary-encoded token columns (see :func:`structpred.data.text.parse_conll2005`).
* ``ratings``: ``ratings`` (100000, 4), user and item attributes; n = ratings, k = 5 levels.
* ``digits``: ``X`` (9298, 256) in [-1, 1], ``y`` 0..9, ``part``.
* ``voc``: per-image and per-object annotation arrays (:mod:`structpred.data.voc`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from structpred.data import movielens, ranking, sequences, tabular, text, usps, voc
from structpred.errors import DataError

DNK = tuple[int | None, int | None, int | None]


@dataclass(frozen=True)
class View:
    """A parsed dataset: ``parse(raw_folder)`` -> arrays with the schema of ``task``."""

    name: str
    source: str
    task: str
    paper_dnk: DNK | None
    parse: Callable[[Path], dict[str, np.ndarray]]
    deviations: str = ""
    expected: DNK | None = None


_ONE_LESS = (
    "Paper n is one less than the rows of the UCI file; the paper's loader most likely lost "
    "a header/last row. All rows are kept."
)

_VIEWS = [
    View("segment", "segment", "mc", (19, 2310, 7), tabular.parse_segment),
    View("iris", "iris", "mc", (4, 150, 3), tabular.parse_iris),
    View("wine", "wine", "mc", (13, 178, 3), tabular.parse_wine),
    View("vehicle", "vehicle", "mc", (18, 846, 4), tabular.parse_vehicle),
    View("satimage", "satimage", "mc", (36, 4435, 6), tabular.parse_satimage,
         "sat.trn only (sat.tst unused); classes 1,2,3,4,5,7 remapped to 0..5."),
    View("letter", "letter", "mc", (16, 15000, 26), tabular.parse_letter,
         "All 20000 rows are kept; the experiment subsamples the paper's 15000.",
         (16, 20000, 26)),
    View("mfeat", "mfeat", "mc", (216, 2000, 10), tabular.parse_mfeat,
         "mfeat-fac features only (the paper's d = 216)."),
    View("wisconsin", "wisconsin", "ord", (32, 193, 5), tabular.parse_wisconsin,
         "4 rows with '?' lymph status dropped (198 -> 194); id and outcome not features; "
         "target = time in 5 equal-frequency bins. " + _ONE_LESS, (32, 194, 5)),
    View("stocks", "stocks", "ord", (9, 949, 5), tabular.parse_stocks,
         "Target is the FIRST column of this derived file; 5 equal-frequency bins. "
         + _ONE_LESS, (9, 950, 5)),
    View("machine", "machine", "ord", (6, 208, 10), tabular.parse_machine,
         "Features MYCT..CHMAX; target PRP in 10 equal-frequency bins; ERP excluded. "
         + _ONE_LESS, (6, 209, 10)),
    View("abalone", "abalone", "ord", (10, 4176, 10), tabular.parse_abalone,
         "Sex one-hot (M, F, I) + 7 measurements; target rings in 10 equal-frequency bins "
         "(ties make them uneven). " + _ONE_LESS, (10, 4177, 10)),
    View("auto", "auto", "ord", (7, 391, 10), tabular.parse_auto,
         "6 rows with '?' horsepower dropped (398 -> 392); car name dropped; target mpg in 10 "
         "equal-frequency bins. " + _ONE_LESS, (7, 392, 10)),
    View("ocr", "ocr", "seq", (128, 6877, 26), sequences.parse_ocr,
         "n counts words (52152 letters)."),
    *[
        View(f"rnk_{n}", "label_ranking", "rnk", dnk, ranking.ranking_parser(n),
             "" if dnk else "Not in M4N Table 1 (extra set of the same benchmark).", exp)
        for n, dnk, exp in [
            ("glass", (9, 214, 6), None), ("bodyfat", (7, 252, 7), None),
            ("wine", (13, 178, 3), None), ("vowel", (10, 528, 11), None),
            ("vehicle", (18, 846, 4), None), ("iris", None, (4, 150, 3)),
        ]
    ],
    View("emotion", "emotion_intensity_ck", "emotion", (25, 167, 3), sequences.parse_emotion,
         "n counts sequences (3026 frames); y = round(H) - 1."),
    View("conll2003", "conll2003", "ner", None, text.parse_conll2003,
         "No (d, n, k) in the paper; 14041/3250/3453 sentences; -DOCSTART- lines skipped; 8 "
         "IOB1 tags as in the file (Casimir counts 7).", (None, 20744, 8)),
    View("conll2005", "conll2005", "srl", None, text.parse_conll2005,
         "Token columns words, synt.cha (POS, parse), ne, props; dictionary-encoded; the "
         "paper's pruned-tree 9-class problem is built by the featurizer.", (None, 44020, None)),
    View("movielens", "ml-100k", "ratings", None, movielens.parse_movielens,
         "n counts ratings, k rating levels.", (None, 100000, 5)),
    View("usps", "usps", "digits", None, usps.parse_usps,
         "train (7291) and test (2007) concatenated, marked by part.", (256, 9298, 10)),
    View("voc2007", "voc2007", "voc", None, voc.parse_voc2007,
         "Annotations only; raw tarballs not available here (checksum not pinned)."),
]

VIEWS: dict[str, View] = {v.name: v for v in _VIEWS}


def get_view(name: str) -> View:
    """The :class:`View` called ``name``; DataError listing the known views if unknown."""
    try:
        return VIEWS[name]
    except KeyError:
        raise DataError(f"unknown view {name!r}; known: {', '.join(sorted(VIEWS))}") from None


def expected_dnk(view: View) -> DNK | None:
    """The (d, n, k) the parser must produce: ``view.expected`` or else the paper's."""
    return view.expected if view.expected is not None else view.paper_dnk


def dnk(task: str, a: dict[str, np.ndarray]) -> DNK:
    """Parsed (d, n, k) in the papers' sense for ``task`` (None where undefined)."""
    if task in ("mc", "ord", "digits"):
        return a["X"].shape[1], a["X"].shape[0], len(np.unique(a["y"]))
    if task == "rnk":
        return a["X"].shape[1], a["X"].shape[0], a["Y"].shape[1]
    if task in ("seq", "emotion"):
        return a["X"].shape[1], len(a["offsets"]) - 1, len(np.unique(a["y"]))
    if task == "ner":
        return None, len(a["offsets"]) - 1, len(np.unique(a["tags"]))
    if task == "srl":
        return None, len(a["offsets"]) - 1, None
    if task == "ratings":
        return None, a["ratings"].shape[0], len(np.unique(a["ratings"][:, 2]))
    if task == "voc":
        return None, len(a["image"]), len(voc.VOC_CLASSES)
    raise DataError(f"unknown task {task!r}")


def _need(name: str, a: dict, key: str, dtype, ndim: int) -> np.ndarray:
    if key not in a:
        raise DataError(f"view {name}: missing array {key!r}")
    v = a[key]
    if not isinstance(v, np.ndarray) or v.ndim != ndim:
        ok = False
    elif dtype is str:
        ok = v.dtype.kind == "U"
    else:
        ok = v.dtype == np.dtype(dtype)
    if not ok:
        raise DataError(f"view {name}: {key!r} is {getattr(v, 'dtype', type(v))} "
                        f"ndim {getattr(v, 'ndim', '?')}, expected {dtype} ndim {ndim}")
    return v


def _check_offsets(name: str, off: np.ndarray, total: int) -> None:
    if off[0] != 0 or off[-1] != total or np.any(np.diff(off) <= 0):
        raise DataError(f"view {name}: offsets must rise strictly from 0 to {total}")


def validate(view: View, a: dict[str, np.ndarray]) -> DNK:
    """Check the task schema of ``a`` and its (d, n, k) against the view; return (d, n, k)."""
    nm, t = view.name, view.task
    if t in ("mc", "ord", "seq", "emotion", "digits", "rnk"):
        X = _need(nm, a, "X", np.float64, 2)
        if not np.all(np.isfinite(X)):
            raise DataError(f"view {nm}: X contains NaN or infinite values")
    if t in ("mc", "ord", "seq", "emotion", "digits"):
        y = _need(nm, a, "y", np.int64, 1)
        if len(y) != len(X):
            raise DataError(f"view {nm}: X has {len(X)} rows but y has {len(y)}")
        k = len(np.unique(y))
        if y.min() != 0 or y.max() != k - 1:
            raise DataError(f"view {nm}: labels are not 0..k-1 with every class present")
    if t == "ord":
        tg = _need(nm, a, "target", np.float64, 1)
        if len(tg) != len(y):
            raise DataError(f"view {nm}: target length differs from y")
    if t == "rnk":
        Y = _need(nm, a, "Y", np.int64, 2)
        if Y.shape[0] != X.shape[0] or not np.all(np.sort(Y, axis=1) == np.arange(Y.shape[1])):
            raise DataError(f"view {nm}: Y rows are not permutations of 0..k-1")
    if t in ("seq", "emotion"):
        _check_offsets(nm, _need(nm, a, "offsets", np.int64, 1), len(y))
    if t == "seq" and len(_need(nm, a, "fold", np.int64, 1)) != len(a["offsets"]) - 1:
        raise DataError(f"view {nm}: one fold per word expected")
    if t == "emotion":
        if len(_need(nm, a, "emotion", np.int64, 1)) != len(a["offsets"]) - 1:
            raise DataError(f"view {nm}: one emotion per sequence expected")
        _need(nm, a, "splits", np.int64, 2)
    if t == "ner":
        n_tok = len(_need(nm, a, "words", str, 1))
        for key in ("pos", "chunk", "tags"):
            if len(_need(nm, a, key, str, 1)) != n_tok:
                raise DataError(f"view {nm}: {key} length differs from words")
        _check_offsets(nm, _need(nm, a, "offsets", np.int64, 1), n_tok)
        if len(_need(nm, a, "part", str, 1)) != len(a["offsets"]) - 1:
            raise DataError(f"view {nm}: one part per sentence expected")
    if t == "srl":
        n_tok = len(_need(nm, a, "words", np.int64, 1))
        for c in text.SRL_COLUMNS:
            ids, vocab = _need(nm, a, c, np.int64, 1), _need(nm, a, f"{c}_vocab", str, 1)
            if len(ids) != n_tok or ids.min() < 0 or ids.max() >= len(vocab):
                raise DataError(f"view {nm}: column {c} is inconsistent with its vocabulary")
        _check_offsets(nm, _need(nm, a, "offsets", np.int64, 1), n_tok)
    if t == "ratings":
        if _need(nm, a, "ratings", np.int64, 2).shape[1] != 4:
            raise DataError(f"view {nm}: ratings must have 4 columns")
        _need(nm, a, "item_genres", np.int64, 2)
    got = dnk(t, a)
    exp = expected_dnk(view)
    if exp is not None and tuple(got) != tuple(exp):
        raise DataError(f"view {nm}: parsed (d, n, k) = {got}, expected {exp}")
    return got


def parse_view(name: str, raw: str | Path) -> dict[str, np.ndarray]:
    """Parse the verified raw folder ``raw`` of view ``name`` and validate the result."""
    view = get_view(name)
    raw = Path(raw)
    if not raw.is_dir():
        raise DataError(f"raw folder {raw} of view {name} does not exist (run data fetch)")
    arrays = view.parse(raw)
    validate(view, arrays)
    return arrays
