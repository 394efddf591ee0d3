"""The compiled oracle protocol: what a step rule's numba pass asks of one sample.

A space with compiled oracles hands the solvers a *bundle*: a namedtuple of its arrays (the
joint map's inputs, the labels, the loss) whose class names the space.  Each function below is
a stub that the space implements for its bundle class with :func:`numba.extending.overload`
(:func:`implements`), so a pass in :mod:`structpred.solvers._compiled_passes` is written once
and compiled, and cached on disk, once per bundle class: the way scikit-learn's ``sag_fast``
takes a loss object.  ``b`` is the bundle, ``i`` a sample, ``W`` the weights, ``v`` a score
buffer.  A space implements the functions of the passes it offers (its oracles object's
``passes``); calling one it lacks fails at compile time, naming the function.

Dual blocks (BCFW, GBCFW, SDCA): sample ``i``'s dual block ``mu_i`` is :data:`block` of the
pass's dual array: a row of a dense ``(n, k)`` array (a point of the simplex over the space's
corners ``phi(c) = e_c``) or, for ragged spaces (a chain's marginals), a slice of one flat array.
Primal passes (SGD, SVRG): the surrogate's oracle is part of the bundle.
"""

from __future__ import annotations

from numba import types
from numba.extending import overload


def _stub(name):
    def stub(*args):
        raise NotImplementedError(f"{name} is a compiled oracle: call it from numba code")
    stub.__name__ = stub.__qualname__ = name
    return stub


# --- the joint map -------------------------------------------------------------------------
#: ``scores(b, i, W, v)``: ``v = Psi_i^T W``
scores = _stub("scores")
#: ``add(b, i, W, c)``: ``W += Psi_i c``
add = _stub("add")

# --- dual blocks -----------------------------------------------------------------------------
#: ``block(b, mu, i)``: sample ``i``'s dual block, a view of the dual array ``mu``
block = _stub("block")
#: ``block_size(b) -> int``: the longest dual block (the passes' buffers)
block_size = _stub("block_size")
#: ``n_blocks(b) -> int``: the number of samples ``n``
n_blocks = _stub("n_blocks")
#: ``loss_augmented(b, i, v) -> s``: ``argmax_c L(y_i, c) + v_c`` (a corner's index, or a chain's labels)
loss_augmented = _stub("loss_augmented")
#: ``corner(b, i, v, s, mu_i) -> (g, dl, denom)``: the Frank-Wolfe gap ``g = <v, phi(s) - mu_i> +
#: dl`` times ``n``, ``dl = L(y_i, s) - L(y_i, mu_i)`` and ``denom = ||Psi_i (phi(s) - mu_i)||^2``
corner = _stub("corner")
#: ``toward(b, i, W, mu_i, s, gamma, scale, coef)``: ``W += Psi_i gamma scale (mu_i - phi(s))``,
#: ``mu_i <- (1 - gamma) mu_i + gamma phi(s)`` (``coef``: work of length ``k``)
toward = _stub("toward")
#: ``corner_values(b, i, v, out)``: ``out_c = L(y_i, c) + v_c`` for every corner ``c``
corner_values = _stub("corner_values")
#: ``corner_loss(b, i, c) -> L(y_i, c)``
corner_loss = _stub("corner_loss")
#: ``pair_norm2(b, i) -> ||Psi_i (e_s - e_a)||^2`` (the same for every pair of corners)
pair_norm2 = _stub("pair_norm2")
#: ``pair_scores(b, i, v, s, a, step)``: the scores after ``W += Psi_i step (e_a - e_s)``
pair_scores = _stub("pair_scores")
#: ``norm2(b, i, d) -> ||Psi_i d||^2``
norm2 = _stub("norm2")
#: ``maxmin(b, game, i, v, mubar) -> lo``: the max-min oracle at ``v`` (``game``: its settings,
#: warm state and work); ``mubar`` receives its answer, ``game.gaps[i]`` its duality gap, and it
#: returns its value (a lower bound on the game's)
maxmin = _stub("maxmin")
#: ``lines(b, i, m, out, starts) -> nb``: the min-loss lines of block ``i`` against ``m`` (see
#: ``MinLossLines``) in ``nb`` groups, group ``g`` in ``out[starts[g]:starts[g + 1]]``, whose
#: minima sum to ``min_loss(m)`` (one group, ``(A m)_c`` per corner ``c``, on the simplex)
lines = _stub("lines")
#: ``entropy_block(b, i, v, mu_i, scale, out, work)``: ``out = argmax_m H(m) + <v, m - mu_i> -
#: scale/2 ||Psi_i (m - mu_i)||^2`` over the simplex (SDCA's exact block step; ``work``: length ``k``)
entropy_block = _stub("entropy_block")

# --- primal passes ---------------------------------------------------------------------------
#: ``grad_size(b) -> int``: the longest per-sample gradient ``g_i`` (in ``Psi_i`` coordinates)
grad_size = _stub("grad_size")
#: ``workspace(b)``: the oracle's work buffers (a tuple, passed back to :data:`grad`)
workspace = _stub("workspace")
#: ``grad(b, i, W, g, ws) -> d``: the surrogate's gradient at ``Psi_i^T W`` into ``g[:d]``
#: (``-1``: non-finite scores)
grad = _stub("grad")
#: ``grad_kept(b, i, W, g, ws, answers) -> d``: :data:`grad`, keeping the oracle's answers
grad_kept = _stub("grad_kept")
#: ``kept_grad(b, i, answers, g) -> d``: the gradient again from the kept answers
kept_grad = _stub("kept_grad")


def implements(stub, bundle_class):
    """Register ``impl`` (the decorated function) as ``stub`` for bundles of ``bundle_class``."""
    def register(impl):
        @overload(stub, strict=False)
        def _typed(b, *args):
            if isinstance(b, types.BaseNamedTuple) and b.instance_class is bundle_class:
                return impl
        return impl
    return register
