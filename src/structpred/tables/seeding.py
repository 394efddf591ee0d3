"""Deterministic random streams: every draw derives from the config seed and a few names."""

from __future__ import annotations

import zlib

import numpy as np


def _key(part: object) -> int:
    """Stable 32-bit integer for a name or number (Python's hash() is salted per process)."""
    if isinstance(part, (int, np.integer)) and not isinstance(part, bool):
        return int(part)
    return zlib.crc32(str(part).encode("utf-8"))


def seed_sequence(seed: int, *keys: object) -> np.random.SeedSequence:
    """SeedSequence for (seed, key_1, ..., key_m); equal inputs give equal streams on any machine."""
    return np.random.SeedSequence([int(seed), *(_key(k) for k in keys)])


def rng_for(seed: int, *keys: object) -> np.random.Generator:
    """A ``numpy.random.Generator`` for (seed, keys)."""
    return np.random.default_rng(seed_sequence(seed, *keys))


def int_seed(seed: int, *keys: object) -> int:
    """A 31-bit integer seed for APIs that want an int (scikit-learn ``random_state``)."""
    return int(seed_sequence(seed, *keys).generate_state(1)[0] & 0x7FFFFFFF)
