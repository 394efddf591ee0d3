"""Which pass kernels serve which output space.

Solvers are generic Python drivers (ordering, objectives, history); the per-sample
hot loop is either a numba kernel registered here per output-space type, composed from
the space's own jitted oracles (``loss_augmented``, ``spmp``...), or the generic
Python-level loop of :mod:`structpred.solvers._generic_kernels`, which calls the
space's public oracles one sample at a time (used by :class:`Permutation`, whose
Hungarian step runs in scipy, and by any space that has no numba kernels).  Numba cannot
cache kernels that receive other jitted functions as arguments or closures, so the
numba composition is done statically, one module per space.  The drivers in
``bcfw.py`` / ``gbcfw.py`` / ``sdca.py`` stay unchanged.
"""

from __future__ import annotations

from structpred.errors import StructpredError
from structpred.outputs.base import OutputSpace


def kernels_for(space, fmap):
    """Pass kernels for ``space`` with the joint feature map ``fmap``."""
    from structpred.features.joint import LinearJoint
    from structpred.outputs.multiclass import Multiclass

    if isinstance(space, Multiclass) and isinstance(fmap, LinearJoint):
        from structpred.solvers import _multiclass_kernels

        return _multiclass_kernels
    if isinstance(space, OutputSpace):
        from structpred.solvers._generic_kernels import GenericKernels

        return GenericKernels(space, fmap)
    raise StructpredError(f"no solver kernels for {type(space).__name__}: not an OutputSpace")
