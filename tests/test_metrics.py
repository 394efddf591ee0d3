"""Sequence-tagging F1 scores on hand-checked examples."""

import numpy as np
import pytest

from structpred.errors import StructpredError
from structpred.metrics import entity_f1, token_f1

NAMES = ["O", "I-PER", "I-LOC", "B-LOC"]


def test_token_f1_is_the_support_weighted_f1_without_the_outside_tag():
    y = [np.array([0, 1, 1, 2]), np.array([2, 0])]
    p = [np.array([0, 1, 2, 2]), np.array([0, 0])]
    # PER: precision 1, recall 1/2 -> 2/3 (support 2); LOC: precision 1/2, recall 1/2 -> 1/2 (support 2)
    assert token_f1(y, p, labels=[1, 2, 3]) == pytest.approx((2 / 3 * 2 + 1 / 2 * 2) / 4)
    with pytest.raises(StructpredError, match="tokens"):
        token_f1(y, [np.array([0])], labels=[1])


def test_entity_f1_counts_iob1_chunks_as_conlleval():
    # truth: PER(0-1), LOC(3), LOC(4-5): I-LOC then B-LOC starts a second LOC chunk (IOB1)
    y = [np.array([1, 1, 0, 2, 3, 2])]
    # prediction: PER(0-1) right, one merged LOC(3-5) wrong -> precision 1/2, recall 1/3
    p = [np.array([1, 1, 0, 2, 2, 2])]
    assert entity_f1(y, p, NAMES) == pytest.approx(2 * (1 / 2) * (1 / 3) / (1 / 2 + 1 / 3))
    assert entity_f1(y, y, NAMES) == 1.0
    with pytest.raises(StructpredError, match="length"):
        entity_f1(y, [np.array([1])], NAMES)
