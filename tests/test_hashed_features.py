"""Casimir's hashed window features: scores against a literal transcription of the reference
templates (all 27, label-free ones and quirks included) over every labelling of small
sentences; the gradient scatter as the adjoint of the score; the vocabulary rules."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from structpred.errors import StructpredError
from structpred.features.hashed import (
    HASH_DIM,
    HashedWindowJoint,
    WindowTokens,
    WindowVocabulary,
)
from structpred.outputs import Chain
from structpred.solvers import check_problem
from structpred.surrogates import Hinge

START, STOP = -1, -2


def h(j, a, b):
    return (((17 * 31 + j) * 31 + a) * 31 + b) % HASH_DIM


def reference_slots(tok, t, p, y):
    """The reference's 27 weight indices at position t for previous tag p and tag y."""
    T = len(tok)
    w = lambda k: tok[k][0] if 0 <= k < T else (START if k < 0 else STOP)  # noqa: E731
    pos = lambda k: tok[k][1] if 0 <= k < T else (START if k < 0 else STOP)  # noqa: E731
    chk = lambda k: tok[k][2] if 0 <= k < T else (START if k < 0 else STOP)  # noqa: E731
    s = [h(0, w(t), y), h(1, w(t), p)]
    s += [h(2, w(t - 2), y), h(3, w(t - 2), p)] if t > 1 else [0, 0]  # quirk: raw index 0
    s += [h(4, w(t + 2), y), h(5, w(t + 2), p)] if t < T - 2 else [0, 0]
    s += [h(6, w(t - 1), y), h(7, w(t - 1), p), h(8, w(t + 1), y), h(9, w(t + 1), p), h(10, p, y)]
    s += [h(11, pos(t - 1), pos(t)), h(12, pos(t), pos(t + 1)), h(13, chk(t - 1), chk(t)), h(14, chk(t), chk(t + 1))]
    for j0, lab in ((15, y), (21, p)):
        s += [h(j0, lab, pos(t)), h(j0 + 1, lab, pos(t + 1)), h(j0 + 2, lab, pos(t - 1)),
              h(j0 + 3, lab, chk(t)), h(j0 + 4, lab, chk(t + 1)), h(j0 + 5, lab, chk(t - 1))]
    return s


def reference_score(tok, y, W):
    return sum(W[k] for t in range(len(tok)) for k in reference_slots(tok, t, y[t - 1] if t else START, y[t]))


def sentence(rng, T):
    return np.c_[rng.integers(0, 40, T), rng.integers(0, 9, T), rng.integers(0, 5, T)]


@pytest.mark.parametrize("T", [1, 2, 3, 5])
def test_scores_match_the_reference_templates_up_to_a_label_free_constant(T):
    rng = np.random.default_rng(T)
    R = 3
    toks = [sentence(rng, T), sentence(rng, 4)]
    X = WindowTokens(np.vstack(toks), [0, T, T + 4])
    fmap = HashedWindowJoint(X, R)
    sp = Chain(R, normalize=False, joint_map="hashed_window")
    W = rng.normal(size=HASH_DIM)
    v = fmap.score(0, W)
    diffs = [sp.embed(np.array(y)) @ v - reference_score(toks[0], y, W)
             for y in itertools.product(range(R), repeat=T)]
    assert np.ptp(diffs) < 1e-10  # the same constant for every labelling
    assert fmap.scores(W)[1].shape == (4 * R + 3 * R * R,)


def test_gradient_scatter_is_the_adjoint_of_the_score():
    rng = np.random.default_rng(0)
    X = WindowTokens(np.vstack([sentence(rng, 6), sentence(rng, 1)]), [0, 6, 7])
    fmap = HashedWindowJoint(X, 4)
    for i in range(2):
        W = rng.normal(size=HASH_DIM)
        g = rng.normal(size=fmap.score(i, W).size)
        G = np.zeros(HASH_DIM)
        fmap.add(i, G, g)
        assert abs(G @ W - g @ fmap.score(i, W)) < 1e-9
        assert abs(fmap.norm2(i, g) - G @ G) < 1e-9


