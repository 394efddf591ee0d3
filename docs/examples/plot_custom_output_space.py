"""
An output space of your own
===========================

A space needs only the oracles of the methods you want to use.  Here: two classes where
**missing a positive costs 3 and a false alarm 1**, :math:`L = \\begin{pmatrix} 0 & 1 \\\\ 3 & 0
\\end{pmatrix}` (row = truth).  :class:`~structpred.estimators.M3N` needs loss-augmented
decoding and an affine loss (:class:`~structpred.outputs.LossAugmented`,
:class:`~structpred.outputs.AffineLoss`): the class below has exactly those, in a dozen lines.  A
:class:`~structpred.estimators.CRF` needs marginals, which it lacks, and says so in one line.
Every :class:`~structpred.outputs.AffineLoss` also has loss-trick decoding for free.  (The README
runs the same class as a doctest.)
"""

# %%
# The space
# ---------
import matplotlib.pyplot as plt
import numpy as np

from structpred.estimators import CRF, M3N
from structpred.outputs import AffineLoss, LossAugmented, OutputSpace, capabilities


class Asymmetric(OutputSpace, LossAugmented, AffineLoss):
    """Two classes, phi(y) = e_y, L(y, y') = A[y, y']."""

    A = np.array([[0.0, 1.0], [3.0, 0.0]])
    embedding_dim = 2

    def check_labels(self, y):
        return np.asarray(y, dtype=np.int64)

    def embed(self, y):
        return np.eye(2)[self.check_labels(y)]

    def loss(self, y, y2):
        return self.A[self.check_labels(y), self.check_labels(y2)]

    def decode(self, v):                          # MAP: argmax_y <phi(y), v>
        return np.argmax(v, axis=-1)

    def loss_augmented(self, v, y):               # argmax_y' L(y, y') + <phi(y'), v>
        return np.argmax(self.A[self.check_labels(y)] + v, axis=-1)

    def loss_scores(self, y):                     # A^T phi(y), as rows
        return self.A[self.check_labels(y)]

    def min_loss(self, mu):                       # min_y' phi(y')^T A mu
        return np.min(np.atleast_2d(mu) @ self.A.T, axis=1)

    def bayes_decode(self, m):                    # argmin_y' sum_y m_y L(y, y')
        return np.argmin(m @ self.A, axis=-1)


space = Asymmetric()
print(capabilities(space))

# %%
# Fit M3N with this loss and with the 0-1 loss
# --------------------------------------------
# Two overlapping Gaussian classes in the plane (a bias column appended).  The asymmetric
# model should trade false alarms for fewer missed positives.
rng = np.random.default_rng(0)
n = 300
y = (rng.random(n) < 0.4).astype(int)
pts = rng.normal(size=(n, 2)) + np.where(y[:, None] == 1, [1.0, 1.0], [-0.5, -0.5])
X = np.c_[pts, np.ones(n)]
asym = M3N(loss=space, lam=0.05, n_passes=30, random_state=0).fit(X, y)
sym = M3N(loss="zero_one", lam=0.05, n_passes=30, random_state=0).fit(X, y)
print("certified gap after 30 passes:", f"{asym.history_['gap'].iloc[-1]:.2e}")
for name, model in (("asymmetric loss", asym), ("0-1 loss", sym)):
    pred = model.predict(X)
    missed = np.mean(pred[y == 1] == 0)
    alarms = np.mean(pred[y == 0] == 1)
    print(f"{name:16s} missed positives {missed:.2f}, false alarms {alarms:.2f}, "
          f"asymmetric cost {np.mean(space.loss(y, pred)):.3f}")

# %%
# The CRF cannot run on this space
# --------------------------------
try:
    CRF(loss=space).fit(X, y)
except ValueError as err:
    print(err)

# %%
# The figure: both decision boundaries
# ------------------------------------
# The boundary of a linear model is where its two scores tie, ``v_1 = v_0``.
fig, ax = plt.subplots(figsize=(6, 5))
ax.scatter(*pts[y == 0].T, s=10, color="tab:blue", label="class 0")
ax.scatter(*pts[y == 1].T, s=10, color="tab:red", label="class 1 (missing it costs 3)")
grid = np.linspace(-4, 4, 200)
gx, gy = np.meshgrid(grid, grid)
G = np.c_[gx.ravel(), gy.ravel(), np.ones(gx.size)]
handles = []
for model, color, label in ((asym, "black", "M3N, asymmetric loss"), (sym, "gray", "M3N, 0-1 loss")):
    v = model.scores(G)
    ax.contour(gx, gy, (v[:, 1] - v[:, 0]).reshape(gx.shape), levels=[0.0], colors=color)
    handles.append(plt.Line2D([], [], color=color, label=label))
handles = ax.get_legend_handles_labels()[0] + handles
ax.legend(handles=handles, fontsize=8, loc="lower right")
ax.set_xlim(-4, 4)
ax.set_ylim(-4, 4)
ax.set_title("Decision boundaries")
fig.tight_layout()
plt.show()
