"""structpred: structured-prediction oracles, surrogates and solvers.

One idea carries the library (DESIGN.md): an output space is an embedding plus a few
oracles; every method is a surrogate built from those oracles; every solver only talks
to a surrogate.
"""

from structpred._numba_target import install as _install_numba_target

__version__ = "0.1.0"

_install_numba_target()      # 512-bit vectors on AVX-512 hosts, before numba makes its target
