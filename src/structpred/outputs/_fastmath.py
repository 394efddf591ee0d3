"""``exp`` and ``log`` for compiled kernels: inlined, within 1 ulp of the C library's; the kernels'
shared log-sum-exp.

numba calls the C library's ``exp`` and ``log`` as opaque functions: about 3-4 ns a call here,
and a loop that calls them is neither inlined nor vectorised.  :func:`fexp` and :func:`flog` are
plain arithmetic that LLVM inlines into the caller's loop and, in a loop with no other branch,
vectorises (8 lanes with AVX-512).  :func:`fexp`: Cody-Waite range reduction and a polynomial on
the reduced argument, with the power of two written straight into the exponent bits.
:func:`flog`: fdlibm's ``log`` without its special cases (positive normal arguments only).
Scalar, the C library's table-driven ``log`` is as fast; in a vectorised loop of 26 entries
:func:`flog` took 1.5 ns an entry against its 3.3.  ``flog`` divides: a kernel that wants its
loop vectorised compiles with ``error_model="numpy"`` (numba's default checks every float
division for a zero divisor, a branch that stops vectorisation).

``exp(x) = 2^k exp(r)``, ``k = round(x / ln 2)``, ``r = x - k ln 2`` (``ln 2`` in two parts),
``|r| <= ln(2) / 2``, ``exp(r)`` by its Taylor polynomial of degree 13 (remainder below
``2^-57``) in Estrin's scheme.  ``x < -745.2`` gives 0 and ``x > 709.78`` gives ``inf``, as the C library; NaN
gives NaN.

``tests/test_fastmath.py`` checks it against numpy's over its whole range (at most 1 ulp apart,
subnormal results included).

:func:`log_sum_exp` and :func:`log_add_exp` are the log-sum-exp of the kernels that take the C
library's ``exp`` and ``log`` (multiclass, permutations): there :func:`fexp` would move results by an
ulp.  The chain and tree kernels' pruned log-sum-exp (terms ``_CUT`` nats below the max skipped) is
``_chain_kernels._lse``.

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


@intrinsic
def _float_bits(typingctx, x):
    """The IEEE-754 bits of the float64 ``x``, as an int64."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


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


#: fdlibm's ``log`` polynomial: ``log(1+f) = 2s + Lg1 s^3 + ... + Lg7 s^15``, ``s = f / (2+f)``
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
_SQRT_HALF_BITS = 0x3FE6A09E00000000     # the high bits of sqrt(2) / 2
_MANTISSA = 0x000FFFFFFFFFFFFF


@njit(cache=True, inline="always")
def flog(x):
    """``log(x)`` for a positive normal ``x`` (0, subnormals, inf and NaN give garbage: a caller
    that may pass them must not use the result): ``x = 2^k (1 + f)``, ``sqrt(2)/2 <= 1 + f <
    sqrt(2)``, ``log(x) = k ln 2 + log(1 + f)`` with fdlibm's ``e_log.c`` evaluation of ``log(1 +
    f)`` (error below 1 ulp), branch-free so that a loop over it vectorises."""
    bits = _float_bits(x) + (0x3FF0000000000000 - _SQRT_HALF_BITS)
    k = np.float64((bits >> 52) - 1023)
    f = _bits_float((bits & _MANTISSA) + _SQRT_HALF_BITS) - 1.0
    hfsq = 0.5 * f * f
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    r = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7))) + w * (_LG2 + w * (_LG4 + w * _LG6))
    return k * _LN2_HI - ((hfsq - (s * (hfsq + r) + k * _LN2_LO)) - f)


@njit(cache=True, inline="always")
def log_sum_exp(a, b):
    """``log sum_j exp(a[j] + b[j]) = m + log sum_j exp(a[j] + b[j] - m)``, ``m = max_j (a[j] + b[j])``
    (the first of equal maxima; ``-inf`` for no entries), the terms summed in order, by the C
    library's ``exp`` and ``log``; ``a`` may be strided (a matrix column)."""
    n = a.shape[0]
    m = -np.inf
    for j in range(n):
        x = a[j] + b[j]
        if x > m:
            m = x
    s = 0.0
    for j in range(n):
        s += np.exp(a[j] + b[j] - m)
    return m + np.log(s)


@njit(cache=True, inline="always")
def log_add_exp(x, y):
    """``log(exp(x) + exp(y)) = m + log(exp(x - m) + exp(y - m))``, ``m = max(y, x)``, by the C
    library's ``exp`` and ``log``."""
    m = max(y, x)
    return m + np.log(np.exp(x - m) + np.exp(y - m))