def test_hinge_at_zero_is_the_number_of_tokens():
    """The reference's sanity anchor: F(0) is the mean sentence length (unnormalised Hamming)."""
    rng = np.random.default_rng(1)
    lengths = [3, 7, 1, 5]
    X = WindowTokens(np.vstack([sentence(rng, T) for T in lengths]), np.r_[0, np.cumsum(lengths)])
    y = [rng.integers(0, 8, T) for T in lengths]
    sp = Chain(8, normalize=False, joint_map="hashed_window")
    problem = check_problem(sp, X, y, 0.1)
    assert problem.primal(Hinge(sp), np.zeros(HASH_DIM)) == pytest.approx(np.mean(lengths))
    with pytest.raises(StructpredError, match="length"):
        check_problem(sp, X, [np.zeros(T + 1, dtype=int) for T in lengths], 0.1)


def test_vocabulary_threshold_order_and_unseen_tags():
    words = ["a", "b", "a", "c", "a", "b", "b", "d"]
    voc = WindowVocabulary(threshold=2).fit(words, ["N"] * 7 + ["V"], ["I"] * 8)
    assert voc.words_ == {"a": 1, "b": 2}  # seen more than twice, first-appearance order
    ids = voc.encode(["b", "zzz", "a"], ["V", "N", "N"], ["I", "I", "I"])
    assert ids.tolist() == [[2, 1, 0], [0, 0, 0], [1, 0, 0]]
    with pytest.raises(StructpredError, match="POS tag 'X' was not seen in training"):
        voc.encode(["a"], ["X"], ["I"])
    with pytest.raises(StructpredError, match="offsets"):
        WindowTokens(ids, [0, 2])


def test_window_splits_fit_on_train_and_encode_every_part():
    from structpred.features.hashed import window_splits

    words = ["EU", "rejects", "EU", "call", "EU", "Peter", "EU", "x"]
    arrays = {"words": np.array(words), "pos": np.array(["N", "V", "N", "N", "N", "N", "N", "V"]),
              "chunk": np.array(["I"] * 8), "tags": np.array(["I-ORG", "O", "I-ORG", "O", "I-ORG", "O", "I-ORG", "O"], dtype="<U5"),
              "offsets": np.array([0, 2, 4, 6, 8]), "part": np.array(["train", "train", "testa", "testb"])}
    splits, tags = window_splits(arrays)
    assert tags == ["I-ORG", "O"]
    X, y = splits["train"]
    assert X.n == 2 and X.tokens[:, 0].tolist() == [0, 0, 0, 0]  # "EU" seen twice in train only
    assert [s.tolist() for s in y] == [[0, 1], [0, 1]]
    arrays["tags"][5] = "I-PER"
    with pytest.raises(StructpredError, match="were not seen in 'train'"):
        window_splits(arrays)
    with pytest.raises(StructpredError, match="no 'dev' sentences"):
        window_splits(arrays, fit_part="dev")


def test_bcfw_trains_on_the_hashed_map_with_a_certified_gap():
    """Casimir's BCFW baseline: the library's M3N on the same map and objective."""
    from structpred.estimators import M3N

    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 12, size=120)
    words = rng.integers(1, 30, size=lengths.sum())
    X = WindowTokens(np.c_[words, rng.integers(0, 5, words.size), rng.integers(0, 3, words.size)],
                     np.r_[0, np.cumsum(lengths)])
    y = np.split(words % 4, np.cumsum(lengths)[:-1])
    model = M3N(loss=Chain(4, normalize=False, joint_map="hashed_window"), lam=1e-2, n_passes=10,
                random_state=0).fit(X, y)
    hist = model.history_
    assert (hist["dual"] <= hist["primal"] + 1e-12).all()
    assert hist["gap"].iloc[-1] < 0.2 * hist["gap"].iloc[0]
    assert model.task_loss(X, y) == 0.0
