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
    with pytest.raises(StructpredError, match="tag ids must lie in 0..3"):
        entity_f1(y, [np.array([1, 1, 0, 2, 4, 2])], NAMES)


@pytest.mark.parametrize("seed", range(6))
def test_entity_f1_equals_seqeval_on_random_taggings(seed):
    """The compiled chunking gives seqeval's own F1, bit for bit, on every scheme's tags, on odd
    names (seqeval's rules: a tag's first character, its type after the first '-'), with no
    chunk at all, and on CoNLL-2003's IOB1 tags."""
    import warnings

    from seqeval.metrics import f1_score

    rng = np.random.default_rng(seed)
    names = ["O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "I-LOC", "E-LOC", "S-LOC", "I-MISC", "B-A-B",
             "I-A-B", "B", "I", "E", "S", ".", "X-PER", "I-", "O-LOC"]
    conll = ["O", "I-PER", "I-LOC", "I-ORG", "I-MISC", "B-LOC", "B-ORG", "B-MISC"]
    for tags, p_out in ((names, 0.2), (conll, 0.6), (["O", "I-PER"], 1.0)):
        for _ in range(40):
            lengths = rng.integers(1, 12, size=rng.integers(1, 8))
            draw = lambda: [np.where(rng.random(m) < p_out, 0, rng.integers(0, len(tags), m))  # noqa: E731
                            for m in lengths]
            y, p = draw(), draw()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = f1_score([[tags[i] for i in s] for s in y], [[tags[i] for i in s] for s in p])
            assert entity_f1(y, p, tags) == ref
