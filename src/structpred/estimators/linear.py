"""M3N, CRF, M4N and AGM estimators (multiclass / ordinal / ranking / sequence outputs) on precomputed features.

The estimators do not featurise: compose them with
:class:`structpred.features.NystromGaussian` (e.g. in a sklearn Pipeline) for the
kernel setting of M4N §6.  Each is a surrogate (:mod:`structpred.surrogates`) trained by a
step rule on the pass driver (:mod:`structpred.solvers`).

The output space comes from ``loss`` through :func:`structpred.outputs.make_space`: a name
(``"zero_one"``, ``"ordinal"``: labels ``0..n_labels-1``, ``n_labels`` defaulting to
``max(y) + 1``, so pass it when a training split may miss the top labels;
``"permutation_hamming"``: ``y`` is ``(n, M)`` rank positions; ``"sequence_hamming"``), a
``(k, k)`` loss matrix, or any :class:`structpred.outputs.OutputSpace` that has the
capabilities the method needs (M3N: loss-augmented decoding and an affine loss; CRF:
marginals; M4N / AGM: the max-min oracle).

Sequences: ``X`` is a list of ``(T_i, d)`` arrays or a :class:`structpred.features.Sequences`
(whose ``groups`` select per-sequence weight blocks) and ``y`` a list of label arrays;
``predict`` returns a list of label arrays.

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
from structpred._fitting import AtomicFit, check_feature_names
from structpred.estimators._tags import classifier_tags
from structpred.features.joint import joint_map
from structpred.outputs import Multiclass, make_space
from structpred.outputs.batch import labels_batch
from structpred.solvers import BCFW, GBCFW, SDCA, AdaGrad, DualQP, check_problem, run
from structpred.surrogates import Hinge, LogLoss, MaxMinMargin


def _refuse_sparse(X, what: str) -> None:
    if hasattr(X, "tocsr") or hasattr(X, "sparse"):
        raise StructpredError(f"{what} is a sparse matrix: structpred's linear joint maps take dense arrays "
                              "(use X.toarray())")


def _solver(name, block_rule: str) -> str:
    """A dual estimator's ``solver``: its block rule or ``"qp"`` (:class:`DualQP`)."""
    if name not in (block_rule, "qp"):
        raise StructpredError(f"solver must be {block_rule!r} or 'qp', got {name!r}")
    return name


class _LinearStructured(AtomicFit, BaseEstimator):
    """Shared fit / predict: subclasses give ``__init__`` (its signature names the parameters and
    their defaults; its body :meth:`_set_init_params`), ``_surrogate(space)`` and ``_rule(surrogate)``."""

    def _set_init_params(self, args: dict) -> None:
        """Keep each parameter of ``__init__``'s signature as it was given, under its own name
        (``args``: ``__init__``'s ``locals()``), as ``get_params`` reads them back."""
        for name in self._get_param_names():
            setattr(self, name, args[name])

    def fit(self, X, y, X_val=None, y_val=None, checkpoint=None):
        """Train on ``(X, y)``; ``(X_val, y_val)`` only feed the per-pass validation loss.  A fit
        that fails leaves the estimator as it was (:class:`~structpred._fitting.AtomicFit`).
        ``checkpoint``: a file the solver's state is saved to after every pass; a fit that finds
        one of the same problem resumes after its last pass (:func:`structpred.solvers.driver.run`),
        so a long fit can run in pieces."""
        return super().fit(X, y, X_val=X_val, y_val=y_val, checkpoint=checkpoint)

    def _fit(self, X, y, X_val=None, y_val=None, checkpoint=None):
        _refuse_sparse(X, "X")
        if y is None:
            raise StructpredError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        space = make_space(self.loss, self.n_labels, y)
        surrogate = self._surrogate(space)
        rule = self._rule(surrogate)
        problem = check_problem(space, X, y, self.lam, zero_lam=rule.zero_lam)
        if X_val is not None:
            _refuse_sparse(X_val, "X_val")
        self.space_ = space
        self.n_labels_ = space.n_labels
        self.classes_ = np.arange(space.n_labels)
        self.n_features_in_ = problem.fmap.n_features
        self.joint_map_ = problem.fmap
        self.surrogate_ = surrogate
        res = run(rule, problem, n_passes=self.n_passes, random_state=self.random_state,
                  eval_every=self.eval_every, rtol=getattr(self, "rtol", None), X_val=X_val, y_val=y_val,
                  verbose=self.verbose, checkpoint=checkpoint)
        self.coef_ = res.W
        self.dual_ = res.mu
        self.solver_state_ = res.state
        self.resumed_seconds_ = res.resumed_seconds   # training time of the checkpoint's earlier run
        self.history_ = pd.DataFrame(res.history)
        return self

    def scores(self, X):
        """Scores ``v``: ``(n, k)`` with k the embedding dimension (n_labels for multiclass,
        M^2 for rankings), or a list of chain score vectors for sequences."""
        check_is_fitted(self, "coef_")
        _refuse_sparse(X, "X")
        check_feature_names(self, X)
        return joint_map(self.space_, X, like=self.joint_map_, who=type(self).__name__).scores(self.coef_)

    def decision_function(self, X):
        """:meth:`scores`, but for two labels of a single-label loss scikit-learn's binary
        convention: ``v_1 - v_0``, shape ``(n,)`` (positive: label 1)."""
        v = self.scores(X)
        if isinstance(self.space_, Multiclass) and self.space_.n_labels == 2:
            return v[:, 1] - v[:, 0]
        return v

    def predict(self, X):
        """Outputs decoded as the surrogate prescribes (MAP, or Bayes decoding for the CRF)."""
        check_is_fitted(self, "coef_")
        return self.surrogate_.predict(self.scores(X))

    def task_loss(self, X, y):
        """Mean task loss (0-1 error, mean absolute error for ``loss="ordinal"``, mean
        normalised Hamming loss for rankings and sequences)."""
        check_is_fitted(self, "coef_")
        pred = self.predict(X)
        y = labels_batch(self.space_, y)
        if len(y) != len(pred) or (not self.space_.ragged and y.shape != pred.shape):
            raise StructpredError(f"X has {len(pred)} samples but y has {len(y)} (or y has the wrong shape)")
        return float(np.mean(self.space_.loss(y, pred)))

    def score(self, X, y):
        """``-task_loss(X, y)``: greater is better (scikit-learn convention for model selection)."""
        return -self.task_loss(X, y)

    def _more_tags(self):
        return {"requires_y": True}

    def __sklearn_tags__(self):
        return classifier_tags(super().__sklearn_tags__(), self.loss)


