"""What every structpred estimator's ``fit`` shares: it either completes or leaves the estimator
as it was, and it records the feature names of a DataFrame ``X`` as scikit-learn's estimators do.

A subclass implements ``_fit(X, y, **kwargs)``, which sets the learned attributes (names ending
in ``_``).  :meth:`AtomicFit.fit` runs it on a shallow copy (the same parameter objects, so a
``np.random.Generator`` passed as ``random_state`` advances as before) and, only when it returns,
replaces the estimator's learned attributes by the copy's: a fit that raises (bad input, a bad
parameter) leaves the previous model, its ``n_features_in_`` and its labels untouched.
``feature_names_in_`` is set from a DataFrame's string columns (and removed otherwise); predicting
on a DataFrame whose columns differ in names or order is one clear error
(:func:`check_feature_names`).
"""

from __future__ import annotations

import copy

from sklearn.utils.validation import _check_feature_names


def _learned(estimator) -> list[str]:
    return [k for k in vars(estimator) if k.endswith("_") and not k.startswith("_")]


class AtomicFit:
    """Mixin: ``fit`` = ``_fit`` on a copy, committed only when it succeeds."""

    def fit(self, X, y=None, **kwargs):
        work = copy.copy(self)
        for name in _learned(work):
            delattr(work, name)
        work._fit(X, y, **kwargs)
        _check_feature_names(work, X, reset=True)
        for name in _learned(self):
            delattr(self, name)
        for name in _learned(work):
            setattr(self, name, getattr(work, name))
        return self

    def _fit(self, X, y, **kwargs):
        raise NotImplementedError


def check_feature_names(estimator, X) -> None:
    """scikit-learn's check of ``X``'s column names against those seen in ``fit`` (an error when
    they differ or are reordered; a warning when only one of the two has names)."""
    _check_feature_names(estimator, X, reset=False)
