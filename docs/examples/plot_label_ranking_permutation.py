"""
Label ranking with the permutation space
========================================

Each input comes with a **ranking** of :math:`M = 4` items, given as rank positions
(``y[j]`` = the position of item ``j``, 0 = top).  The output space is
:class:`~structpred.outputs.Permutation`: embeddings are permutation matrices and the task loss
is the normalised Hamming loss :math:`L(y, y') = \\frac1M \\sum_j 1[y_j \\ne y'_j]`, the fraction
of items put at the wrong position (``loss="permutation_hamming"``).  MAP and loss-augmented
decoding are assignment problems; the max-min oracle of M4N runs SP-MP with Sinkhorn projections;
there are no marginals (they would need the permanent), so no CRF.

The example fits :class:`~structpred.estimators.M3N` and :class:`~structpred.estimators.M4N` and
compares them with the best constant ranking (the one of least training loss).
"""

# %%
# Rankings from noisy utilities
# -----------------------------
import itertools

import matplotlib.pyplot as plt
import numpy as np

from structpred.estimators import CRF, M3N, M4N
from structpred.outputs import Permutation, capabilities

rng = np.random.default_rng(0)
M, d = 4, 3
W_true = rng.normal(size=(d, M))


def sample(n):
    X = rng.normal(size=(n, d))
    utility = X @ W_true + 0.5 * rng.normal(size=(n, M))
    order = np.argsort(-utility, axis=1)             # items from best to worst
    positions = np.argsort(order, axis=1)            # y[j] = position of item j
    return np.c_[X, np.ones(n)], positions


X_train, y_train = sample(150)
X_test, y_test = sample(400)
space = Permutation(M)
print(space, "has:", ", ".join(capabilities(space)))
print("first training ranking (positions of items 0..3):", y_train[0])

# %%
# Fits, and a constant baseline
# -----------------------------
m3n = M3N(loss="permutation_hamming", lam=0.01, n_passes=30, random_state=0).fit(X_train, y_train)
m4n = M4N(loss="permutation_hamming", lam=0.01, n_passes=30, n_iter_oracle=20,
          random_state=0).fit(X_train, y_train)
# the constant ranking of least training loss, among all M! rankings
rankings = np.array(list(itertools.permutations(range(M))))
train_loss = [np.mean(space.loss(y_train, np.broadcast_to(r, y_train.shape))) for r in rankings]
constant = rankings[int(np.argmin(train_loss))]
losses = {
    "best constant ranking": float(np.mean(space.loss(y_test, np.broadcast_to(constant, y_test.shape)))),
    "M3N": m3n.task_loss(X_test, y_test),
    "M4N": m4n.task_loss(X_test, y_test),
}
for name, value in losses.items():
    print(f"{name:22s} test normalised Hamming loss {value:.3f}")

# %%
# A CRF needs marginals, which the permutation space does not have: the error says why.
try:
    CRF(loss="permutation_hamming").fit(X_train, y_train)
except ValueError as err:
    print(str(err)[:160], "...")

# %%
# The figure
# ----------
# Left: test loss.  Right: for M4N, how often an item at true position ``i`` (row) is predicted
# at position ``j`` (column); a perfect ranker is the identity.
pred = m4n.predict(X_test)
confusion = np.zeros((M, M))
for truth, guess in zip(y_test, pred):
    confusion[truth, guess] += 1
confusion /= confusion.sum(axis=1, keepdims=True)

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
ax1.bar(range(3), list(losses.values()), color=["tab:gray", "tab:blue", "tab:orange"])
ax1.set_xticks(range(3), list(losses))
ax1.set_ylabel("normalised Hamming loss (test)")
ax1.set_title(f"Label ranking of {M} items")
im = ax2.imshow(confusion, cmap="Blues", vmin=0, vmax=1)
for i in range(M):
    for j in range(M):
        ax2.text(j, i, f"{confusion[i, j]:.2f}", ha="center", va="center", fontsize=8)
ax2.set_xticks(range(M))
ax2.set_yticks(range(M))
ax2.set_xlabel("predicted position")
ax2.set_ylabel("true position")
ax2.set_title("M4N: position confusion")
fig.colorbar(im, ax=ax2)
fig.tight_layout()
plt.show()