class M3N(_LinearStructured):
    """Max-margin Markov network / multiclass SVM with a task loss, trained by BCFW.

    Objective ``(1/n) sum_i max_y' [L(y_i,y') + v_y' - v_{y_i}] + lam/2 ||W||_F^2``.
    ``eval_every``: objectives recorded in ``history_`` every that many passes (and the last).
    ``steps``, ``sampling``, ``block_steps``: BCFW's variant (:class:`structpred.solvers.BCFW`;
    ``steps="pairwise", sampling="gap"`` converges much faster than the paper's plain BCFW);
    ``step``: its Frank-Wolfe step, ``"line_search"`` (exact) or ``"fixed"`` (``2n / (t + 2n)``,
    as the M4N authors' runs); ``averaging``: predict from the weighted average of the iterates.
    ``rtol``: stop at the first recorded pass whose certified duality gap is ``<= rtol *
    primal`` (``None``: run ``n_passes``).  ``solver``: ``"bcfw"``, or ``"qp"``: the dual as one
    quadratic program (:class:`structpred.solvers.DualQP`, for small problems on spaces with a
    marginal polytope), solved in one pass to a certified gap; the BCFW settings are then unused.
    """

    def __init__(self, *, loss="zero_one", lam=2**-5, n_passes=50, averaging=False, steps="frank-wolfe",
                 sampling="permutation", block_steps=1, rtol=None, solver="bcfw", random_state=None, verbose=False,
                 n_labels=None, eval_every=1, step="line_search"):
        self._set_init_params(locals())

    def _surrogate(self, space):
        return Hinge(space)

    def _rule(self, surrogate):
        if _solver(self.solver, "bcfw") == "qp":
            return DualQP(surrogate)
        return BCFW(surrogate, averaging=self.averaging, steps=self.steps, sampling=self.sampling,
                    block_steps=self.block_steps, step=self.step)


