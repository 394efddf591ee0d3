"""Which numba pass kernels serve which output space.

Solvers are generic Python drivers (ordering, objectives, history); the per-sample
hot loop is a numba kernel registered here per output-space type, composed from the
space's own jitted oracles (``loss_augmented``, ``spmp``...).  Numba cannot cache
kernels that receive other jitted functions as arguments or closures, so the
composition is done statically, one module per space.  A new space (Chain,
Permutation...) adds its kernel module and one entry below; the drivers in
``bcfw.py`` / ``gbcfw.py`` / ``sdca.py`` stay unchanged.
"""

from __future__ import annotations

from structpred.errors import StructpredError


def kernels_for(space):
    from structpred.outputs.multiclass import Multiclass

    if isinstance(space, Multiclass):
        from structpred.solvers import _multiclass_kernels

        return _multiclass_kernels
    raise StructpredError(f"no solver kernels registered for output space {type(space).__name__}")
