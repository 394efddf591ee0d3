"""Parser of MovieLens 100K (QS Table 1): ratings, user attributes, item genres."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from structpred.data.tables import rows
from structpred.errors import DataError


def parse_movielens(raw: Path) -> dict[str, np.ndarray]:
    """u.data, u.user, u.item (Latin-1).

    Returns ``ratings`` (100000, 4) int64 (user, item, rating 1..5, timestamp; user/item ids
    0-based), ``user_age`` (943,) int64, ``user_gender`` and ``user_occupation`` (943,)
    unicode, ``item_genres`` (1682, 19) int64 0/1 in u.genre order.
    """
    path = raw / "u.data"
    r = rows(path, 4, "\t")
    try:
        ratings = np.asarray([[int(v) for v in f] for _, f in r], dtype=np.int64)
    except ValueError:
        raise DataError(f"{path}: non-integer field") from None
    ratings[:, :2] -= 1
    upath = raw / "u.user"
    users = rows(upath, 5, "|")
    ipath = raw / "u.item"
    items = rows(ipath, 24, "|", encoding="latin-1")
    if [int(f[0]) for _, f in users] != list(range(1, len(users) + 1)):
        raise DataError(f"{upath}: user ids are not 1..{len(users)} in order")
    if [int(f[0]) for _, f in items] != list(range(1, len(items) + 1)):
        raise DataError(f"{ipath}: item ids are not 1..{len(items)} in order")
    if not (np.all((ratings[:, 0] >= 0) & (ratings[:, 0] < len(users)))
            and np.all((ratings[:, 1] >= 0) & (ratings[:, 1] < len(items)))
            and np.all((ratings[:, 2] >= 1) & (ratings[:, 2] <= 5))):
        raise DataError(f"{path}: user/item id or rating out of range")
    return {
        "ratings": ratings,
        "user_age": np.asarray([int(f[1]) for _, f in users], dtype=np.int64),
        "user_gender": np.asarray([f[2] for _, f in users], dtype=str),
        "user_occupation": np.asarray([f[3] for _, f in users], dtype=str),
        "item_genres": np.asarray([[int(v) for v in f[5:]] for _, f in items], dtype=np.int64),
    }
