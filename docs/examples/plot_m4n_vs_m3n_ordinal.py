"""
M4N against M3N on an ordinal task
==================================

Ordinal regression with the absolute loss :math:`L(y, y') = |y - y'|` over five ordered bins: a
prediction two bins off costs twice as much as one bin off, so the 0-1 loss is the wrong target.
The example fits, on the same Nyström features,

- :class:`~structpred.estimators.M3N`, the structured hinge of the absolute loss (BCFW),
- :class:`~structpred.estimators.M4N`, the max-min margin of the same loss (GBCFW with the SP-MP
  oracle), consistent for it (Nowak-Vila et al., ICML 2020),
- :class:`~structpred.estimators.CRF` with Bayes decoding of the absolute loss (the median of
  its class probabilities),
- and, as the wrong target, M3N trained on the 0-1 loss,

over a small grid of :math:`\\lambda`, and compares their test absolute loss.  Each fit records
its passes in ``history_``: the right panel shows the certified duality gap of M3N and M4N pass
after pass (see :doc:`/guide/solvers`).
"""

# %%
# A toy ordinal data set
# ----------------------
# A latent score, non-linear in two inputs, cut into five equal-frequency bins: labels 0..4.
import matplotlib.pyplot as plt
import numpy as np

from structpred.estimators import CRF, M3N, M4N
from structpred.features import NystromGaussian
from structpred.outputs import Multiclass

rng = np.random.default_rng(0)
n_train, n_test = 200, 500
X = rng.uniform(-2, 2, size=(n_train + n_test, 2))
latent = np.sin(1.5 * X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=len(X))
y = np.digitize(latent, np.quantile(latent, [0.2, 0.4, 0.6, 0.8]))
X_train, X_test, y_train, y_test = X[:n_train], X[n_train:], y[:n_train], y[n_train:]
print("labels per bin (train):", np.bincount(y_train))

# %%
# Features and fits
# -----------------
# Nyström features of a Gaussian kernel (50 centres), then each method at each lambda.
# ``task_loss`` is the mean absolute error in bins for every model (the space of the
# ordinal loss scores the 0-1 model's predictions too).
phi = NystromGaussian(n_components=50, random_state=0).fit(X_train)
F_train, F_test = phi.transform(X_train), phi.transform(X_test)
ordinal = Multiclass.ordinal(5)

methods = {
    "M3N (ordinal)": lambda lam: M3N(loss="ordinal", lam=lam, n_passes=30, random_state=0),
    "M4N (ordinal)": lambda lam: M4N(loss="ordinal", lam=lam, n_passes=30, n_iter_oracle=20, random_state=0),
    "CRF (Bayes decoding)": lambda lam: CRF(loss="ordinal", lam=lam, n_passes=30, random_state=0),
    "M3N (0-1 loss)": lambda lam: M3N(loss="zero_one", n_labels=5, lam=lam, n_passes=30, random_state=0),
}
lams = [2.0**-1, 2.0**-4, 2.0**-7]
test_loss = {name: [] for name in methods}
histories = {}
for name, make in methods.items():
    for lam in lams:
        model = make(lam).fit(F_train, y_train)
        pred = model.predict(F_test)
        test_loss[name].append(float(np.mean(ordinal.loss(y_test, pred))))
        if lam == lams[-1]:
            histories[name] = model.history_
    print(f"{name:22s}", " ".join(f"{v:.3f}" for v in test_loss[name]))

# %%
# What the figure shows
# ---------------------
# Left: test absolute loss against lambda (lower is better); the 0-1 model ignores how far off
# a prediction is.  Right: the certified gap ``primal - dual`` of each dual method, an upper
# bound on how far its objective is from the optimum, at the smallest lambda.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
for name, losses in test_loss.items():
    ax1.plot(lams, losses, marker="o", label=name)
ax1.set_xscale("log", base=2)
ax1.set_xlabel("lambda")
ax1.set_ylabel("test absolute loss (bins)")
ax1.set_title("Ordinal toy set, 5 bins")
ax1.legend()
for name in ("M3N (ordinal)", "M4N (ordinal)"):
    h = histories[name]
    ax2.semilogy(h["pass"], h["gap"], label=name)
ax2.set_xlabel("pass")
ax2.set_ylabel("certified duality gap")
ax2.set_title(f"lambda = 2^{int(np.log2(lams[-1]))}")
ax2.legend()
fig.tight_layout()
plt.show()
