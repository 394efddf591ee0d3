"""
CRF and AGM on a toy chain, with Bayes decoding
===============================================

Sequences of three ordered labels (low, mid, high) from a sticky Markov chain, each position
observed through noisy features.  The task loss is the **position-weighted absolute loss**
:math:`L(y, y') = \\sum_t w_t |y_t - y'_t| / \\sum_t w_t` with :math:`w_t = t`: late positions
count more, and confusing low with high costs twice as much as a neighbour.

- A :class:`~structpred.estimators.CRF` learns the chain's marginals.  Its MAP sequence (Viterbi)
  ignores the loss; **Bayes decoding** (:meth:`~structpred.outputs.Chain.bayes_decode`) picks,
  position by position, the label of least expected loss under those marginals: here the
  weighted median.
- An :class:`~structpred.estimators.AGM` (adversarial graphical model) trains the max-min game of
  the same loss directly, by AdaGrad.
"""

# %%
# The data: a sticky chain observed with noise
# --------------------------------------------
import matplotlib.pyplot as plt
import numpy as np

from structpred.estimators import AGM, CRF
from structpred.outputs import Chain

rng = np.random.default_rng(1)
R = 3
transition = np.array([[0.8, 0.15, 0.05], [0.1, 0.8, 0.1], [0.05, 0.15, 0.8]])
means = np.array([[-1.0, 0.0], [0.0, 0.6], [1.0, 0.0]])


def sample(n):
    X, Y = [], []
    for _ in range(n):
        T = int(rng.integers(6, 14))
        y = [int(rng.integers(R))]
        for _ in range(T - 1):
            y.append(int(rng.choice(R, p=transition[y[-1]])))
        y = np.array(y)
        x = means[y] + 0.9 * rng.normal(size=(T, 2))
        X.append(np.c_[x, np.ones(T)])          # a bias feature per position
        Y.append(y)
    return X, Y


X_train, y_train = sample(80)
X_test, y_test = sample(150)
space = Chain(n_labels=R, node_loss="absolute", weights="position")
print(space)

# %%
# Fit, then decode three ways
# ---------------------------
crf = CRF(loss=space, lam=0.05, n_passes=30, random_state=0).fit(X_train, y_train)
agm = AGM(loss=space, lam=0.05, n_passes=30, step=0.1, random_state=0).fit(X_train, y_train)

predictions = {
    "CRF, MAP (Viterbi)": space.decode(crf.scores(X_test)),
    "CRF, Bayes decoding": space.bayes_decode(crf.predict_proba(X_test)),
    "AGM": agm.predict(X_test),
}
losses = {name: float(np.mean(space.loss(y_test, pred))) for name, pred in predictions.items()}
for name, value in losses.items():
    print(f"{name:20s} test loss {value:.4f}")

# %%
# The figure
# ----------
# Left: mean test loss of each decoder.  Right: one test sequence, the truth and each decoder's
# labels (colour = label), position 1 at the left, weights growing to the right.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1, 1.6]})
ax1.bar(range(len(losses)), list(losses.values()), color=["tab:gray", "tab:blue", "tab:orange"])
ax1.set_xticks(range(len(losses)), [n.replace(", ", "\n") for n in losses], fontsize=8)
ax1.set_ylabel("weighted absolute loss (test)")
ax1.set_title("Chain, position-weighted absolute loss")
i = max(range(len(y_test)), key=lambda k: (len(set(y_test[k])), len(y_test[k])))   # all labels, long
rows = [y_test[i]] + [pred[i] for pred in predictions.values()]
im = ax2.imshow(np.vstack(rows), cmap=plt.get_cmap("viridis", R), aspect="auto", vmin=-0.5, vmax=R - 0.5)
fig.colorbar(im, ax=ax2, ticks=range(R), label="label")
ax2.set_yticks(range(len(rows)), ["truth"] + list(predictions), fontsize=8)
ax2.set_xlabel("position t")
ax2.set_title(f"test sequence {i}")
fig.tight_layout()
plt.show()
