"""A surrogate loss as an object: its parameters, per-sample state, value and gradient.

``S(v, y)`` is a convex function of the score ``v`` built from the oracles of an output
space.  A surrogate states the capabilities it needs (``requires``); solvers only call

``value_grad(V, y)``     batch: ``(values (n,), dS/dv per sample)``, the state read, not changed;
``sample_grad(i, v, y)`` one sample of a training pass: ``dS/dv``, updating the sample's
                         state (warm starts of the max-min oracle);
``init_state(n)``        allocates that state for ``n`` samples;
``predict(V)``           the decoding that goes with the surrogate;
``pass_oracle()``        the space oracle behind its sample gradients and values, for the
                         compiled passes on a space's oracles (``OutputSpace.compiled_oracles``), or ``None``.

Parameters that change during training (a smoothing ``mu`` set per epoch) are plain
attributes the step rule may set.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from structpred.outputs.base import require
from structpred.outputs.batch import is_ragged


class Surrogate(ABC):
    """Base class: holds the output space and checks its capabilities."""

    #: capabilities (classes of :mod:`structpred.outputs.base`) the surrogate uses
    requires: tuple = ()

    def __init__(self, space):
        for capability in self.requires:
            require(space, capability, type(self).__name__)
        self.space = space

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.space!r})"

    def init_state(self, n: int) -> None:
        """Allocate the per-sample state of ``n`` training samples (none by default)."""

    def batch(self, v, y):
        """``(scores, labels)`` as batches: a ragged list or an at-least-2-d array, labels checked."""
        if is_ragged(v):
            return v, self.space.check_labels(list(y))
        return np.atleast_2d(np.asarray(v, dtype=np.float64)), np.atleast_1d(self.space.check_labels(y))

    @abstractmethod
    def value_grad(self, v, y): ...

    @abstractmethod
    def sample_grad(self, i: int, v, y):
        """``dS/dv`` of training sample ``i`` at score ``v`` (may update the sample's state)."""

    def predict(self, V):
        """Outputs for scores ``V``: MAP decoding (``argmax_y <phi(y), v>``) by default."""
        return self.space.decode(V)

    def pass_oracle(self):
        """``(name, parameters)`` of the space oracle that gives this surrogate's sample gradients
        and values, so that a space's compiled passes may call it in place of ``sample_grad`` /
        ``value_grad`` (a surrogate that names one predicts by MAP decoding); ``None``: the
        passes go through the surrogate's methods."""
        return None
