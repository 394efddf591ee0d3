"""The target numba compiles the kernels for: 512-bit vectors wherever the CPU has AVX-512.

numba compiles for the host CPU (``llvmlite.binding.get_host_cpu_name()``) with the host's
features, and LLVM tunes every Intel AVX-512 core it knows (``skylake-avx512``, ``cascadelake``,
``icelake-server``, ``sapphirerapids``, ...) and the ``x86-64-v4`` level with ``prefer-256-bit``:
its loop vectoriser then takes 4 doubles a vector (``ymm``) where the kernels' loops of
:func:`~structpred.outputs._fastmath.fexp` and :func:`~structpred.outputs._fastmath.flog` (and
the batched kernels' lane loops) could take 8 (``zmm``).  AMD's ``znver4`` carries no such tuning.
Both loops vectorise on every AVX-512 target; only the width differs.  On the development
machine (AMD EPYC, Zen 4) the same ``fexp`` loop compiled for ``skylake-avx512`` took 1.64 ns an
exp (``ymm``) against 1.12 ns for ``znver4`` (``zmm``), and 1.22 ns for ``skylake-avx512``
without ``prefer-256-bit``; the Intel Xeon that the issue measured priced it at 1.55 ns, about the cost of
a scalar exp there.  (For ``haswell``, AVX2 only, ``fexp`` still vectorises, but the float-to-int64
conversion of its exponent has no vector instruction below AVX-512: 2.6 ns.)

:func:`install` therefore compiles with the host's features plus ``-prefer-256-bit`` when the host
has AVX-512 (a tuning flag: the instructions, and so every result's bits, stay those of the
host; vectorised loops compute each element as the scalar loop does, since numba allows LLVM no
reassociation).  It leaves numba alone when the user chose a target (``NUMBA_CPU_NAME`` or
``NUMBA_CPU_FEATURES``), when AVX-512 is absent or disabled (``NUMBA_ENABLE_AVX=0``), and when
``STRUCTPRED_VECTOR_WIDTH=native`` (LLVM's own choice: e.g. on the Skylake-SP Xeons whose clock
drops under 512-bit instructions).  numba reads its target once, when it compiles (or loads from
its cache) the first function of the process, so :func:`install` must run before that:
``structpred/__init__.py`` calls it, and it configures numba when numba's configuration is first
imported (an import hook, so that importing structpred does not import numba).  A numba that
already made its target keeps it (:func:`describe` says which).  The changed feature string
changes numba's cache keys: the first run after this change recompiles every kernel once.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import platform
import sys

#: ``native`` leaves LLVM's preferred vector width alone
ENV = "STRUCTPRED_VECTOR_WIDTH"
#: the tuning flag that widens Intel's AVX-512 vectors back to 512 bits
WIDEN = "-prefer-256-bit"


def _apply(config) -> None:
    """Set ``config.CPU_FEATURES`` (numba's configuration module) to the host's features plus
    :data:`WIDEN`, unless the user chose a target or the host lacks AVX-512."""
    if os.environ.get(ENV, "").strip().lower() == "native":
        return
    if config.CPU_NAME is not None or config.CPU_FEATURES is not None or not config.ENABLE_AVX:
        return
    try:
        from llvmlite import binding as ll

        features = ll.get_host_cpu_features()
    except Exception:           # no feature map on this platform: numba's own default stands
        return
    if features.get("avx512f"):
        config.CPU_FEATURES = features.flatten() + "," + WIDEN


class _AfterNumbaConfig(importlib.abc.MetaPathFinder):
    """Runs :func:`_apply` on ``numba.core.config`` right after it is first imported (before numba
    can make its target), then leaves ``sys.meta_path``."""

    def find_spec(self, name, path, target=None):
        if name != "numba.core.config":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _apply(module)

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    """Configure numba's target as the module docstring says: now if numba's configuration is
    imported and numba has made no target yet, else when numba is first imported."""
    if os.environ.get(ENV, "").strip().lower() == "native":
        return
    config = sys.modules.get("numba.core.config")
    if config is None:
        if not any(isinstance(f, _AfterNumbaConfig) for f in sys.meta_path):
            sys.meta_path.insert(0, _AfterNumbaConfig())
        return
    registry = sys.modules.get("numba.core.registry")
    if registry is not None and "_toplevel_target_context" in vars(registry.cpu_target):
        return                  # too late: numba compiled with its target already
    _apply(config)


def cpu_model() -> str:
    """The CPU's marketing name (``/proc/cpuinfo``; else ``platform.processor()``)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe() -> dict:
    """What numba compiles for in this process: ``cpu`` (the CPU's name), ``llvm_cpu`` (LLVM's
    name of it, or the user's ``NUMBA_CPU_NAME``), ``isa`` (the widest vector extension among the
    features numba uses: ``AVX-512``, ``AVX2``, ``AVX``, ``SSE4.2``, ``SSE2``), ``widened``
    (whether :data:`WIDEN` is among them) and ``features`` (the string numba passes LLVM;
    ``"host"``: the host's own).  The vector width a loop gets is LLVM's choice: see the
    assembly (``bench/_bound.vector_width``)."""
    from llvmlite import binding as ll
    from numba.core import config

    name = config.CPU_NAME or ll.get_host_cpu_name()
    feats = config.CPU_FEATURES
    registry = sys.modules.get("numba.core.registry")
    if registry is not None and "_toplevel_target_context" in vars(registry.cpu_target):
        feats = registry.cpu_target.target_context.codegen()._tm_features or None   # what it compiles with
    if feats is None:
        on = {k for k, v in ll.get_host_cpu_features().items() if v}
    else:
        on = {f[1:] for f in feats.split(",") if f.startswith("+")}
    isa = next((label for key, label in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"),
                                         ("sse4.2", "SSE4.2"), ("sse2", "SSE2")) if key in on),
               f"{name}'s defaults")
    return {"cpu": cpu_model(), "llvm_cpu": name, "isa": isa, "widened": WIDEN in (feats or ""),
            "features": "host" if feats is None else feats}
