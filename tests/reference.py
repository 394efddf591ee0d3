"""Shared references for the tests: brute-force enumeration of small output spaces."""

from __future__ import annotations

import itertools

import numpy as np



def enumerate_outputs(space, size=None):
    """Every output of a small space: class indices, permutations of M, or label sequences of
    length ``size`` (chains)."""
    if space.ragged:
        return [np.array(s, dtype=np.int64) for s in itertools.product(range(space.n_labels), repeat=size)]
    if space.label_shape == ():
        return [np.int64(j) for j in range(space.n_labels)]
    return [np.array(p, dtype=np.int64) for p in itertools.permutations(range(space.label_shape[0]))]
