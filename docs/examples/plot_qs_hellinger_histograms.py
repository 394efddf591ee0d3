"""
QS with the Hellinger loss on histograms
========================================

Predict a **histogram** (a point of the simplex) from an input vector, under the squared
Hellinger distance :math:`L(y, y') = \\sum_j (\\sqrt{y_j} - \\sqrt{y'_j})^2`.  The histograms have
no linear embedding to score, so the linear methods do not apply; the loss trick does
(Ciliberto, Rosasco and Rudi, NeurIPS 2016): kernel-ridge weights
:math:`\\alpha(x) = (K + n\\lambda I)^{-1} K_x` over the training inputs, then

.. math:: \\hat y(x) = \\arg\\min_{y \\in \\Delta} \\sum_i \\alpha_i(x) \\, L(y_i, y),

which :class:`~structpred.outputs.Hellinger` solves in closed form
(:math:`\\hat y \\propto (\\sum_i \\alpha_i \\sqrt{y_i})_+^2`).  The example compares
:class:`~structpred.estimators.QS` with the Hellinger loss, with the Gaussian-kernel loss on
histograms (:class:`~structpred.outputs.GaussianHistogram`, a local decoder), and the mean training
histogram, over a grid of :math:`\\lambda`.  See :doc:`/guide/loss_trick`.
"""

# %%
# Histograms that move with the input
# -----------------------------------
# Eight bins; the input sets the centre and the width of a bump, and each histogram is a
# Dirichlet draw around it.
import matplotlib.pyplot as plt
import numpy as np

from structpred.estimators import QS
from structpred.outputs import GaussianHistogram, Hellinger

rng = np.random.default_rng(0)
d, n_train, n_test = 8, 200, 300


def sample(n):
    X = rng.normal(size=(n, 3))
    centre = 3.5 + 2.5 * np.tanh(X[:, 0])
    width = 0.8 + 0.8 / (1 + np.exp(-2 * X[:, 1]))
    bump = np.exp(-0.5 * ((np.arange(d)[None, :] - centre[:, None]) / width[:, None]) ** 2) + 0.02
    bump /= bump.sum(axis=1, keepdims=True)
    Y = np.array([rng.dirichlet(60 * b) for b in bump])
    return X, Y


X_train, Y_train = sample(n_train)
X_test, Y_test = sample(n_test)
hellinger = Hellinger(d)

# %%
# Fits over a grid of lambda
# --------------------------
# The same kernel (Gaussian, bandwidth 1.5) for both losses; every prediction is scored with the
# Hellinger loss.
lams = [1e-1, 1e-2, 1e-3, 1e-4]
scores = {"QS, Hellinger loss": [], "QS, Gaussian loss on histograms": []}
for lam in lams:
    for name, loss in (("QS, Hellinger loss", hellinger),
                       ("QS, Gaussian loss on histograms", GaussianHistogram(d, sigma=0.3))):
        model = QS(loss=loss, kernel="gaussian", sigma=1.5, lam=lam).fit(X_train, Y_train)
        scores[name].append(float(np.mean(hellinger.loss(Y_test, model.predict(X_test)))))
mean_hist = Y_train.mean(axis=0)
baseline = float(np.mean(hellinger.loss(Y_test, np.broadcast_to(mean_hist, Y_test.shape))))
for name, values in scores.items():
    print(f"{name:32s}", " ".join(f"{v:.4f}" for v in values))
print(f"{'mean training histogram':32s} {baseline:.4f}")

best = QS(loss=hellinger, kernel="gaussian", sigma=1.5,
          lam=lams[int(np.argmin(scores["QS, Hellinger loss"]))]).fit(X_train, Y_train)
pred = best.predict(X_test[:3])

# %%
# The figure
# ----------
# Left: test Hellinger loss against lambda.  Right: three test histograms (bars) and the QS
# prediction (line) at the best lambda.
fig = plt.figure(figsize=(11, 4))
ax = fig.add_subplot(1, 2, 1)
for name, values in scores.items():
    ax.semilogx(lams, values, marker="o", label=name)
ax.axhline(baseline, color="gray", ls="--", label="mean training histogram")
ax.set_xlabel("lambda")
ax.set_ylabel("test squared Hellinger loss")
ax.legend(fontsize=8)
ax.set_title("Histograms in 8 bins")
for k in range(3):
    a = fig.add_subplot(3, 2, 2 * k + 2)
    a.bar(np.arange(d), Y_test[k], color="lightgray", label="truth")
    a.plot(np.arange(d), pred[k], "o-", color="tab:blue", label="QS (Hellinger)")
    a.set_yticks([])
    if k == 0:
        a.legend(fontsize=7, loc="upper right")
        a.set_title("test histograms and predictions")
fig.tight_layout()
plt.show()