class M4N(_LinearStructured):
    """Max-min margin Markov network (M4N eq. 3, 10) trained by GBCFW + SP-MP.

    ``eval_every``: the primal objective (one extra oracle pass) is evaluated and recorded in
    ``history_`` every that many passes and at the last; training is the same either way.
    ``rtol``: stop at the first recorded pass whose certified gap (the oracle's upper bound
    minus the dual) is ``<= rtol * primal``.  ``n_iter_oracle_eval``: SP-MP iterations of the
    primal's evaluation (default ``n_iter_oracle``; more gives a tighter upper bound).
    ``game``: ``"spmp"`` (M4N) or ``"exact"`` (AGM §3.2's exact game to a certified gap
    ``oracle_tol``, on chains and trees): GBCFW then minimises AGM's objective with a certified
    duality gap, which AdaGrad does not give.  ``step``: GBCFW's step, ``"fixed"`` (the paper's
    ``2n / (t + 2n)``) or ``"line_search"`` (the dual's maximiser on each segment; multiclass,
    chains and trees).  ``sampling``: ``"permutation"`` (the paper's) or ``"gap"`` (blocks drawn
    in proportion to their Frank-Wolfe gaps, :class:`structpred.solvers.driver.GapSampling`).
    ``averaging``: predict from the weighted average of GBCFW's iterates (the M4N authors' runs).
    ``solver``: ``"gbcfw"``, or ``"qp"``: the dual as one quadratic program
    (:class:`structpred.solvers.DualQP`, for small problems on spaces with a marginal polytope),
    solved in one pass; ``game`` then only evaluates the primal, and GBCFW's settings are unused.
    """

    def __init__(self, *, loss="zero_one", lam=2**-5, n_passes=50, n_iter_oracle=20,
                 warm_start_oracle=True, warm_start_mix=0.1, n_iter_oracle_eval=None, game="spmp",
                 oracle_tol=1e-9, step="fixed", sampling="permutation", rtol=None, solver="gbcfw", random_state=None,
                 verbose=False, n_labels=None, eval_every=1, averaging=False):
        self._set_init_params(locals())

    def _surrogate(self, space):
        return MaxMinMargin(space, n_iter=self.n_iter_oracle, warm_start=self.warm_start_oracle,
                            warm_mix=self.warm_start_mix, n_iter_eval=self.n_iter_oracle_eval, game=self.game,
                            tol=self.oracle_tol)

    def _rule(self, surrogate):
        if _solver(self.solver, "gbcfw") == "qp":
            return DualQP(surrogate)
        return GBCFW(surrogate, step=self.step, sampling=self.sampling, averaging=self.averaging)


class CRF(_LinearStructured):
    """Multinomial logistic regression (CRF) by SDCA; predictions by Bayes decoding
    with the task loss: ``argmin_y' sum_y p(y|x) L(y, y')``.  ``rtol``: stop at the first
    recorded pass whose duality gap is ``<= rtol * primal``."""

    def __init__(self, *, loss="zero_one", lam=2**-5, n_passes=50, rtol=None, random_state=None,
                 verbose=False, n_labels=None, eval_every=1):
        self._set_init_params(locals())

    def predict_proba(self, X):
        """Marginals ``E_{p(y|x)} phi(y)`` (class probabilities for multiclass)."""
        check_is_fitted(self, "coef_")
        return self.space_.marginals(self.scores(X))

    def _surrogate(self, space):
        return LogLoss(space)

    def _rule(self, surrogate):
        return SDCA(surrogate)


class AGM(_LinearStructured):
    """Adversarial graphical model (Fathony et al. 2018): the max-min game surrogate (the same
    as M4N's, eq. 10; AGM eq. 5) trained by AdaGrad on the primal; predictions by argmax of
    the potentials (``decode``).

    ``game``: how each game is solved: ``"spmp"`` (default) SP-MP with ``n_iter_oracle``
    iterations (per node for chains and trees), on every space with the max-min oracle;
    ``"exact"`` the paper's exact solver (AGM §3.2: Lagrangian dual with per-node closed forms,
    for chains and trees with the zero-one, absolute or squared node loss; on permutations the
    adversarial bipartite matching game's linear program, Fathony et al. ICML 2018), to a
    certified gap ``oracle_tol``.  SP-MP stays the default as it covers every space (multiclass,
    permutations, any node loss matrix) and keeps earlier results reproducible.
    ``step``: AdaGrad step (0.1 in the AGM reference code).  ``warm_start_oracle``: each game
    starts from the sample's last state (SP-MP's iterates, or the exact game's multipliers).
    ``coef_init``: every weight's starting value (-0.5 in the AGM reference code).  ``lam``
    may be 0 (the reference's grid includes it).
    """

    def __init__(self, *, loss="zero_one", lam=2**-5, n_passes=50, step=0.1, game="spmp", n_iter_oracle=10,
                 oracle_tol=1e-9, warm_start_oracle=True, coef_init=0.0, random_state=None, verbose=False,
                 n_labels=None, eval_every=1):
        self._set_init_params(locals())

    def _surrogate(self, space):
        return MaxMinMargin(space, n_iter=self.n_iter_oracle, warm_start=self.warm_start_oracle, game=self.game,
                            tol=self.oracle_tol)

    def _rule(self, surrogate):
        return AdaGrad(surrogate, step=self.step, coef_init=self.coef_init)
