"""Random train/validation/test splits and the per-split feature files the learners read."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from structpred.data.discretize import bin_target
from structpred.errors import ConfigError
from structpred.features import NystromGaussian, Sequences
from structpred.io import atomic_path
from structpred.tables.job import JobSettings
from structpred.tables.seeding import int_seed, rng_for

log = logging.getLogger(__name__)


def subsample_indices(n: int, size: int | None, rng: np.random.Generator) -> np.ndarray:
    """Sorted indices of ``size`` rows drawn without replacement (all rows when size is None or >= n)."""
    if size is None or size >= n:
        return np.arange(n)
    return np.sort(rng.choice(n, size=size, replace=False))


def random_split(n: int, fractions, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shuffle 0..n-1 and cut it into train/validation/test parts of the given fractions.

    Sizes: n_val = round(f_val n), n_test = round(f_test n), train gets the rest, so the
    three parts always cover all rows exactly once.
    """
    f_train, f_val, f_test = (float(f) for f in fractions)
    if abs(f_train + f_val + f_test - 1.0) > 1e-9:
        raise ConfigError(f"split fractions must sum to 1, got {fractions}")
    n_val, n_test = int(round(f_val * n)), int(round(f_test * n))
    if n - n_val - n_test < 2 or n_val < 1 or n_test < 1:
        raise ConfigError(f"{n} rows are too few for split fractions {fractions}")
    perm = rng.permutation(n)
    return perm[n_val + n_test:], perm[:n_val], perm[n_val:n_val + n_test]


