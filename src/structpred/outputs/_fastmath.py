"""``exp`` for compiled kernels: inlined, within 1 ulp of the C library's.

numba calls the C library's ``exp`` as an opaque function: about 3 ns a call here, and a loop
that calls it is neither inlined nor vectorised.  :func:`fexp` is plain arithmetic that LLVM
inlines into the caller's loop: Cody-Waite range reduction and a polynomial on the reduced
argument, with the power of two written straight into the exponent bits.  (A ``log`` written
the same way, fdlibm's series, was slower than the C library's table-driven one in the SP-MP
kernels, so they keep ``np.log``.)

``exp(x) = 2^k exp(r)``, ``k = round(x / ln 2)``, ``r = x - k ln 2`` (``ln 2`` in two parts),
``|r| <= ln(2) / 2``, ``exp(r)`` by its Taylor polynomial of degree 13 (remainder below
``2^-57``) in Estrin's scheme.  ``x < -745.2`` gives 0 and ``x > 709.78`` gives ``inf``, as the C library; NaN
gives NaN.

``tests/test_fastmath.py`` checks it against numpy's over its whole range (at most 1 ulp apart,
subnormal results included).

numba's on-disk cache keys a kernel on its own file only: after editing this module, delete the
cached kernels that inline it (``find src -name '*.nb[ic]' -delete``), or they keep the old code.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_INV_LN2 = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01     # 32 significant bits: k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_EXP_LO = -745.2                         # below: exp underflows to 0
_EXP_HI = 709.782712893384               # above: exp overflows to inf


@intrinsic
def _bits_float(typingctx, b):
    """The float64 whose IEEE-754 bits are the int64 ``b``."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@njit(cache=True, inline="always")
def _exp_reduced(r):
    """``exp(r)`` for ``|r| <= ln(2) / 2``: its Taylor polynomial of degree 13, the terms in pairs
    over powers of ``r^2`` and ``r^4`` (Estrin's scheme: a dependency chain of about five steps
    instead of Horner's thirteen, so consecutive calls overlap in the pipeline), ``1 + (r +
    rest)`` added last so that only the final sum rounds at the result's scale."""
    r2 = r * r
    r4 = r2 * r2
    q1 = 0.5 + r * (1.0 / 6.0)
    q2 = 1.0 / 24.0 + r * (1.0 / 120.0)
    q3 = 1.0 / 720.0 + r * (1.0 / 5040.0)
    q4 = 1.0 / 40320.0 + r * (1.0 / 362880.0)
    q5 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0)
    q6 = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0)
    rest = r2 * q1 + r4 * ((q2 + r2 * q3) + r4 * ((q4 + r2 * q5) + r4 * q6))
    return 1.0 + (r + rest)


@njit(cache=True, inline="always")
def fexp(x):
    """``exp(x)`` (see the module's docstring)."""
    if not (_EXP_LO <= x <= _EXP_HI):
        if x < _EXP_LO:
            return 0.0
        return x + np.inf                 # inf, or NaN for NaN
    k = np.floor(x * _INV_LN2 + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = _exp_reduced(r)
    ki = np.int64(k)
    if ki < -1021:                        # subnormal result: scale in two steps, rounding once
        return p * _bits_float((ki + 1021 + 1023) << 52) * 2.0 ** -1021
    if ki > 1023:
        return p * 2.0 * _bits_float((ki - 1 + 1023) << 52)
    return p * _bits_float((ki + 1023) << 52)
