"""A job's CPU seconds: user and system time of its process and of every process it started (the
per-lambda worker processes of a parallel grid), live or ended.

The archive's ``seconds`` rows are wall time around each fit, so a job run beside others on a busy
machine records more than it costs (agm_srl_full's AGM refit: 580 s a pass recorded beside 1-3
other jobs, 390 CPU-s measured alone).  Each job's numerics record therefore also keeps its CPU
seconds (:func:`structpred.runs.numerics.write_record`), and ``structpred runs cost`` and the
makespan read them where present.  A job that resumed a stopped run keeps only its last process's
CPU: its record says so (``cpu_partial``), and the costs keep its wall seconds.
"""

from __future__ import annotations

import psutil


def process_tree_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and all its descendants: a live process by its
    own times, an ended one through its parent's ``children_*`` times once it has been waited for
    (so none is counted twice)."""
    me = psutil.Process()
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):   # ended meanwhile: its parent counts it once waited for
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total
