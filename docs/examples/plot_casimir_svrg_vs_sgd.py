"""
Casimir-SVRG against SGD on a small tagging task
================================================

Named-entity tagging in the style of Casimir's CoNLL-2003 experiment (Pillutla et al.,
NeurIPS 2018), on sentences this script generates: words, part-of-speech and chunk tags in,
BIO entity tags out.  The features are Casimir's **hashed window features**
(:class:`~structpred.features.hashed.WindowVocabulary`,
:class:`~structpred.features.hashed.WindowTokens`: 27 templates over a window of words, POS and
chunk tags, hashed into :math:`2^{16} - 1` weights and computed on the fly); the output space is a
:class:`~structpred.outputs.Chain` with the unnormalised Hamming loss (the count of wrong tags).

:class:`~structpred.estimators.SmoothSSVM` minimises the structural hinge with

- ``solver="sgd"``: subgradients of the hinge itself, step :math:`\\eta_0 / (1 + t/t_0)`;
- ``solver="casimir_svrg"``: SVRG on the top-K smoothed hinge inside Casimir's accelerated
  proximal outer loop (the reference code's Casimir-SVRG-adapt).

The figure plots the (non-smooth) training objective against the number of oracle calls per
sample, the cost measure of the paper's Figure 2.
"""

# %%
# Generated sentences
# -------------------
# People often follow a title, places often follow "in" or "to", but not always; a few names
# are both a person's and a place's, "in" and "to" also start ordinary phrases, and 3% of the
# tags are flipped at random, so the task is not separable.  Rare words (seen at most once)
# become the unknown word, as in the reference code.
import matplotlib.pyplot as plt
import numpy as np

from structpred.estimators import SmoothSSVM
from structpred.features.hashed import WindowTokens, WindowVocabulary
from structpred.metrics import entity_f1, token_f1
from structpred.outputs import Chain

rng = np.random.default_rng(0)
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
people = [f"Name{i}" for i in range(60)]
places = [f"Place{i}" for i in range(40)] + people[:10]        # ten names are places too
filler = ["the", "a", "report", "said", "met", "went", "today", "and", "visited", "with", "talks", "new"]


def entity(names, tag, cue, cue_pos, cue_chunk, p_cue):
    words = list(rng.choice(names, size=int(rng.integers(1, 3))))
    tags = [f"B-{tag}"] + [f"I-{tag}"] * (len(words) - 1)
    pos, chunk = ["NNP"] * len(words), ["B-NP"] + ["I-NP"] * (len(words) - 1)
    if rng.random() < p_cue:
        return [str(rng.choice(cue))] + words, [cue_pos] + pos, [cue_chunk] + chunk, ["O"] + tags
    return words, pos, chunk, tags


def sentence():
    words, pos, chunk, tags = [], [], [], []
    for _ in range(int(rng.integers(3, 7))):
        kind = rng.choice(["per", "loc", "phrase", "word"], p=[0.25, 0.25, 0.15, 0.35])
        if kind == "per":
            part = entity(people, "PER", ["Mr", "Mrs"], "NNP", "B-NP", 0.6)
        elif kind == "loc":
            part = entity(places, "LOC", ["in", "to"], "IN", "B-PP", 0.6)
        elif kind == "phrase":
            part = ([str(rng.choice(["in", "to"])), "the", str(rng.choice(filler))], ["IN", "DT", "NN"],
                    ["B-PP", "B-NP", "I-NP"], ["O", "O", "O"])
        else:
            part = ([str(rng.choice(filler))], ["NN"], ["O"], ["O"])
        for acc, new in zip((words, pos, chunk, tags), part):
            acc += new
    flip = rng.random(len(tags)) < 0.03
    tags = [str(rng.choice(TAGS)) if f else t for t, f in zip(tags, flip)]
    return words, pos, chunk, tags


def corpus(n):
    sents = [sentence() for _ in range(n)]
    flat = [sum((s[k] for s in sents), []) for k in range(3)]
    offsets = np.r_[0, np.cumsum([len(s[0]) for s in sents])]
    y = [np.array([TAGS.index(t) for t in s[3]]) for s in sents]
    return flat, offsets, y


(train_words, train_pos, train_chunk), train_offsets, y_train = corpus(300)
(test_words, test_pos, test_chunk), test_offsets, y_test = corpus(300)
voc = WindowVocabulary(threshold=1).fit(train_words, train_pos, train_chunk)
X_train = WindowTokens(voc.encode(train_words, train_pos, train_chunk), train_offsets)
X_test = WindowTokens(voc.encode(test_words, test_pos, test_chunk), test_offsets)
print(f"{X_train.n} training sentences, {len(train_words)} tokens, {len(voc.words_)} known words")

# %%
# Fits
# ----
# lam = 0.1 / n as in the paper's NER runs; 15 passes each.
space = Chain(n_labels=len(TAGS), normalize=False, joint_map="hashed_window")
models = {
    "SGD": SmoothSSVM(loss=space, solver="sgd", lam=0.1 / X_train.n, n_passes=15, eta0=0.1, t0=1e4,
                      random_state=0),
    "Casimir-SVRG": SmoothSSVM(loss=space, solver="casimir_svrg", lam=0.1 / X_train.n, n_passes=15,
                               random_state=0),
}
for name, model in models.items():
    model.fit(X_train, y_train)
    pred = model.predict(X_test)
    print(f"{name:13s} final objective {model.history_['primal'].iloc[-1]:.4f}, "
          f"test token F1 {token_f1(y_test, pred, labels=range(1, len(TAGS))):.3f}, "
          f"entity F1 {entity_f1(y_test, pred, TAGS):.3f}")

# %%
# The figure
# ----------
# Training objective (the hinge, mean count of wrong tags plus the regulariser) against oracle
# calls per training sentence: SVRG spends two oracle calls per step, SGD one.
fig, ax = plt.subplots(figsize=(7, 4.2))
for name, model in models.items():
    h = model.history_
    ax.semilogy(h["oracle_calls"] / X_train.n, h["primal"], marker="o", ms=3, label=name)
ax.set_xlabel("oracle calls / n")
ax.set_ylabel("training objective (structural hinge)")
ax.set_title("Hashed window features, 5 BIO tags")
ax.legend()
fig.tight_layout()
plt.show()
