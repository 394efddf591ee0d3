"""Parsers of the sequence sets: OCR handwritten words (M4N) and CK emotion intensity (AGM).

Sequences are stored flat: per-element arrays plus ``offsets`` (n_seq + 1,) int64 so that
sequence i is ``[offsets[i], offsets[i+1])``.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import scipy.io

from structpred.data.tables import lines
from structpred.errors import DataError


def parse_ocr(raw: Path) -> dict[str, np.ndarray]:
    """letter.data.gz (Taskar): one tab-separated line per letter.

    Fields: id, letter, next_id, word_id, position, fold, 128 pixels (16x8 row-major), and
    an empty field from the trailing tab. Letters are sorted by (word_id, position).
    Returns ``X`` (letters, 128) float64, ``y`` (letters,) int64 0..25 (a..z), ``offsets``
    (words + 1,), ``fold`` (words,) int64 0..9. Checks positions 1..len in every word and
    one fold per word.
    """
    path = raw / "letter.data.gz"
    meta, pix = [], []
    for no, line in lines(path):
        if not line:
            continue
        f = line.split("\t")
        if f[-1] == "":
            f.pop()
        if len(f) != 134:
            raise DataError(f"{path}: line {no}: expected 134 fields, got {len(f)}")
        letter = f[1]
        if len(letter) != 1 or not "a" <= letter <= "z":
            raise DataError(f"{path}: line {no}: bad letter {letter!r}")
        try:
            meta.append((int(f[3]), int(f[4]), int(f[5]), ord(letter) - 97))
        except ValueError:
            raise DataError(f"{path}: line {no}: non-integer id/position/fold") from None
        pix.append(f[6:])
    m = np.asarray(meta, dtype=np.int64)
    try:
        X = np.asarray(pix, dtype=np.float64)
    except ValueError:
        raise DataError(f"{path}: non-numeric pixel value") from None
    order = np.lexsort((m[:, 1], m[:, 0]))
    m, X = m[order], X[order]
    word, pos, fold, y = m.T
    starts = np.flatnonzero(np.r_[True, word[1:] != word[:-1]])
    offsets = np.r_[starts, len(word)].astype(np.int64)
    lengths = np.diff(offsets)
    expected_pos = np.arange(len(word)) - np.repeat(offsets[:-1], lengths) + 1
    if not np.array_equal(pos, expected_pos):
        raise DataError(f"{path}: letter positions are not 1..len within every word")
    if np.any(fold != np.repeat(fold[offsets[:-1]], lengths)):
        raise DataError(f"{path}: a word spans several folds")
    return {"X": X, "y": y.astype(np.int64), "offsets": offsets,
            "fold": fold[offsets[:-1]].astype(np.int64)}


def parse_emotion(raw: Path) -> dict[str, np.ndarray]:
    """ck.mat (MATLAB v5) + ids_random.mat (v7.3/HDF5).

    ``data`` is a 1x167 cell of structs (X: 25 x frames, Y: emotion 1..6, H: intensity per
    frame). Returns ``X`` (frames, 25) float64, ``y`` (frames,) int64 = round(H) - 1 in 0..2,
    ``offsets`` (168,), ``emotion`` (167,) int64 = Y - 1, and ``splits`` (20, 167) int64:
    row j = MATLAB column j of ``ids`` minus 1 (0-based permutation of the sequences).
    """
    path = raw / "ck.mat"
    try:
        cells = scipy.io.loadmat(path)["data"].ravel()
    except (OSError, ValueError, KeyError) as exc:
        raise DataError(f"{path}: cannot read variable 'data' ({exc})") from None
    Xs, ys, emo = [], [], []
    for i, s in enumerate(cells):
        x = np.asarray(s["X"][0, 0], dtype=np.float64)
        h = np.asarray(s["H"][0, 0], dtype=np.float64).ravel()
        if x.ndim != 2 or x.shape[1] != len(h):
            raise DataError(f"{path}: sequence {i}: X {x.shape} does not match {len(h)} labels H")
        Xs.append(x.T)
        ys.append(np.rint(h).astype(np.int64) - 1)
        emo.append(int(np.asarray(s["Y"][0, 0]).ravel()[0]) - 1)
    offsets = np.r_[0, np.cumsum([len(v) for v in ys])].astype(np.int64)
    ids_path = raw / "ids_random.mat"
    try:
        with h5py.File(ids_path, "r") as fh:
            splits = np.asarray(fh["ids"][()], dtype=np.int64) - 1
    except (OSError, KeyError) as exc:
        raise DataError(f"{ids_path}: cannot read HDF5 variable 'ids' ({exc})") from None
    n = len(cells)
    if splits.ndim != 2 or splits.shape[1] != n or not np.all(np.sort(splits, axis=1) == np.arange(n)):
        raise DataError(f"{ids_path}: 'ids' rows are not permutations of 1..{n}")
    return {"X": np.vstack(Xs), "y": np.concatenate(ys), "offsets": offsets,
            "emotion": np.asarray(emo, dtype=np.int64), "splits": splits}
