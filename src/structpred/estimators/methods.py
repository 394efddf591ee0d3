"""The papers' method names -> the library's estimators: the one place that maps them.

The M4N paper's M3N and the AGM paper's SSVM are both :class:`M3N` (BCFW on the structured
hinge); AGM-SPMP is :class:`AGM` with its game solved by SP-MP instead of exactly.
"""

from __future__ import annotations

from structpred.errors import ConfigError
from structpred.estimators.linear import AGM, CRF, M3N, M4N

#: method name -> (estimator class, parameters the name fixes)
METHODS = {"M3N": (M3N, {}), "SSVM": (M3N, {}), "CRF": (CRF, {}), "M4N": (M4N, {}), "AGM": (AGM, {}),
           "AGM-SPMP": (AGM, {"game": "spmp"})}


def make_estimator(method: str, **params):
    """The estimator the paper's ``method`` names, with ``params`` (those the name fixes win)."""
    if method not in METHODS:
        raise ConfigError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    cls, fixed = METHODS[method]
    return cls(**{**params, **fixed})
