"""
Robust regression with the Cauchy loss
======================================

One-dimensional regression where a fifth of the training targets are gross outliers.  The
Cauchy loss :math:`L(y, y') = \\frac{c^2}{2} \\log(1 + ((y - y')/c)^2)` is quadratic for small
residuals and only logarithmic for large ones, so an outlier's pull on the fit stays bounded.
:class:`~structpred.estimators.QSCV` takes it through the loss trick (QS §6): kernel-ridge
weights :math:`\\alpha(x)`, then the global minimiser of
:math:`t \\mapsto \\sum_i \\alpha_i(x) L(y_i, t)` on the data's range, which
:class:`~structpred.outputs.Cauchy` certifies by branch and bound.  The bandwidth and
:math:`\\lambda` are chosen by 4-fold cross-validation of the Cauchy loss.

The comparison is kernel ridge regression with the *same* weights,
:math:`\\hat f(x) = \\sum_i \\alpha_i(x) y_i` (QS's decoding of the squared loss), scored, like
QS, on clean test targets.
"""

# %%
# Data with outliers
# ------------------
import matplotlib.pyplot as plt
import numpy as np

from structpred.estimators import QSCV
from structpred.outputs import Cauchy

rng = np.random.default_rng(3)
n = 150


def truth(x):
    return np.sin(2 * np.pi * x) + 0.5 * x


x_train = np.sort(rng.uniform(0, 1, n))
y_train = truth(x_train) + 0.1 * rng.normal(size=n)
outlier = rng.random(n) < 0.2
y_train[outlier] += rng.choice([-1, 1], outlier.sum()) * rng.uniform(2, 4, outlier.sum())
x_test = np.linspace(0, 1, 200)
y_test = truth(x_test)
print(f"{outlier.sum()} outliers among {n} training points")

# %%
# Fits
# ----
# Two scales of the Cauchy loss; each chooses (sigma, lam) by cross-validation.
fits = {}
for c in (0.1, 0.3):
    model = QSCV(loss=Cauchy(c=c), sigmas=[0.04, 0.08], lams=[1e-2, 1e-3, 1e-4], n_folds=4,
                 random_state=0).fit(x_train[:, None], y_train)
    fits[f"QS, Cauchy loss c = {c}"] = model
    print(f"c = {c}: sigma = {model.sigma_}, lam = {model.lam_}")

# kernel ridge regression with the weights of the first model's (sigma, lam)
first = next(iter(fits.values()))
krr = first.weights(x_test[:, None]) @ y_train
curves = {name: m.predict(x_test[:, None]) for name, m in fits.items()}
curves["kernel ridge (same weights)"] = krr
for name, f in curves.items():
    print(f"{name:28s} test RMSE {np.sqrt(np.mean((f - y_test) ** 2)):.3f}")

# %%
# The figure
# ----------
# Training points (outliers in red), the true function, and each fit on a fine grid.
fig, ax = plt.subplots(figsize=(8, 4.5))
ax.scatter(x_train[~outlier], y_train[~outlier], s=12, color="black", label="training points")
ax.scatter(x_train[outlier], y_train[outlier], s=12, color="tab:red", label="outliers")
ax.plot(x_test, y_test, color="gray", lw=3, alpha=0.5, label="true function")
for (name, f), style in zip(curves.items(), ("-", "-", "--")):
    ax.plot(x_test, f, style, lw=1.8, label=name)
ax.set_ylim(-4, 4.5)
ax.set_xlabel("x")
ax.set_ylabel("y")
ax.legend(fontsize=8, ncol=2, loc="upper right")
ax.set_title("Robust regression: the loss trick with the Cauchy loss")
fig.tight_layout()
plt.show()