def _positions(offsets: np.ndarray, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of the positions of sequences ``seqs`` (in that order) and their offsets."""
    lengths = np.diff(offsets)[seqs]
    rows = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in seqs])
    return rows, np.r_[0, np.cumsum(lengths)].astype(np.int64)


def subsample_train(split: dict[str, np.ndarray], fraction: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``split`` with its training part cut to ``round(fraction n)`` of its ``n`` examples (sequences
    for a sequence split, their positions kept whole), drawn without replacement and kept in their
    order; the validation and test parts as they are."""
    if not 0 < fraction <= 1:
        raise ConfigError(f"a training subsample is a fraction in (0, 1], got {fraction}")
    sequences = "offsets_train" in split
    n = len(split["offsets_train"]) - 1 if sequences else len(split["y_train"])
    keep = subsample_indices(n, max(2, int(round(fraction * n))), rng)
    out = dict(split)
    if sequences:
        rows, out["offsets_train"] = _positions(split["offsets_train"], keep)
        per_sequence = [k for k in ("index_train", "groups_train") if k in split]
        out.update({k: split[k][keep] for k in per_sequence})
        out.update({k: split[k][rows] for k in ("X_train", "y_train")})
    else:
        out.update({k: split[k][keep] for k in ("X_train", "y_train", "index_train") if k in split})
    return out


@dataclass(frozen=True)
class SplitFeatures(JobSettings):
    """What defines a split's feature file (an experiment's ``feature_settings``, checked):
    ``fractions`` of the train / validation / test parts, ``n_components`` Nystrom centres
    (``whiten``: with ``K_mm^-1/2``), a ``subsample`` of the view's rows (``None``: all), the
    ``binning`` of an ordinal view's target (``None``: the view's labels) and the config's ``seed``."""

    fractions: tuple
    n_components: int
    seed: int
    whiten: bool = False
    subsample: int | None = None
    binning: str | None = None


def build_split_features(arrays: dict[str, np.ndarray], features: SplitFeatures, *, view: str,
                         split: int) -> dict[str, np.ndarray]:
    """Split (X, y) of ``view`` and map it through Nystrom Gaussian features fitted on the
    training part, as ``features`` says.

    ``whiten=False`` is the M4N reference code's map (standardised K(x, centres), no K_mm^-1/2).
    The subsample (e.g. 15000 letter rows) is drawn once per view, independently of the
    split; each split then draws its own permutation. Returns X/y for train, val and test.
    Sequence views (with ``offsets``, e.g. OCR words) are split by sequence; the Nystrom
    map is fitted on the training positions (letters) and applied per position; each part
    then also has ``offsets_<part>`` and ``index_<part>`` holds sequence indices.
    ``binning``: an ordinal view's labels are recut from its regression ``target`` into as many
    bins by that scheme (:func:`~structpred.data.discretize.bin_target`; the edges are stored
    as ``bin_edges``, the counts logged); ``None`` keeps the view's labels.
    """
    X = arrays["X"]
    y = arrays["Y"] if "Y" in arrays else arrays["y"]  # label rankings: (n, M) rank positions
    extra = {}
    if features.binning is not None:
        if "target" not in arrays:
            raise ConfigError(f"binning {features.binning!r} asked for {view}, which has no regression target")
        y, extra["bin_edges"] = bin_target(arrays["target"], int(y.max()) + 1, features.binning)
        log.info("%s: %s bins, counts %s, edges %s", view, features.binning, np.bincount(y, minlength=extra["bin_edges"].shape[0] - 1).tolist(),
                 np.array2string(extra["bin_edges"], precision=4))
    nys = NystromGaussian(n_components=features.n_components, whiten=features.whiten,
                          random_state=int_seed(features.seed, view, "nystrom", split))
    if "offsets" in arrays:
        offsets = arrays["offsets"]
        keep = subsample_indices(len(offsets) - 1, features.subsample, rng_for(features.seed, view, "subsample"))
        parts = dict(zip(("train", "val", "test"),
                         random_split(len(keep), features.fractions, rng_for(features.seed, view, "split", split))))
        rows = {p: _positions(offsets, keep[idx]) for p, idx in parts.items()}
        nys.fit(X[rows["train"][0]])
        out = {}
        for p, idx in parts.items():
            r, off = rows[p]
            out.update({f"X_{p}": nys.transform(X[r]), f"y_{p}": y[r], f"offsets_{p}": off,
                        f"index_{p}": keep[idx]})
        return out
    keep = subsample_indices(len(y), features.subsample, rng_for(features.seed, view, "subsample"))
    X, y = X[keep], y[keep]
    tr, va, te = random_split(len(y), features.fractions, rng_for(features.seed, view, "split", split))
    nys.fit(X[tr])
    return {
        "X_train": nys.transform(X[tr]), "y_train": y[tr],
        "X_val": nys.transform(X[va]), "y_val": y[va],
        "X_test": nys.transform(X[te]), "y_test": y[te],
        "index_train": keep[tr], "index_val": keep[va], "index_test": keep[te], **extra,
    }


def split_part(split: dict[str, np.ndarray], part: str, n_groups: int | None = None):
    """``(X, y)`` of one part (``train`` / ``val`` / ``test``) as the estimators take it: arrays,
    or for sequence splits a :class:`structpred.features.Sequences` (with ``groups_<part>``
    if stored) and a list of label arrays."""
    X, y = split[f"X_{part}"], split[f"y_{part}"]
    if f"offsets_{part}" not in split:
        return X, y

    seq = Sequences(X, split[f"offsets_{part}"], split.get(f"groups_{part}"), n_groups)
    return seq, seq.split_labels(y)


def save_split(path: str | Path, arrays: dict[str, np.ndarray], meta: dict) -> None:
    """Write the split arrays and a JSON description atomically (npz, no pickles)."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, meta=np.array(json.dumps(meta, sort_keys=True)), **arrays)
    count = lambda p: len(arrays[f"offsets_{p}"]) - 1 if f"offsets_{p}" in arrays else len(arrays[f"y_{p}"])
    log.info("wrote %s (%d train / %d val / %d test samples)", path, count("train"), count("val"), count("test"))


def load_split(path: str | Path) -> tuple[dict[str, np.ndarray], dict]:
    """Read a file written by :func:`save_split`."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files if k != "meta"}
        meta = json.loads(str(data["meta"]))
    return arrays, meta
