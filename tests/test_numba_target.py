"""numba's target (``structpred/_numba_target.py``): the host's features plus ``-prefer-256-bit`` on
AVX-512 hosts, set before numba makes its target, and left alone when the user chose one."""

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import json, sys
first = sys.argv[1]
if first == "numba":
    import numba
import structpred
import numba
from numba import njit
from numba.core import config

@njit
def f(x):
    return x + 1.0

f(1.0)
from llvmlite import binding as ll
from structpred._numba_target import describe
codegen = numba.core.registry.cpu_target.target_context.codegen()
print(json.dumps({"features": config.CPU_FEATURES, "used": codegen._tm_features,
                  "avx512": bool(ll.get_host_cpu_features().get("avx512f")), "describe": describe()}))
"""


def probe(first="structpred", **env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_CPU", "STRUCTPRED_VECTOR"))}
    out = subprocess.run([sys.executable, "-c", PROBE, first], env={**clean, **env}, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("first", ["structpred", "numba"])
def test_avx512_hosts_compile_with_512_bit_vectors(first):
    got = probe(first)
    if not got["avx512"]:
        pytest.skip("no AVX-512 on this host: numba keeps its own target")
    assert got["features"].endswith(",-prefer-256-bit")
    assert got["used"] == got["features"]                      # what numba compiled with
    d = got["describe"]
    assert d["isa"] == "AVX-512" and d["widened"] and d["cpu"]


def test_the_user_or_native_keeps_numbas_own_target():
    assert probe(STRUCTPRED_VECTOR_WIDTH="native")["features"] is None
    got = probe(NUMBA_CPU_NAME="skylake-avx512", NUMBA_CPU_FEATURES="+64bit")
    assert got["features"] == "+64bit" and got["describe"]["llvm_cpu"] == "skylake-avx512"
    assert not got["describe"]["widened"]


def test_importing_structpred_does_not_import_numba():
    code = "import sys, structpred; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"
