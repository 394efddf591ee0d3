"""M3N, CRF, M4N and AGM estimators (multiclass / ordinal / ranking / sequence outputs) on precomputed features.

The estimators do not featurise: compose them with
:class:`structpred.features.NystromGaussian` (e.g. in a sklearn Pipeline) for the
kernel setting of M4N §6.

The output space comes from ``loss``:

* a name understood by :func:`structpred.outputs.make_space`: ``"zero_one"``,
  ``"ordinal"`` (labels are integers ``0..n_labels-1``; ``n_labels`` defaults to
  ``max(y) + 1``, pass it explicitly when a training split may miss the top labels) or
  ``"permutation_hamming"`` (label ranking: ``y`` is ``(n, M)`` int64, each row the rank
  positions of the M labels; ``n_labels = M`` defaults to ``y.shape[1]``);
* an explicit ``(k, k)`` loss matrix (a :class:`Multiclass` space);
* an :class:`structpred.outputs.OutputSpace` instance, e.g. ``Permutation(M)``
  (``n_labels``, if given, must match its number of labels).

For ranking spaces ``predict`` returns ``(n, M)`` rankings and ``task_loss`` is the mean
normalised Hamming loss.  CRF needs marginal inference and refuses a Permutation space.

Sequences: pass a :class:`structpred.outputs.Chain` as ``loss`` (or ``"sequence_hamming"``),
``X`` as a list of ``(T_i, d)`` arrays or a :class:`structpred.features.Sequences` (whose
``groups`` select per-sequence weight blocks) and ``y`` as a list of label arrays;
``predict`` returns a list of label arrays (:class:`structpred.features.joint.ChainJoint`).

The constructor parameter ``loss`` names the task loss, so the mean task loss on data
is the method ``task_loss(X, y)`` (an attribute and a method cannot share a name under
the scikit-learn parameter convention); ``score(X, y) = -task_loss(X, y)``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from structpred.errors import StructpredError
from structpred.features.joint import joint_map
from structpred.outputs import SPACE_NAMES, make_space
from structpred.outputs.base import OutputSpace
from structpred.outputs.multiclass import Multiclass
from structpred.solvers import adagrad, bcfw, gbcfw, sdca


class _LinearStructured(BaseEstimator):
    """Shared fit/predict logic; subclasses set ``_solve`` and ``_decode``."""

    def _space(self, y):
        loss = self.loss
        if isinstance(loss, OutputSpace):
            if self.n_labels is not None and int(self.n_labels) != loss.n_labels:
                raise StructpredError(f"n_labels={self.n_labels} does not match {loss!r}")
            return loss
        if isinstance(loss, str) and loss == "sequence_hamming":
            if self.n_labels is not None:
                R = int(self.n_labels)
            else:
                R = int(max(int(np.max(s)) for s in y)) + 1
            return make_space(loss, max(R, 2))
        if isinstance(loss, str) and loss == "permutation_hamming":
            yy = np.asarray(y)
            if yy.ndim != 2:
                raise StructpredError(f"rankings y must be 2-d (n_samples, M), got shape {yy.shape}")
            M = int(self.n_labels) if self.n_labels is not None else yy.shape[1]
            return make_space(loss, M)
        if isinstance(loss, str):
            if loss not in SPACE_NAMES and loss not in ("0-1", "multiclass", "mc", "absolute", "ord"):
                raise StructpredError(f"unknown loss {loss!r}: use one of {', '.join(SPACE_NAMES)}, "
                                      "a (k, k) loss matrix or an OutputSpace")
            if self.n_labels is not None:
                k = int(self.n_labels)
            else:
                yy = np.asarray(y)
                if yy.size == 0:
                    raise StructpredError("y is empty")
                if not np.all(np.isfinite(yy.astype(float))):
                    raise StructpredError("y contains NaN values")
                k = int(np.max(yy)) + 1
            k = max(k, 2)
            return Multiclass.from_name(loss, k)
        sp = Multiclass(loss)
        if self.n_labels is not None and int(self.n_labels) != sp.k:
            raise StructpredError(f"n_labels={self.n_labels} does not match the {sp.k}x{sp.k} loss matrix")
        return sp

    def fit(self, X, y, X_val=None, y_val=None):
        """Train on ``(X, y)``; ``(X_val, y_val)`` only feed the per-pass validation loss."""
        space = self._space(y)
        self._check_space(space)
        fmap = joint_map(space, X)
        if isinstance(y, (list, tuple)):
            y = space.check_labels(list(y))
        else:
            y = np.asarray(y)
            shape = tuple(space.label_shape)
            if y.ndim != 1 + len(shape) or y.shape[0] != fmap.n:
                want = f"1-d with {fmap.n} entries" if not shape else f"of shape ({fmap.n}, {', '.join(map(str, shape))})"
                raise StructpredError(f"y must be {want}, got shape {y.shape}")
            y = space.check_labels(y)
        if (X_val is None) != (y_val is None):
            raise StructpredError("give both X_val and y_val or neither")
        if X_val is not None:
            n_val = joint_map(space, X_val, like=fmap).n
            y_val = space.check_labels(list(y_val) if isinstance(y_val, (list, tuple)) else np.asarray(y_val))
            if len(y_val) != n_val:
                raise StructpredError("X_val and y_val have different lengths")
        if not (float(self.lam) > 0):
            raise StructpredError(f"lam must be positive, got {self.lam}")
        self.space_ = space
        self.n_labels_ = space.n_labels
        self.classes_ = np.arange(space.n_labels)
        self.n_features_in_ = fmap.n_features
        self.joint_map_ = fmap
        res = self._solve(space, X, y, X_val, y_val)
        self.coef_ = res.W
        self.dual_ = res.mu
        self.solver_state_ = res.state
        self.history_ = pd.DataFrame(res.history)
        return self

    def _check_space(self, space):
        """Hook: refuse spaces the method cannot train on (CRF on permutations)."""

    def decision_function(self, X):
        """Scores ``v``: ``(n, k)`` with k the embedding dimension (n_labels for multiclass,
        M^2 for rankings), or a list of chain score vectors for sequences."""
        check_is_fitted(self, "coef_")
        return joint_map(self.space_, X, like=self.joint_map_).scores(self.coef_)

    def predict(self, X):
        return self._decode(self.decision_function(X))

    def task_loss(self, X, y):
        """Mean task loss (0-1 error, mean absolute error for ``loss="ordinal"``, mean
        normalised Hamming loss for rankings)."""
        check_is_fitted(self, "coef_")
        pred = self.predict(X)
        if isinstance(pred, list):
            y = self.space_.check_labels(list(y))
            if len(y) != len(pred):
                raise StructpredError(f"X has {len(pred)} sequences but y has {len(y)}")
        else:
            y = self.space_.check_labels(np.asarray(y))
            if y.shape != pred.shape:
                raise StructpredError(f"X and y have different lengths (or y has shape {y.shape}, expected {pred.shape})")
        return float(np.mean(self.space_.loss(y, pred)))

    def score(self, X, y):
        """``-task_loss(X, y)``: greater is better (scikit-learn convention for model selection)."""
        return -self.task_loss(X, y)

    def _decode(self, V):
        return self.space_.decode(V)


class M3N(_LinearStructured):
    """Max-margin Markov network / multiclass SVM with a task loss, trained by BCFW.

    Objective ``(1/n) sum_i max_y' [L(y_i,y') + v_y' - v_{y_i}] + lam/2 ||W||_F^2``.
    ``eval_every``: objectives recorded in ``history_`` every that many passes (and the last).
    """

    def __init__(self, loss="zero_one", lam=2**-5, n_passes=50, averaging=False,
                 random_state=None, verbose=False, n_labels=None, eval_every=1):
        self.loss = loss
        self.eval_every = eval_every
        self.lam = lam
        self.n_passes = n_passes
        self.averaging = averaging
        self.random_state = random_state
        self.verbose = verbose
        self.n_labels = n_labels

    def _solve(self, space, X, y, X_val, y_val):
        return bcfw(space, X, y, self.lam, n_passes=self.n_passes, averaging=self.averaging,
                    random_state=self.random_state, X_val=X_val, y_val=y_val, verbose=self.verbose,
                    eval_every=self.eval_every)


class M4N(_LinearStructured):
    """Max-min margin Markov network (M4N eq. 3, 10) trained by GBCFW + SP-MP.

    ``eval_every``: the primal objective (one extra oracle pass) is evaluated and recorded in
    ``history_`` every that many passes and at the last; training is the same either way.
    """

    def __init__(self, loss="zero_one", lam=2**-5, n_passes=50, n_iter_oracle=20,
                 warm_start_oracle=True, warm_start_mix=0.1, random_state=None, verbose=False,
                 n_labels=None, eval_every=1):
        self.loss = loss
        self.eval_every = eval_every
        self.warm_start_mix = warm_start_mix
        self.lam = lam
        self.n_passes = n_passes
        self.n_iter_oracle = n_iter_oracle
        self.warm_start_oracle = warm_start_oracle
        self.random_state = random_state
        self.verbose = verbose
        self.n_labels = n_labels

    def _solve(self, space, X, y, X_val, y_val):
        return gbcfw(space, X, y, self.lam, n_passes=self.n_passes, n_iter_oracle=self.n_iter_oracle,
                     warm_start=self.warm_start_oracle, warm_mix=self.warm_start_mix,
                     random_state=self.random_state, eval_every=self.eval_every,
                     X_val=X_val, y_val=y_val, verbose=self.verbose)


class CRF(_LinearStructured):
    """Multinomial logistic regression (CRF) by SDCA; predictions by Bayes decoding
    with the task loss: ``argmin_y' sum_y p(y|x) L(y, y')``."""

    def __init__(self, loss="zero_one", lam=2**-5, n_passes=50, random_state=None,
                 verbose=False, n_labels=None, eval_every=1):
        self.loss = loss
        self.eval_every = eval_every
        self.lam = lam
        self.n_passes = n_passes
        self.random_state = random_state
        self.verbose = verbose
        self.n_labels = n_labels

    def _check_space(self, space):
        space.require_marginals()

    def _decode(self, V):
        return self.space_.bayes_decode(self.space_.marginals(V))

    def predict_proba(self, X):
        return self.space_.marginals(self.decision_function(X))

    def _solve(self, space, X, y, X_val, y_val):
        return sdca(space, X, y, self.lam, n_passes=self.n_passes, random_state=self.random_state,
                    X_val=X_val, y_val=y_val, verbose=self.verbose, eval_every=self.eval_every)


class AGM(_LinearStructured):
    """Adversarial graphical model (Fathony et al. 2018): the max-min game surrogate (the same
    as M4N's, eq. 10) trained by AdaGrad on the primal; predictions by argmax of the
    potentials (``decode``).

    ``step``: AdaGrad step (0.1 in the AGM reference code); ``n_iter_oracle``: SP-MP
    iterations per game (per node for chains).
    """

    def __init__(self, loss="zero_one", lam=2**-5, n_passes=50, step=0.1, n_iter_oracle=10,
                 warm_start_oracle=True, random_state=None, verbose=False, n_labels=None, eval_every=1):
        self.loss = loss
        self.lam = lam
        self.n_passes = n_passes
        self.step = step
        self.n_iter_oracle = n_iter_oracle
        self.warm_start_oracle = warm_start_oracle
        self.random_state = random_state
        self.verbose = verbose
        self.n_labels = n_labels
        self.eval_every = eval_every

    def _solve(self, space, X, y, X_val, y_val):
        return adagrad(space, X, y, self.lam, surrogate="maxmin", n_passes=self.n_passes, step=self.step,
                       n_iter_oracle=self.n_iter_oracle, warm_start=self.warm_start_oracle,
                       random_state=self.random_state, eval_every=self.eval_every,
                       X_val=X_val, y_val=y_val, verbose=self.verbose)
