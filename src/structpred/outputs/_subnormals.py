"""Subnormal numbers flushed to zero inside a compiled kernel (x86's MXCSR ``FTZ`` and ``DAZ``
bits), the caller's floating-point state restored on the way out.

On x86 an operation whose result underflows (is subnormal, or a nonzero product rounds to 0), or
that reads a subnormal operand, is finished by a microcode assist unless ``FTZ`` (results) and
``DAZ`` (operands) are set: on Intel cores about 100-150 cycles each, and a vector instruction
with one such lane takes the whole assist.  SP-MP's scaled products underflow all the time:
the messages and the scaled potentials of its later iterations span hundreds of nats, so their
products fall below 2^-1022.  On ``bench/bench_chain.py``'s cold 80-iteration call (26 labels,
8 positions, N(0, 1) scores) about 153,000 of the 1.33 million products of its three product
loops underflow, in about 56,000 of its 204,000 eight-lane vector products, and about 171,000
scalar operations more (exps of arguments far below the largest, and their scalings).

The flushed values cannot count: a scaled sum that SP-MP keeps is above ``_TINY = 1e-200``
(else the entry is recomputed in the log domain), and a term below 2^-1022 is far below half
of its last bit; a pairwise marginal made of flushed factors would be below 1e-48, where the
chain's marginals are 0 on every other path (``_CUT``).  Each kernel that flushes is tested to
give the bits of its unflushed run on the bench's instances (``tests/test_subnormals.py``).

:func:`flushing` returns the caller's MXCSR and sets ``FTZ`` and ``DAZ``; :func:`restore` puts
the caller's value back.  Each is a memory barrier for the compiler (LLVM's default
floating-point model does not order arithmetic with MXCSR writes): a kernel passes the values
on either side of them through arrays, and arithmetic on values held in registers across them
must be such that flushing cannot change it (log-domain values, for instance).  On other architectures both are no-ops (AArch64's ``FZ`` bit is left
alone: the kernels there run IEEE subnormals, as before).
"""

from __future__ import annotations

import platform

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

#: MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6)
FTZ_DAZ = 0x8040
X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")

_I8P = ir.IntType(8).as_pointer()


def _mxcsr_call(builder, name, slot):
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [_I8P]), name)
    builder.call(fn, [builder.bitcast(slot, _I8P)])


@intrinsic
def _get_mxcsr(typingctx):
    """The MXCSR register (0 off x86)."""
    def codegen(context, builder, signature, args):
        if not X86:
            return ir.Constant(ir.IntType(32), 0)
        slot = cgutils.alloca_once(builder, ir.IntType(32))
        _mxcsr_call(builder, "llvm.x86.sse.stmxcsr", slot)
        return builder.load(slot)
    return types.uint32(), codegen


def _memory_barrier(builder):
    """An empty ``asm volatile("" ::: "memory")``: no load or store moves across it, so the
    arrays a kernel writes before a change of MXCSR are computed under the old mode, and those
    it reads after it are read (and computed on) under the new one."""
    builder.asm(ir.FunctionType(ir.VoidType(), []), "", "~{memory}", [], side_effect=True)


@intrinsic
def _set_mxcsr(typingctx, value):
    """Load ``value`` into the MXCSR register between two memory barriers (nothing off x86)."""
    def codegen(context, builder, signature, args):
        if X86:
            slot = cgutils.alloca_once_value(builder, args[0])
            _memory_barrier(builder)
            _mxcsr_call(builder, "llvm.x86.sse.ldmxcsr", slot)
            _memory_barrier(builder)
        return context.get_dummy_value()
    return types.void(types.uint32), codegen


@njit(cache=True, inline="always")
def flushing(on):
    """Set ``FTZ`` and ``DAZ`` if ``on``; return the caller's MXCSR for :func:`restore`."""
    saved = _get_mxcsr()
    if on:
        _set_mxcsr(np.uint32(saved | FTZ_DAZ))
    return saved


@njit(cache=True, inline="always")
def restore(saved, on):
    """Put back the MXCSR that :func:`flushing` returned (if it set one)."""
    if on:
        _set_mxcsr(saved)


@njit(cache=True)
def mxcsr():
    """The calling thread's MXCSR as compiled code sees it (for tests; 0 off x86)."""
    return _get_mxcsr()
