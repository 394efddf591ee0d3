"""A structural SVM trained on a smoothed hinge (Casimir, Pillutla et al. 2018), scikit-learn style."""

from __future__ import annotations

from structpred.errors import StructpredError
from structpred.estimators.linear import _LinearStructured
from structpred.solvers import SGD, SVRG, CasimirSVRG
from structpred.surrogates import EntropySmoothedHinge, Hinge, TopKSmoothedHinge

SOLVERS = ("sgd", "svrg", "casimir_svrg")
SMOOTHINGS = ("topk", "entropy")


class SmoothSSVM(_LinearStructured):
    """Structural SVM ``min_W (1/n) sum_i max_y' [L(y_i, y') + <v_i, phi(y') - phi(y_i)>] +
    lam/2 ||W||^2`` by a primal incremental method on the smoothed hinge (Casimir §4-5).

    ``solver``: ``"sgd"`` (subgradients of the hinge itself, step ``eta0 / (1 + t / t0)``,
    weighted averaging), ``"svrg"`` (constant ``lr`` and smoothing ``mu``) or ``"casimir_svrg"``
    (Casimir-SVRG: ``L`` given: "const", step ``1 / (L + lam + kappa)``; ``L=None``: "adapt",
    step ``lr``, ``kappa = lam``, with ``mu_schedule`` ``"expo"`` or ``"const"``, and where each
    epoch starts: ``prox_start`` in ``prox-centre``, ``extrapolation``, ``prev-iterate``; named so
    as not to clash with scikit-learn's boolean ``warm_start``).
    ``smoothing``: ``"topk"`` (l2 over the ``K`` best loss-augmented outputs) or
    ``"entropy"``.  Defaults: the reference code's Casimir-SVRG-adapt on NER.
    ``history_`` records the hinge objective and oracle calls per pass.
    """

    def __init__(self, *, loss="zero_one", lam=2**-5, solver="casimir_svrg", n_passes=50,
                 smoothing="topk", mu=2.0, K=5, lr=0.02, L=None, mu_schedule="expo",
                 prox_start="extrapolation", eta0=0.02, t0=150000.0, random_state=None,
                 verbose=False, n_labels=None, eval_every=1):
        self._set_init_params(locals())

    def _surrogate(self, space):
        if self.solver not in SOLVERS:
            raise StructpredError(f"solver must be one of {', '.join(SOLVERS)}, got {self.solver!r}")
        if self.smoothing not in SMOOTHINGS:
            raise StructpredError(f"smoothing must be one of {', '.join(SMOOTHINGS)}, got {self.smoothing!r}")
        if self.solver == "sgd":
            return Hinge(space)
        if self.smoothing == "topk":
            return TopKSmoothedHinge(space, mu=self.mu, K=self.K)
        return EntropySmoothedHinge(space, mu=self.mu)

    def _rule(self, surrogate):
        if self.solver == "sgd":
            return SGD(surrogate, eta0=self.eta0, t0=self.t0)
        if self.solver == "svrg":
            return SVRG(surrogate, lr=self.lr, mu=self.mu)
        return CasimirSVRG(surrogate, mu0=self.mu, L=self.L, lr=self.lr, mu_schedule=self.mu_schedule,
                           warm_start=self.prox_start)
