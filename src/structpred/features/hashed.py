"""Hashed window features for sequence tagging (Casimir §7.1, CoNLL-2003 NER), as a joint map.

A sentence is a ``(T, 3)`` int array of (word, POS, chunk) ids (:class:`WindowVocabulary`
encodes tokens: words seen more than ``threshold`` times in training, else the unknown id 0;
POS and chunk ids from training).  The score of tags ``y`` is ``sum_t s_t(y_{t-1}, y_t)`` with
``y_{-1} = START`` and ``s_t(p, y) = sum_j w[h(j, a_j, b_j)]`` over the templates of the
reference code: the current tag ``y`` (templates 0, 2, 4, 6, 8, 15-20) or the previous tag
``p`` (1, 3, 5, 7, 9, 21-26) paired with the word at offsets 0, -2, +2, -1, +1 and with the POS
and chunk tags at t, t+1, t-1; and the tag bigram (10).  ``h(j, a, b) = (17 * 31^3 + 31^2 j +
31 a + b) mod (2^16 - 1)``, collisions add up (counts, not indicators).  Templates that do not
involve a tag (the reference's 11-14, out-of-sentence +-2 words, the previous tag at t = 0)
add the same constant to every labelling and are left out: scores, losses' argmaxes and
gradients do not change.

The reference code's settings are summarised in ``docs/papers/casimir_reference_settings.md``.
In the chain layout of :class:`structpred.outputs.Chain` the tag-``y`` templates (and the bigram
``(START, y)`` at t = 0) are the unaries ``U[t, y]``, the tag-``p`` templates and the bigram at
t >= 1 the pairwise scores ``P[t-1, p, y]``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from numba import njit

from structpred.errors import StructpredError

HASH_DIM = 2**16 - 1
START, STOP = -1, -2
UNKNOWN_WORD = 0


@njit(cache=True, inline="always")
def _h(j, a, b, dim):
    return (506447 + 961 * j + 31 * a + b) % dim


@njit(cache=True, inline="always")
def _label_slots(tok, a, T, t, previous, dim, idx):
    """The 12 indices (``-1``: absent) of the templates at position ``t`` that pair the label
    0, as the current tag (templates 0, 2, 4, 6, 8, 15-20 and the bigram from START at t = 0)
    or, if ``previous``, as the previous one (1, 3, 5, 7, 9, 21-26), with the window; label
    ``l``'s indices follow by :func:`_next_label` (the label enters the hash as ``+ l`` or
    ``+ 31 l``, so each step adds 1 or 31 modulo ``dim``)."""
    jw = 1 if previous else 0
    jt = 21 if previous else 15
    wm1 = tok[a + t - 1, 0] if t > 0 else START
    wp1 = tok[a + t + 1, 0] if t < T - 1 else STOP
    posm1 = tok[a + t - 1, 1] if t > 0 else START
    chkm1 = tok[a + t - 1, 2] if t > 0 else START
    posp1 = tok[a + t + 1, 1] if t < T - 1 else STOP
    chkp1 = tok[a + t + 1, 2] if t < T - 1 else STOP
    idx[0] = _h(jw, tok[a + t, 0], 0, dim)
    idx[1] = _h(2 + jw, tok[a + t - 2, 0], 0, dim) if t > 1 else -1
    idx[2] = _h(4 + jw, tok[a + t + 2, 0], 0, dim) if t < T - 2 else -1
    idx[3] = _h(6 + jw, wm1, 0, dim)
    idx[4] = _h(8 + jw, wp1, 0, dim)
    idx[5] = _h(jt, 0, tok[a + t, 1], dim)
    idx[6] = _h(jt + 1, 0, posp1, dim)
    idx[7] = _h(jt + 2, 0, posm1, dim)
    idx[8] = _h(jt + 3, 0, tok[a + t, 2], dim)
    idx[9] = _h(jt + 4, 0, chkp1, dim)
    idx[10] = _h(jt + 5, 0, chkm1, dim)
    idx[11] = _h(10, START, 0, dim) if t == 0 and not previous else -1


@njit(cache=True, inline="always")
def _next_label(idx, dim):
    """The indices of :func:`_label_slots` for the next label: ``+1`` for the word templates
    and the bigram (slots 0-4, 11), ``+31`` for the POS and chunk ones (slots 5-10), mod ``dim``."""
    for m in range(12):
        if idx[m] >= 0:
            j = idx[m] + (31 if 5 <= m <= 10 else 1)
            idx[m] = j - dim if j >= dim else j


@njit(cache=True)
def window_scores(tok, a, b, R, W, out):
    """``out = [U (T, R) | P (T-1, R, R)]`` of the sentence ``tok[a:b]``."""
    T = b - a
    dim = W.shape[0]
    idx = np.empty(12, dtype=np.int64)
    for t in range(T):
        _label_slots(tok, a, T, t, False, dim, idx)
        for y in range(R):
            s = 0.0
            for m in range(12):
                if idx[m] >= 0:
                    s += W[idx[m]]
            out[t * R + y] = s
            _next_label(idx, dim)
        if t > 0:
            base = T * R + (t - 1) * R * R
            _label_slots(tok, a, T, t, True, dim, idx)
            for p in range(R):
                s = 0.0
                for m in range(12):
                    if idx[m] >= 0:
                        s += W[idx[m]]
                bigram = _h(10, p, 0, dim)
                for y in range(R):
                    out[base + p * R + y] = s + W[bigram]
                    bigram = bigram + 1 - dim if bigram + 1 >= dim else bigram + 1
                _next_label(idx, dim)


@njit(cache=True)
def window_add(tok, a, b, R, G, g):
    """``G += Psi g``: the adjoint of :func:`window_scores`."""
    T = b - a
    dim = G.shape[0]
    idx = np.empty(12, dtype=np.int64)
    for t in range(T):
        _label_slots(tok, a, T, t, False, dim, idx)
        for y in range(R):
            c = g[t * R + y]
            if c != 0.0:
                for m in range(12):
                    if idx[m] >= 0:
                        G[idx[m]] += c
            _next_label(idx, dim)
        if t > 0:
            base = T * R + (t - 1) * R * R
            _label_slots(tok, a, T, t, True, dim, idx)
            for p in range(R):
                c = 0.0
                bigram = _h(10, p, 0, dim)
                for y in range(R):
                    gy = g[base + p * R + y]
                    if gy != 0.0:
                        c += gy
                        G[bigram] += gy
                    bigram = bigram + 1 - dim if bigram + 1 >= dim else bigram + 1
                if c != 0.0:
                    for m in range(12):
                        if idx[m] >= 0:
                            G[idx[m]] += c
                _next_label(idx, dim)


class WindowVocabulary:
    """Word, POS and chunk ids from training tokens: words seen more than ``threshold`` times get
    ids 1, 2, ... in order of first appearance (others the unknown id 0); POS and chunk tags ids
    0, 1, ... in order of first appearance.  Case-sensitive, as the reference."""

    def __init__(self, threshold: int = 2):
        self.threshold = int(threshold)

    def fit(self, words, pos, chunk) -> WindowVocabulary:
        counts = Counter(words)
        self.words_ = {}
        for w in dict.fromkeys(words):
            if counts[w] > self.threshold:
                self.words_[w] = len(self.words_) + 1
        self.pos_ = {p: i for i, p in enumerate(dict.fromkeys(pos))}
        self.chunk_ = {c: i for i, c in enumerate(dict.fromkeys(chunk))}
        return self

    def encode(self, words, pos, chunk) -> np.ndarray:
        """``(N, 3)`` int64 ids of tokens; POS or chunk tags unseen in training are an error."""
        out = np.empty((len(words), 3), dtype=np.int64)
        out[:, 0] = [self.words_.get(w, UNKNOWN_WORD) for w in words]
        for col, table, what in ((1, self.pos_, "POS"), (2, self.chunk_, "chunk")):
            values = pos if col == 1 else chunk
            try:
                out[:, col] = [table[v] for v in values]
            except KeyError as err:
                raise StructpredError(f"{what} tag {err.args[0]!r} was not seen in training") from None
        return out


#: the templates of :func:`_label_slots` that read the sentence (all but slot 11, the START bigram)
N_INPUT_SLOTS = 11


@njit(cache=True)
def window_input_ids(tok, offsets, dim):
    """Per token, the hashed ids of its window's templates with the tag part 0 (:func:`_label_slots`'
    slots 0-10, -1 where absent): the sentence's own features, e.g. QS's inputs."""
    out = np.full((tok.shape[0], N_INPUT_SLOTS), -1, np.int64)
    idx = np.empty(12, np.int64)
    for i in range(offsets.shape[0] - 1):
        a, T = offsets[i], offsets[i + 1] - offsets[i]
        for t in range(T):
            _label_slots(tok, a, T, t, False, dim, idx)
            out[a + t] = idx[:N_INPUT_SLOTS]
    return out


class WindowTokens:
    """Encoded sentences: ``tokens (N, 3)`` int64 and ``offsets (n + 1,)`` delimiting them."""

    def __init__(self, tokens, offsets):
        self.tokens = np.ascontiguousarray(tokens, dtype=np.int64)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        if self.tokens.ndim != 2 or self.tokens.shape[1] != 3:
            raise StructpredError(f"window tokens must be an (N, 3) array of ids, got shape {self.tokens.shape}")
        if (self.offsets.ndim != 1 or self.offsets[0] != 0 or self.offsets[-1] != len(self.tokens)
                or np.any(np.diff(self.offsets) < 1)):
            raise StructpredError("offsets must rise from 0 to the number of tokens, one sentence at least one token")

    @property
    def n(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return self.n

    def input_ids(self, dim: int = HASH_DIM) -> np.ndarray:
        """``(N, 11)`` hashed window ids of every token (:func:`window_input_ids`)."""
        return window_input_ids(self.tokens, self.offsets, dim)


class HashedWindowJoint:
    """The joint map of the hashed window features: weights ``w`` of shape ``(dim,)``."""

    def __init__(self, X: WindowTokens, n_labels: int, dim: int = HASH_DIM):
        if not isinstance(X, WindowTokens):
            raise StructpredError(f"the hashed window map takes WindowTokens, got {type(X).__name__}")
        self.X = X
        self.seq = X  # the lengths, for checking label sequences
        self.R = int(n_labels)
        self.dim = int(dim)

    @classmethod
    def build(cls, space, X, like=None):
        return cls(X, space.n_labels, HASH_DIM if like is None else like.dim)

    @property
    def n(self) -> int:
        return self.X.n

    @property
    def n_features(self) -> int:
        return self.dim

    @property
    def weight_shape(self) -> tuple:
        return (self.dim,)

    def score(self, i, W):
        a, b = self.X.offsets[i], self.X.offsets[i + 1]
        T, R = b - a, self.R
        out = np.empty(T * R + (T - 1) * R * R)
        window_scores(self.X.tokens, a, b, R, W, out)
        return out

    def scores(self, W):
        return [self.score(i, W) for i in range(self.n)]

    def add(self, i, W, g):
        window_add(self.X.tokens, self.X.offsets[i], self.X.offsets[i + 1], self.R, W,
             np.ascontiguousarray(g, dtype=np.float64))

    def norm2(self, i, g):
        G = np.zeros(self.dim)
        self.add(i, G, g)
        return float(G @ G)


def window_splits(arrays, threshold: int = 2, fit_part: str = "train"):
    """Every part of a tagging view (``structpred.data``'s ``ner`` arrays: ``words``, ``pos``,
    ``chunk``, ``tags`` over tokens, ``offsets``, ``part`` per sentence) as ``(WindowTokens, tag
    id sequences)``, with the vocabulary and the tag ids (order of first appearance) from
    ``fit_part``.  Returns ``(splits: part -> (X, y), tag_names)``."""
    offsets = np.asarray(arrays["offsets"], dtype=np.int64)
    part = np.asarray(arrays["part"]).astype(str)
    names = [str(p) for p in dict.fromkeys(part)]
    if fit_part not in names:
        raise StructpredError(f"no {fit_part!r} sentences to fit the vocabulary on (parts: {', '.join(names)})")

    def tokens(p):
        idx = np.nonzero(part == p)[0]
        if np.any(np.diff(idx) != 1):
            raise StructpredError(f"the {p!r} sentences are not contiguous in the view")
        a, b = offsets[idx[0]], offsets[idx[-1] + 1]
        cols = [list(np.asarray(arrays[c][a:b]).astype(str)) for c in ("words", "pos", "chunk", "tags")]
        return cols, offsets[idx[0]: idx[-1] + 2] - a

    (words, pos, chunk, tags), _ = tokens(fit_part)
    vocabulary = WindowVocabulary(threshold).fit(words, pos, chunk)
    tag_ids = {str(t): i for i, t in enumerate(dict.fromkeys(tags))}
    splits = {}
    for p in names:
        (words, pos, chunk, tags), off = tokens(p)
        unseen = sorted(set(tags) - set(tag_ids))
        if unseen:
            raise StructpredError(f"tags {unseen} of {p!r} were not seen in {fit_part!r}")
        y = np.array([tag_ids[t] for t in tags], dtype=np.int64)
        splits[p] = (WindowTokens(vocabulary.encode(words, pos, chunk), off), np.split(y, off[1:-1]))
    return splits, list(tag_ids)
