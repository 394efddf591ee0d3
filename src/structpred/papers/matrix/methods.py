"""The matrix's seven methods as one estimator factory, and the reason a cell cannot exist.

A method is a surrogate and a step rule (:mod:`structpred.estimators`), so a cell (method, task)
exists when the task's output space has the capabilities the method's surrogate requires
(:func:`structpred.outputs.require`): M3N and SGD the loss-augmented oracle (structured hinge,
BCFW or SGD), the CRF marginals (log-loss, SDCA), M4N and AGM the max-min oracle (the max-min
margin, GBCFW or AdaGrad; AGM's game exact where the space solves it, AGM §3.2, else by SP-MP),
Casimir-SVRG the top-K oracle (l2 smoothing over the ``K`` best) or else marginals (entropy
smoothing, Casimir §4.1), QS loss-trick decoding (QS eq. 2).
"""

from __future__ import annotations

from structpred.errors import ConfigError, StructpredError
from structpred.estimators import AGM, CRF, M3N, M4N, QS, SmoothSSVM
from structpred.outputs.base import ExactMaxMin, TopK, WeightedDecoding, has

#: the matrix's rows, in the report's order
METHODS = ("M3N", "CRF", "M4N", "AGM", "QS", "SGD", "Casimir-SVRG")


def smoothing_of(space) -> str:
    """Casimir's smoothing on ``space``: ``"topk"`` where it has the top-K oracle, else ``"entropy"``."""
    return "topk" if has(space, TopK) else "entropy"


def game_of(space) -> str:
    """AGM's game on ``space``: ``"exact"`` where the space solves it exactly, else ``"spmp"``."""
    return "exact" if has(space, ExactMaxMin) else "spmp"


def estimator(method: str, space, lam: float, budget: dict, seed: int):
    """The estimator of ``method`` on ``space`` at regularisation ``lam`` with the method family's
    ``budget`` (its constructor's keyword arguments from the config: passes, oracle iterations,
    step sizes, QS's kernel)."""
    if method not in METHODS:
        raise ConfigError(f"unknown matrix method {method!r}; known: {', '.join(METHODS)}")
    budget = dict(budget)
    try:
        if method == "QS":
            return QS(loss=space, lam=lam, **budget)
        common = {"loss": space, "lam": lam, "random_state": seed, **budget}
        if method == "SGD":
            return SmoothSSVM(solver="sgd", **common)
        if method == "Casimir-SVRG":
            return SmoothSSVM(solver="casimir_svrg", smoothing=smoothing_of(space), **common)
        if method == "AGM":
            return AGM(game=game_of(space), **common)
        return {"M3N": M3N, "CRF": CRF, "M4N": M4N}[method](**common)
    except TypeError as err:
        raise ConfigError(f"matrix budget of {method}: {err}") from None


def why_impossible(method: str, space) -> str | None:
    """``None`` where the cell exists; else the reason, from the space's missing capability."""
    if method == "QS":
        return None if has(space, WeightedDecoding) else (
            f"QS needs loss-trick decoding (QS eq. 2), which {space!r} does not provide")
    est = estimator(method, space, 1.0, {}, 0)
    try:
        est._surrogate(space)
    except StructpredError as err:
        return str(err)
    return None
