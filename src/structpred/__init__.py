"""structpred: structured-prediction oracles, surrogates and solvers.

One idea carries the library (DESIGN.md): an output space is an embedding plus a few
oracles; every method is a surrogate built from those oracles; every solver only talks
to a surrogate.
"""

__version__ = "0.1.0"
